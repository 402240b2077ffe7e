# PYTHON_ARGCOMPLETE_OK
"""The `metalport` and `run-migration` console scripts: a thin layer over `metalport.commands`."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sqlite3
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

import git

from metalport import __version__, commands
from metalport.commands._sandbox import apply_sandbox_flag
from metalport.errors import MetalportError, filesystem_error, is_filesystem_fault, not_utf8


PURPOSE = "Bring PyTorch operators to Apple Silicon: port ATen ops to native Metal kernels, up to a human review."
START_HERE = """\
start here:
  metalport workspace init /tmp/ws                     # a trial checkout from the torch wheel
  run-migration aten::heaviside --repo /tmp/ws         # port one op, stop at the approval gate
  metalport backlog --repo ~/pytorch --status missing  # what is left to port in a real checkout

`metalport COMMAND --help` explains each command. Commands that read a checkout take --repo
(default: the checkout enclosing the working directory)."""


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand module of `metalport.commands` registered."""
    parser = argparse.ArgumentParser(prog="metalport", description=PURPOSE, epilog=START_HERE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"metalport {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):  # private helpers of the commands, not commands
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; a `MetalportError` becomes one line on stderr and its exit code."""
    parser = build_parser()
    _complete(parser)
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
    _complete(parser)
    args = parser.parse_args(argv)
    return _dispatch(args, "run-migration")


def _complete(parser: argparse.ArgumentParser) -> None:
    """Answer a shell's completion request (argcomplete sets `_ARGCOMPLETE`) and exit; else nothing."""
    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(parser)


def _dispatch(args: argparse.Namespace, prog: str) -> int:
    """Run the parsed command; a `MetalportError` becomes one line on stderr and its exit code."""
    apply_sandbox_flag(args)
    try:
        return int(args.func(args) or 0)
    except MetalportError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return err.exit_code
    except (OSError, sqlite3.Error, git.GitCommandError) as err:
        # The last net for a filesystem fault no command mapped itself: still one line, path and cause.
        if not is_filesystem_fault(err):
            raise
        fault = filesystem_error(err)
        print(f"{prog}: error: {fault}", file=sys.stderr)
        return fault.exit_code
    except UnicodeDecodeError as err:  # the last net for a source that is not UTF-8 (Note [source bytes])
        bad = not_utf8(err)
        print(f"{prog}: error: {bad}", file=sys.stderr)
        return bad.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


def exit_now(code: int) -> NoReturn:
    """End the console script with `code`, skipping the interpreter's teardown (Note [fast exit]).

    Note [fast exit]: once torch and the OpInfo database are loaded (conformance), the
    interpreter's teardown of their modules takes 1.5-3 s after the command has finished. The
    console scripts flush stdout/stderr, run the atexit handlers (temp folders, logging) and leave
    with `os._exit`; while another non-daemon thread is alive they exit the normal way. `main()`
    itself returns normally, so tests and callers in-process are not affected.
    """
    import atexit
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1  # e.g. a closed pipe: the output did not all arrive
    os._exit(code)


def _console_gc() -> None:
    """Tune the garbage collector for a console process (Note [console gc])."""
    import gc

    # Note [console gc]: a run loads ~100k long-lived objects (LangGraph's and LangSmith's pydantic
    # models at import, the registry index) and then allocates many short-lived ones (parses);
    # with the default thresholds (700, 10, 10) the collector walks the long-lived ones again and
    # again (~0.3 s CPU warm, ~2 s cold). A console process lives for one command: collect rarely;
    # what is alive now (the interpreter's start-up) is never garbage. Library callers keep the defaults.
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def console_main() -> NoReturn:
    """The `metalport` console script."""
    _console_gc()
    exit_now(_quiet_on_closed_pipe(main))


def console_run_migration() -> NoReturn:
    """The `run-migration` console script."""
    _console_gc()
    exit_now(_quiet_on_closed_pipe(run_migration))


def _quiet_on_closed_pipe(entry: Callable[[], int]) -> int:
    """`entry()`; when stdout's reader went away (`metalport backlog | head`), exit 141 like other
    tools on SIGPIPE, with no traceback."""
    try:
        return entry()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the final flush must not fail again
        return 141


if __name__ == "__main__":
    console_main()
