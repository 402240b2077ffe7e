"""Read C++ / Objective-C++ sources as the compiler would see their top level.

`read_unit` runs the file through pcpp (a C99 preprocessor in Python), so every macro the file
defines, or includes from the tree's MPS headers (`<root>/aten/src/ATen/native/mps/...`), is
expanded; other headers pass through untouched. A file with no such macro skips pcpp: its
directives are blanked and `#if 0` blocks dropped, line for line. The dispatch machinery itself (`REGISTER_DISPATCH`, `TORCH_IMPL_FUNC`, ...,
and `DispatchStub.h`) is never expanded: it is what the scanners read. The expansion keeps `#line` marks, so each definition maps back to
the `file:line` a user reads (a macro-made function sits on the line of its invocation).

`Unit.functions` are the brace-matched definitions at namespace scope: comments, strings,
preprocessor lines, nested braces, Objective-C blocks `^{ ... }` and lambdas stay inside their
function's body. `TORCH_IMPL_FUNC(name)(...) {` is a definition of `name`.
"""

from __future__ import annotations

import io
import os
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pcpp import Action, OutputDirective, Preprocessor

from metalport.content_cache import ContentCache, blob_id

_LINE_MARK = re.compile(r'^#line (\d+)(?: "([^"]*)")?[ \t]*$')
_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_NAMESPACE = re.compile(r'(?:\binline\s+)?\bnamespace\b[\w:\s]*$|\bextern\s+"C(?:\+\+)?"\s*$')
_TAIL = re.compile(r'\)\s*(?:const\b|noexcept\b|override\b|final\b|->\s*[\w:<>,&*\s]+?)*\s*$')
_NAME_BEFORE = re.compile(r'(~?[A-Za-z_]\w*)\s*$')
_IMPL_FUNC = re.compile(r'\bTORCH_IMPL_FUNC\s*\(\s*(\w+)\s*\)\s*$')
_FOLLOWED = ("ATen/native/mps/",)  # include prefixes whose macros are expanded
_FUNCTION_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+\w+\(", re.M)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
# Read as syntax, never expanded: the dispatch machinery a registration or a kernel is written in.
_KEPT = frozenset({"REGISTER_DISPATCH", "REGISTER_MPS_DISPATCH", "TORCH_IMPL_FUNC", "DECLARE_DISPATCH",
                   "DEFINE_DISPATCH", "TORCH_META_FUNC"})
_NOT_NAMES = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof"})


@dataclass(frozen=True)
class Function:
    """One definition at namespace scope; offsets index `Unit.code` (body includes its braces)."""

    name: str
    impl_func: bool  # written as TORCH_IMPL_FUNC(name)
    file: str
    line: int
    start: int
    body_start: int
    body_end: int


class _Reader(Preprocessor):
    """pcpp that follows an include only into the tree's MPS headers (`ATen/native/mps/...`) that
    define function-like macros, themselves or through their own includes: that is where MPS
    registration helpers live, while following `ATen/Dispatch.h` and friends would expand every
    `AT_DISPATCH_*` of a whole checkout. Other includes pass through untouched; errors are
    collected, not printed."""

    def __init__(self, root: Path, dirs: tuple[Path, ...], memo: dict[Path, bool], read: set[Path]) -> None:
        super().__init__()
        self.line_directive = "#line"
        # `__FILE__` and `#line` name a tree's file as a compiler run at the root does (relative),
        # not by this checkout's absolute path (nor relative to the working folder, pcpp's default)
        self.rewrite_paths = [(re.escape(str(root) + os.sep) + "(.*)", "\\1")]
        self.errors: list[str] = []
        self._dirs = dirs
        self._memo = memo
        self._read = read

    def on_include_not_found(self, is_malformed: bool, is_system_include: bool, curdir: str,
                             includepath: str) -> str:
        for folder in self._dirs:
            if _has_macros(folder, includepath, self._dirs, self._memo, self._read):
                return str(folder)
        raise OutputDirective(Action.IgnoreAndPassThrough)

    def on_file_open(self, is_system_include: bool, includepath: str):  # noqa: ANN201 (pcpp's file object)
        self._read.add(Path(includepath))  # found or not: what the unit depends on
        return super().on_file_open(is_system_include, includepath)

    def on_error(self, file: str, line: int, msg: str) -> None:
        self.errors.append(f"{file}:{line}: {msg}")

    def define(self, tokens: object) -> None:
        text = tokens if isinstance(tokens, str) else "".join(t.value for t in tokens)  # type: ignore[attr-defined]
        name = re.match(r"\s*(\w+)", text)
        if name is None or name.group(1) not in _KEPT:
            super().define(tokens)


def _has_macros(folder: Path, include: str, dirs: tuple[Path, ...], memo: dict[Path, bool],
                read: set[Path]) -> bool:
    """True when `folder/include` is an MPS header of the tree that defines a function-like macro,
    itself or through an MPS header it includes. Adds each MPS header path looked at to `read`."""
    path = folder / include
    if path in memo:
        return memo[path]
    memo[path] = False  # a cycle adds nothing
    if not include.startswith(_FOLLOWED):
        return False
    read.add(path)
    if not path.is_file():
        return False
    text = path.read_text(encoding="utf-8", errors="replace")
    found = _FUNCTION_MACRO.search(text) is not None or any(
        _has_macros(d, inc, dirs, memo, read) for inc in _INCLUDE.findall(text) for d in dirs)
    memo[path] = found
    return found


def _needs_expansion(source: str, dirs: tuple[Path, ...], memo: dict[Path, bool], read: set[Path]) -> bool:
    """True when the file defines a function-like macro or includes an MPS header that does."""
    return _FUNCTION_MACRO.search(source) is not None or any(
        _has_macros(d, inc, dirs, memo, read) for inc in _INCLUDE.findall(source) for d in dirs)


def _without_directives(source: str) -> str:
    """`source` with preprocessor lines (and their continuations) and `#if 0` blocks blanked, line
    for line: what a file with no macros to expand reads as. Other conditionals keep every branch."""
    out = []
    dead, continued = 0, False
    for line in source.split("\n"):
        stripped = line.lstrip()
        directive = continued or stripped.startswith("#")
        if stripped.startswith("#") and not continued:
            word = re.match(r"#\s*(\w+)", stripped)
            keyword = word.group(1) if word else ""
            if dead and keyword.startswith("if"):
                dead += 1
            elif dead and keyword == "endif":
                dead -= 1
            elif dead == 1 and keyword in ("else", "elif"):
                dead = 0
            elif not dead and re.match(r"#\s*if\s+(0|false)\b", stripped):
                dead = 1
        continued = directive and line.rstrip().endswith("\\")
        out.append("" if directive or dead else line)
    return "\n".join(out)


@dataclass(frozen=True)
class Unit:
    """One source file after preprocessing: `text` (strings intact) and `code` (comments and
    literals blanked, same offsets), with the origin of every line."""

    text: str
    code: str
    functions: tuple[Function, ...]
    _starts: tuple[int, ...]
    _origins: tuple[tuple[str, int], ...]

    def origin(self, offset: int) -> tuple[str, int]:
        """The (file, line) an offset of `text` comes from."""
        return self._origins[bisect_right(self._starts, offset) - 1]

    def body(self, fn: Function) -> str:
        """The function's body in `text` (string literals intact)."""
        return self.text[fn.body_start:fn.body_end]

    def function_at(self, offset: int) -> Function | None:
        """The function whose body holds `offset`, if any."""
        return next((f for f in self.functions if f.body_start <= offset < f.body_end), None)


def _blank(match: re.Match[str]) -> str:
    text = match.group(0)
    if text.startswith(("//", "/*")):
        return re.sub(r"[^\n]", " ", text)
    return text[0] + re.sub(r"[^\n]", " ", text[1:-1]) + text[-1]


def _lines(expanded: str, rel: str, root: Path) -> tuple[str, list[int], list[tuple[str, int]]]:
    """Drop `#line` marks and other directives; the line starts and origin of each kept line."""
    out: list[str] = []
    starts: list[int] = []
    origins: list[tuple[str, int]] = []
    file, line, offset = rel, 1, 0
    for raw in expanded.split("\n"):
        mark = _LINE_MARK.match(raw)
        if mark:
            line = int(mark.group(1))
            if mark.group(2):
                path = Path(os.path.abspath(root / mark.group(2)))  # an absolute mark stays itself
                file = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
            continue
        kept = "" if raw.lstrip().startswith("#") else raw
        starts.append(offset)
        origins.append((file, line))
        out.append(kept)
        offset += len(kept) + 1
        line += 1
    return "\n".join(out), starts, origins


_PAIRS = {"(": ")", "{": "}", "[": "]", "<": ">"}
_PAIR_OF = {ch: o + c for o, c in _PAIRS.items() for ch in (o, c)}  # either bracket -> "()"


# Note [one bracket matcher]: "find the matching (or enclosing) bracket" is `match_bracket`.
# Callers differ only in data: which bracket kinds count (a body's braces only, since a `<` there
# is as often a comparison; `<>` where template arguments are split), the direction (a head is
# found from its `)`), a bound the scan stops at (a function body's start), and whether comments
# and literals are skipped (raw text) or already blanked (`Unit.code`, token lists).
def match_bracket(text: Sequence[str], at: int, pairs: str | None = None, *, backward: bool = False,
                  bound: int | None = None, depth: int = 0, skip_literals: bool = False) -> int:
    """Offset of the bracket matching the one at `at`, scanning from `at` itself; -1 if unbalanced.

    `pairs` lists the counted brackets as open/close pairs (`"(){}"`; default: the kind at `at`);
    every kind counts towards one depth. Scanning stops before `bound` (forward, default the end)
    or below it (backward, default 0). A `depth` of 1 finds the bracket enclosing `at` instead.
    `skip_literals` (forward, `text` a str) steps over `//` and `/* */` comments and string and
    character literals; one left unclosed leaves the bracket unbalanced. `text` may be a list of
    token texts."""
    pairs = pairs if pairs is not None else _PAIR_OF[text[at]]
    opens, closes = (pairs[1::2], pairs[0::2]) if backward else (pairs[0::2], pairs[1::2])
    if backward:
        stop = bound if bound is not None else 0
        for i in range(at, stop - 1, -1):
            if text[i] in opens:
                depth += 1
            elif text[i] in closes:
                depth -= 1
                if depth == 0:
                    return i
        return -1
    i, n = at, len(text) if bound is None else bound
    while i < n:
        two = text[i:i + 2] if skip_literals else ""
        if two == "//":
            i = text.find("\n", i)
            if i < 0:
                return -1
        elif two == "/*":
            i = text.find("*/", i + 2)
            if i < 0:
                return -1
            i += 1
        elif skip_literals and text[i] in "\"'":
            quote, i = text[i], i + 1
            while i < n and text[i] != quote:
                i += 2 if text[i] == "\\" else 1
        elif text[i] in opens:
            depth += 1
        elif text[i] in closes:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def closing(code: str, at: int) -> int:
    """Offset of the bracket closing the `(`, `{` or `[` at `at` (len(code) if unbalanced); `code`
    has comments and literals blanked (`Unit.code`)."""
    close = match_bracket(code, at)
    return len(code) if close < 0 else close


def split_top_level(text: str, opens: str = "([{<", closes: str = ")]}>") -> list[str]:
    """The comma-separated parts of `text` (an argument list), stripped, empty ones dropped.

    A comma inside brackets (`opens`/`closes`, paired by position) does not split."""
    depth, cur, out = 0, "", []
    for ch in text:
        depth += ch in opens and 1 or ch in closes and -1 or 0
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [a for a in (*out, cur.strip()) if a]


def _match(code: str, at: int) -> int:
    return min(closing(code, at) + 1, len(code))


def _definition(code: str, head_start: int, brace: int) -> tuple[str, bool, int] | None:
    """(name, impl_func, name offset) when the text before `brace` heads a function definition."""
    head = code[head_start:brace]
    tail = _TAIL.search(head)
    if tail is None:
        return None
    close = head_start + tail.start()
    opened = match_bracket(code, close, "()", backward=True)
    if opened < head_start:
        return None
    before = code[head_start:opened]
    impl = _IMPL_FUNC.search(before)
    if impl:
        return impl.group(1), True, head_start + impl.start(1)
    name = _NAME_BEFORE.search(before)
    if name is None or name.group(1) in _NOT_NAMES or "=" in before[name.start():]:
        return None
    return name.group(1), False, head_start + name.start(1)


def _scan(code: str) -> list[tuple[str, bool, int, int, int]]:
    """(name, impl_func, name offset, body start, body end) of each namespace-scope definition."""
    found: list[tuple[str, bool, int, int, int]] = []
    head_start, i = 0, 0
    while i < len(code):
        ch = code[i]
        if ch in ";}":
            head_start = i + 1
        elif ch == "(":
            i = _match(code, i)
            continue
        elif ch == "{":
            head = code[head_start:i]
            if _NAMESPACE.search(head):
                head_start = i + 1  # namespace scope continues inside
            else:
                end = _match(code, i)
                made = _definition(code, head_start, i)
                if made is not None:
                    found.append((made[0], made[1], made[2], i, end))
                head_start = i = end
                continue
        i += 1
    return found


def read_unit(path: Path, root: Path) -> Unit:
    """`path` preprocessed with the tree's headers (see the module docstring).

    Memoised on the file's path, size and mtime (pcpp takes ~0.5 s on a 90 kB `.cpp`, and one
    command scans a tree several times; a header edited in between is not noticed), and kept by
    content across trees and runs (Note [units by content]).
    """
    root, path = root.resolve(), path.resolve()
    stat = path.stat()
    return _read_unit(path, root, stat.st_size, stat.st_mtime_ns)


def forget_units() -> None:
    """Drop the memoised units, in this process and its content cache (benchmarks time a cold scan)."""
    _read_unit.cache_clear()
    _UNITS.forget()


# Note [units by content]: each stage of a run scans a different tree (the base snapshot, then the
# run's worktree) and every run scans the same base files again; pcpp dominates (~0.25 s CPU for
# the real corpus's five macro-registering `.mm`). A unit depends on its file's path and text and
# on the MPS headers it looked at (found or not: `read`), so it is kept in a `ContentCache` keyed
# by path and text, with the blob id of each header looked at; a kept unit is used only while
# every one of those headers is unchanged in the tree being read.
_UNITS: ContentCache[tuple[tuple[tuple[str, str | None], ...], str | None, Unit]] = ContentCache(
    "cpp-units", [__file__], keep=512, memory=256)


def _blob_at(path: Path) -> str | None:
    try:
        return blob_id(path.read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _rel_or_abs(path: Path, root: Path) -> str:
    path = Path(os.path.abspath(path))
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _still_holds(kept: tuple, root: Path) -> bool:
    """True when every header the kept unit looked at is unchanged in `root`, and the unit names no
    other tree's path (an expanded `__FILE__`)."""
    headers, own_root, _ = kept
    try:
        return (own_root is None or own_root == str(root)) and all(
            _blob_at(root / name) == blob for name, blob in headers)  # an absolute name stays itself
    except OSError:
        return False


@lru_cache(maxsize=128)
def _read_unit(path: Path, root: Path, size: int, mtime_ns: int) -> Unit:
    rel = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    source = path.read_text(encoding="utf-8", errors="replace")

    def compute(_: str) -> tuple[tuple[tuple[str, str | None], ...], str | None, Unit]:
        read: set[Path] = set()
        unit = _preprocess(path, root, rel, source, read)
        headers = tuple(sorted((_rel_or_abs(p, root), _blob_at(p)) for p in read))
        return headers, str(root) if str(root) in unit.text else None, unit

    return _UNITS.get(f"{rel}\0{source}", compute, valid=lambda kept: _still_holds(kept, root))[2]


def _preprocess(path: Path, root: Path, rel: str, source: str, read: set[Path]) -> Unit:
    memo: dict[Path, bool] = {}
    dirs = tuple(d for d in (root / "aten/src", root) if d.is_dir())
    if _needs_expansion(source, dirs, memo, read):
        reader = _Reader(root, dirs, memo, read)
        reader.parse(source, str(path))
        buffer = io.StringIO()
        reader.write(buffer)
        text, starts, origins = _lines(buffer.getvalue(), rel, root)
    else:  # nothing to expand: skip pcpp, which takes ~0.5 s on a 90 kB file
        text = _without_directives(source)
        starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        origins = [(rel, n) for n in range(1, len(starts) + 1)]
    code = _TOKEN.sub(_blank, text)
    unit = Unit(text, code, (), tuple(starts), tuple(origins))
    functions = []
    for name, impl, at, body_start, body_end in _scan(code):
        file, line = unit.origin(at)
        functions.append(Function(name, impl, file, line, at, body_start, body_end))
    return Unit(text, code, tuple(functions), unit._starts, unit._origins)
