"""`metalport kernels FILE.metal`: compile a shader on the CPU and list its kernels with their
bound arguments; a compile error prints the diagnostics at the user's lines and exits 1."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from metalport.commands._sandbox import add_sandbox_flag


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `kernels` command."""
    parser = subparsers.add_parser("kernels", help="compile a .metal file on the CPU and list its kernels",
                                   description="Compile a .metal file with the real c10/metal headers as host "
                                               "C++ and list every kernel with its bound arguments.")
    parser.add_argument("file", type=Path, help="the .metal file")
    parser.add_argument("--repo", type=Path, default=None,
                        help="PyTorch checkout whose c10/metal headers to use (default: the installed wheel's)")
    parser.add_argument("--metal-version", type=int, default=310, choices=(310, 400),
                        help="__METAL_VERSION__ to compile for (default 310)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_sandbox_flag(parser)
    parser.set_defaults(func=run)


def _describe(arg: object) -> str:
    """`[[buffer(2)]] constant uint& numel` for one KernelArg."""
    from metalport.emulate import KernelArg

    assert isinstance(arg, KernelArg)
    if arg.attribute == "buffer":
        ref = "*" if arg.is_pointer else "&"
        return f"[[buffer({arg.index})]] {arg.address_space} {arg.c_type}{ref} {arg.name}".rstrip()
    return f"[[{arg.attribute}]] {arg.c_type} {arg.name}".rstrip()


def run(args: argparse.Namespace) -> int:
    """Compile the file and print its kernel table (or its diagnostics)."""
    from metalport.checkout import find_checkout
    from metalport.emulate import checkout_include_dirs, compile_file
    from metalport.errors import CompileError

    include_dirs: tuple = ()
    if args.repo is not None:  # the same include path conformance and the executors compile with
        include_dirs = checkout_include_dirs(find_checkout(args.repo).root)
    from metalport.commands._console import SlowNotice

    try:
        with SlowNotice(f"compiling {args.file} on the CPU (a large shader takes about 30 s the first time; "
                        "cached after)"):
            lib = compile_file(args.file, include_dirs=include_dirs, metal_version=args.metal_version)
    except CompileError as err:
        if args.json:
            print(json.dumps({"file": str(args.file), "ok": False,
                              "diagnostics": [d.to_dict() for d in err.diagnostics]}, indent=2))
        else:
            for diagnostic in err.diagnostics:
                print(diagnostic, file=sys.stderr)
            print(f"metalport: error: {err}", file=sys.stderr)
        return err.exit_code
    with lib:
        kernels = [lib.kernels[name] for name in lib.function_names()]
        if args.json:
            print(json.dumps({"file": str(args.file), "ok": True, "kernels": [k.to_dict() for k in kernels],
                              "warnings": [w.to_dict() for w in lib.warnings],
                              "unbound_host_names": list(lib.problems)}, indent=2))
            return 0
        _print_table(args.file, kernels, [str(w) for w in lib.warnings] + list(lib.problems))
    return 0


def _print_table(file: Path, kernels: list, warnings: list[str]) -> None:
    """A rich table: host name, C++ instantiation, bound arguments, executor."""
    from rich.markup import escape
    from rich.table import Table

    from metalport.commands._console import table_console

    table = Table(title=f"{len(kernels)} kernels in {file}", show_lines=False)
    table.add_column("host name", no_wrap=True)
    table.add_column("instantiation")
    table.add_column("arguments (by binding)")
    table.add_column("executor", no_wrap=True)
    for info in kernels:
        table.add_row(info.host_name, escape(info.template), escape("\n".join(_describe(a) for a in info.args)),
                      "threadgroup" if info.uses_threadgroup else "grid")
    console = table_console()
    console.print(table)
    for warning in warnings:
        console.print(f"warning: {warning}", markup=False)
