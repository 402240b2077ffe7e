"""The command line the timing benches share: their docstring as help, and `-n` repetitions."""

from __future__ import annotations

import argparse


def repetitions_parser(doc: str | None, *, repetitions: int) -> argparse.ArgumentParser:
    """A parser showing `doc` as written, with `-n` (how many repetitions the median is taken over)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=repetitions, help="repetitions (median reported)")
    return parser
