"""The `metalport` and `run-migration` console scripts: a thin layer over `metalport.commands`."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from metalport import __version__, commands
from metalport.errors import MetalportError


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand module of `metalport.commands` registered."""
    parser = argparse.ArgumentParser(prog="metalport", description=__doc__)
    parser.add_argument("--version", action="version", version=f"metalport {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):  # private helpers of the commands, not commands
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; a `MetalportError` becomes one line on stderr and its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return _dispatch(args, "metalport")


def run_migration(argv: Sequence[str] | None = None) -> int:
    """The `run-migration` console script: `metalport run` under its own name."""
    from metalport.commands.run import add_arguments

    parser = argparse.ArgumentParser(prog="run-migration", description="Port one ATen op to a native Metal "
                                     "kernel in a sandboxed worktree, up to a human approval gate.")
    parser.add_argument("--version", action="version", version=f"metalport {__version__}")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return _dispatch(args, "run-migration")


def _dispatch(args: argparse.Namespace, prog: str) -> int:
    """Run the parsed command; a `MetalportError` becomes one line on stderr and its exit code."""
    try:
        return int(args.func(args) or 0)
    except MetalportError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
