"""The rich console commands print tables to: the terminal's width, or 240 columns into a pipe."""

from __future__ import annotations

import sys

from rich.console import Console


def table_console() -> Console:
    """A console for tables on stdout; a pipe or file gets 240 columns so no column collapses."""
    return Console() if sys.stdout.isatty() else Console(width=240)
