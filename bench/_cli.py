"""What the timing benches share at the command line: their docstring as help, `-n` repetitions,
and the real PyTorch tree named by $METALPORT_REAL_TREE."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def repetitions_parser(doc: str | None, *, repetitions: int) -> argparse.ArgumentParser:
    """A parser showing `doc` as written, with `-n` (how many repetitions the median is taken over)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=repetitions, help="repetitions (median reported)")
    return parser


def real_tree() -> Path | None:
    """$METALPORT_REAL_TREE resolved, or None after saying on stderr how to set it."""
    tree_env = os.environ.get("METALPORT_REAL_TREE")
    if not tree_env:
        print("set METALPORT_REAL_TREE to a PyTorch checkout (or ../shared/pytorch-real)", file=sys.stderr)
        return None
    return Path(tree_env).resolve()
