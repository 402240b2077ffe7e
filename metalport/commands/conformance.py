"""`metalport conformance aten::OP`: the op's Metal kernels against torch on CPU, per dtype."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from metalport.checkout.layout import KERNELS_DIR
from metalport.commands._complete import complete_ops, with_completer
from metalport.commands._sandbox import add_sandbox_flag
from metalport.errors import RepoError

if TYPE_CHECKING:
    from metalport.checks.report import ConformanceReport


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `conformance` command."""
    parser = subparsers.add_parser(
        "conformance", help="check an op's Metal kernels against torch (OpInfo samples, random, held-out)",
        description="Run the op's kernels as the MPS host would (emulated on the CPU, or on MPS) over its "
                    "OpInfo samples, random inputs and held-out cases drawn from OpInfo's reference numerics, and "
                    "judge them by the acceptance standard (README: Acceptance standard). Exit 0 on pass, 1 on "
                    "fail, 2 on bad input, 3 when not judged: a partial verdict (calls the emulated host model "
                    "does not cover were skipped) or no host model covers the op at all (verify on macOS). An op "
                    "whose OpInfo samples at a dtype all go unjudged fails (opinfo 0/N).")
    with_completer(parser.add_argument("op", help="the ATen op, e.g. aten::atan2"), complete_ops)
    parser.add_argument("--repo", type=Path, default=None,
                        help="PyTorch checkout (default: the one enclosing the working directory)")
    parser.add_argument("--dtypes", default=None, help="comma-separated dtypes, e.g. float32,half,int32")
    parser.add_argument("--json", action="store_true", help="print the report as JSON (held-out inputs left out)")
    parser.add_argument("--seed", type=int, default=None, help="seed for the random inputs (default: fresh)")
    parser.add_argument("--backend", default="auto", choices=("auto", "emulated", "mps"),
                        help="where kernels run (auto: mps when available, else emulated)")
    parser.add_argument("--no-held-out", action="store_true", help="skip the held-out edge cases")
    add_sandbox_flag(parser)
    parser.add_argument("--show-held-out", action="store_true",
                        help="print the failing held-out cases with their inputs (for a human; never shown to a model)")
    parser.add_argument("--explain", action="store_true",
                        help="for each failing case: the input, torch CPU's value, the truth's, the kernel's output "
                             "and which part of the acceptance standard it broke (held-out ones with --show-held-out)")
    parser.set_defaults(func=run)


def _checkout_root(repo: Path | None) -> Path:
    hint = "pass --repo at a PyTorch checkout"
    if repo is not None:
        root = repo.expanduser().resolve()
        if not (root / KERNELS_DIR).is_dir():
            raise RepoError(f"not a PyTorch checkout: missing {KERNELS_DIR}", location=str(root), hint=hint)
        return root
    start = Path.cwd().resolve()
    for candidate in (start, *start.parents):
        if (candidate / KERNELS_DIR).is_dir():
            return candidate
    raise RepoError(f"not inside a PyTorch checkout: missing {KERNELS_DIR}", location=str(start), hint=hint)


def run(args: argparse.Namespace) -> int:
    """Print the per-dtype table (or JSON); exit 0 only on pass."""
    from metalport.checks.conformance import op_conformance

    root = _checkout_root(args.repo)
    dtypes = [d for d in args.dtypes.split(",") if d.strip()] if args.dtypes else None
    report = op_conformance(root, args.op, dtypes=dtypes, include_held_out=not args.no_held_out,
                            backend=args.backend, seed=args.seed)
    if args.json:
        print(json.dumps(report.to_dict(include_held_out_inputs=args.show_held_out), indent=2))
        return report.exit_code()
    _print_table(report, show_held_out=args.show_held_out, explain=args.explain)
    return report.exit_code()


def _print_table(report: ConformanceReport, *, show_held_out: bool = False, explain: bool = False) -> None:
    from rich.markup import escape
    from rich.table import Table

    from metalport.checks.report import KINDS
    from metalport.commands._console import table_console

    console = table_console()
    table = Table(title=f"conformance {report.op} ({report.backend}, seed {report.seed})")
    for col in ("dtype", "opinfo", "random", "held-out", "out of scope", "skipped", "ulps vs truth", "ulps vs CPU",
                "worst at"):
        table.add_column(col)
    for d in report.dtypes:
        counts = [f"{d.tally(k).passed}/{d.tally(k).samples}" if d.tally(k).samples else "-" for k in KINDS]
        scoped = sum(d.tally(k).out_of_scope for k in KINDS)
        truth, cpu = d.worst_ulps
        if truth is None:  # integer and bool outputs: exact, judged against CPU
            ulps, where = ["-", "-"], f"exact; {d.worst_sample or '-'}"
        else:
            ulps, where = [f"{truth[0]:.3g}", f"{cpu[0]:.3g}" if cpu else "-"], truth[1]
        table.add_row(d.dtype, *counts, str(scoped), str(d.skipped), *ulps, escape(where))
    if report.dtypes:
        console.print(table)
    for d in report.dtypes:
        explained = list(d.explanations)
        for f in d.failures:
            console.print(f"FAIL {f}", markup=False)
            if explain and f.kind != "held-out":
                mine = next((e for e in explained if e.case in f.message), None)
                if mine is not None:
                    explained.remove(mine)
                    for line in mine.lines():
                        console.print(line, markup=False)
        for line in d.out_of_scope_cases:
            console.print(f"OUT OF SCOPE {line}", markup=False)
        if show_held_out:
            for line in d.held_out_inputs:
                console.print(f"HELD-OUT {d.dtype} {line}", markup=False)
            for e in d.held_out_explanations if explain else ():
                console.print(f"HELD-OUT {d.dtype} explained:", markup=False)
                for line in e.lines():
                    console.print(line, markup=False)
    if report.reason:
        console.print(f"note: {report.reason}", markup=False)
    judged = "" if report.judged else f" (not judged, exit {report.exit_code()}: verify on macOS)"
    console.print(f"{report.op}: {report.status}" + (f" ({report.skipped} skipped)" if report.skipped else "")
                  + judged, markup=False)
