"""How commands print tables, diffs and code: fitted to a terminal, never wrapped off one.

On a terminal a table folds to the window's width. Into a pipe or file it is printed at its full
natural width (no cell is ever split), or as `--format tsv` (one line per row, tab-separated, a
header line first) or `--format json`. Diffs and code are written as they are: never wrapped,
highlighted only on a terminal, so `metalport review show ID > x.patch` keeps lines that apply.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console

FORMATS = ("table", "tsv", "json")


def add_format_option(parser: argparse._ActionsContainer, *, json_help: str, default: Any = "table") -> None:
    """Add `--json` (`json_help`) and `--format table|tsv|json` to a parser or group; `--json` is the
    short form of `--format json` (`output_format`). A `default` of SUPPRESS leaves both unset."""
    parser.add_argument("--json", action="store_true", help=json_help,
                        **({"default": default} if default is argparse.SUPPRESS else {}))
    parser.add_argument("--format", choices=FORMATS, default=default, dest="format",
                        help="table (default; full width when not a terminal), tsv or json")


def output_format(args: argparse.Namespace) -> str:
    """The format the user asked for: `--json` wins, then `--format`, else table."""
    if getattr(args, "json", False):
        return "json"
    return getattr(args, "format", None) or "table"


def table_console() -> Console:
    """A console for stdout: the terminal's width, or a very wide one off a terminal (nothing folds)."""
    return Console() if sys.stdout.isatty() else Console(width=100_000, soft_wrap=True)


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], fmt: str = "table", *,
                caption: str | None = None, records: Sequence[dict] | None = None,
                no_wrap: Sequence[str] = ()) -> None:
    """Print `rows` under `columns` as a table, TSV or JSON (`records`, else one object per row)."""
    if fmt == "json":
        data = list(records) if records is not None else [dict(zip(columns, row)) for row in rows]
        print(json.dumps(data, indent=2, sort_keys=True))
        return
    if fmt == "tsv":
        print("\t".join(columns))
        for row in rows:
            print("\t".join(_tsv_cell(cell) for cell in row))
        return
    from rich.markup import escape
    from rich.table import Table

    tty = sys.stdout.isatty()
    table = Table(title=title, caption=caption)
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=not tty or column in no_wrap)
    for row in rows:
        table.add_row(*(escape(str(cell)) for cell in row))  # cells are data, not markup
    if tty:
        Console().print(table)
        return
    width = Console(width=100_000).measure(table).maximum
    Console(width=max(width, 20), soft_wrap=False).print(table)


def print_code(text: str, lexer: str, console: Console | None = None) -> None:
    """Print a diff or source as it is: highlighted on a terminal (lines never wrapped), raw otherwise."""
    if not sys.stdout.isatty():
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        sys.stdout.flush()
        return
    from rich.syntax import Syntax

    (console or Console()).print(Syntax(text, lexer, word_wrap=False, background_color="default"), soft_wrap=True)


def _tsv_cell(value: object) -> str:
    return str(value).replace("\t", " ").replace("\n", " ")


class SlowNotice:
    """A line on stderr when a step outlasts `after_s` (so a cold compile is never silent), then one
    every `every_s` with the seconds so far; nothing when the step is quick (a cache hit).

        with SlowNotice("compiling X on the CPU (a large shader takes ~30 s cold; cached after)"):
            ...
    """

    def __init__(self, message: str, *, after_s: float = 1.0, every_s: float = 10.0) -> None:
        import threading

        self.message, self.after_s, self.every_s = message, after_s, every_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-notice", daemon=True)

    def _run(self) -> None:
        import time

        start = time.monotonic()
        if self._done.wait(self.after_s):
            return
        print(f"metalport: {self.message}", file=sys.stderr, flush=True)
        while not self._done.wait(self.every_s):
            print(f"metalport: still at it ({time.monotonic() - start:.0f} s)", file=sys.stderr, flush=True)

    def __enter__(self) -> "SlowNotice":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
