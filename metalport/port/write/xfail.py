"""Remove an op's entries from `common_mps.py`'s xfail and skip lists, leaving every other byte.

Entries are found with `ast`: a key of a dict (or an element of a list/set) assigned to a name
like `UNIMPLEMENTED_XFAILLIST`, `ON_MPS_XFAILLIST`, `XFAILLIST_GRAD` or `SKIPLIST`. Only whole
lines are removed, so an entry that shares a line with another one is a `RecipeError`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from metalport.checkout.sources import Where, XfailEntry, named_assignments, parse_python
from metalport.errors import RecipeError

XFAIL_LIST_NAME = re.compile(r"^[A-Z0-9_]*(XFAIL|SKIP)LIST[A-Z0-9_]*$")


@dataclass(frozen=True)
class XfailRemoval:
    """The edited text and the entries taken out of it."""

    text: str
    removed: tuple[XfailEntry, ...]


def _items(value: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    """(first node, last node) of each entry of a dict, list, set or tuple literal."""
    if isinstance(value, ast.Dict):
        return [(k, v) for k, v in zip(value.keys, value.values) if k is not None]
    if isinstance(value, (ast.List, ast.Set, ast.Tuple)):
        return [(e, e) for e in value.elts]
    return []


def find_xfails(text: str, keys: Iterable[str], *, path: str = "common_mps.py") -> tuple[XfailEntry, ...]:
    """Every entry keyed by one of `keys` in the file's xfail/skip lists, in file order, with the
    span of lines it takes (`last_line`); its dtypes are not read (None)."""
    wanted = set(keys)
    found: list[XfailEntry] = []
    for list_name, value in named_assignments(parse_python(text, path, RecipeError, "fix the syntax error first")):
        if not XFAIL_LIST_NAME.match(list_name):
            continue
        items = _items(value)
        for i, (first, last) in enumerate(items):
            if not (isinstance(first, ast.Constant) and first.value in wanted):
                continue
            start, end = first.lineno, last.end_lineno or last.lineno
            before = items[i - 1][1].end_lineno if i else value.lineno
            after = items[i + 1][0].lineno if i + 1 < len(items) else value.end_lineno
            if before is not None and before >= start or after is not None and after <= end:
                raise RecipeError(f"entry {first.value!r} of {list_name} shares its line with another",
                                  location=f"{path}:{start}",
                                  hint="put the entry on its own line, then rerun")
            found.append(XfailEntry(list_name, str(first.value), None, Where(path, start), end))
    return tuple(sorted(found, key=lambda e: e.where.line))


def remove_xfails(text: str, keys: Iterable[str], *, path: str = "common_mps.py",
                  only: set[tuple[str, str]] | None = None) -> XfailRemoval:
    """`text` without the whole lines of every entry keyed by one of `keys` (and, with `only`, in a
    (list, key) pair of it)."""
    entries = tuple(e for e in find_xfails(text, keys, path=path) if only is None or (e.list_name, e.op) in only)
    lines = text.split("\n")  # the line numbering `ast` uses
    drop = {n for e in entries for n in e.lines}
    kept = "\n".join(line for n, line in enumerate(lines, start=1) if n not in drop)
    return XfailRemoval(kept, entries)
