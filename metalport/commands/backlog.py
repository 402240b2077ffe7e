"""`metalport backlog`: where every op's MPS support stands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from metalport.commands._complete import complete_ops, with_completer
from metalport.commands._console import add_format_option, output_format, print_table
from metalport.commands._repo import add_repo_option


def _choice_list(allowed: list[str]):
    """An argparse type for `a,b,c`: each item must be one of `allowed`."""

    def parse(text: str) -> list[str]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        bad = [item for item in items if item not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"invalid choice {', '.join(bad) or repr(text)} (choose from {', '.join(allowed)})")
        return items

    return parse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `backlog` command."""
    from metalport.backlog.model import Family, Status
    from metalport.port import Kind, Porter

    parser = subparsers.add_parser("backlog", help="classify every op by its MPS support",
                                   description="Classify every op of the registry by its MPS support.")
    add_repo_option(parser)
    parser.add_argument("--status", type=_choice_list([s.value for s in Status]), action="extend",
                        help="only ops with these statuses (comma-separated or repeated)")
    parser.add_argument("--family", type=_choice_list([f.value for f in Family]), action="extend",
                        help="only ops of these families (comma-separated or repeated)")
    parser.add_argument("--kind", type=_choice_list([k.value for k in Kind]), action="extend",
                        help="only ops whose port is of these kinds (comma-separated or repeated)")
    parser.add_argument("--porter", type=_choice_list([p.value for p in Porter]), action="extend",
                        help="only ops these can port: recipe, translate, llm, or none (comma-separated or repeated)")
    with_completer(parser.add_argument("--op", action="append",
                                       help="only this op (aten::x, x or x.overload; repeatable)"), complete_ops)
    out = parser.add_mutually_exclusive_group()
    add_format_option(out, json_help="print a JSON list (same as --format json)")
    out.add_argument("--markdown", action="store_true", help="print a Markdown report for a tracking issue")
    parser.set_defaults(func=run)


_NEEDS_MM = frozenset({"mps-graph-stub", "mps-graph", "mps-metal", "mps-unknown"})


def _why_empty(checkout: object, statuses: Sequence[str]) -> str:
    """One line saying why a filtered backlog has no op: a checkout without `.mm` sources cannot
    show the statuses read from them."""
    operations = checkout.mps_operations  # type: ignore[attr-defined]
    has_mm = operations.is_dir() and any(operations.glob("*.mm"))
    from_mm = sorted(set(statuses) & _NEEDS_MM)
    if not has_mm and from_mm:
        what = "a wheel workspace (`metalport workspace init`), which" if checkout.is_wheel_workspace \
            else "this checkout, which"  # type: ignore[attr-defined]
        return (f"note: no op matched: {', '.join(from_mm)} is read from the MPS host sources "
                f"({checkout.rel(operations)}/*.mm), and {what} has none; run it on a PyTorch "  # type: ignore[attr-defined]
                f"checkout (--repo ~/pytorch)")
    return "note: no op matched these filters (see `metalport backlog` without them for every status)"


def run(args: argparse.Namespace) -> int:
    """Scan the checkout and print the backlog."""
    from metalport.backlog import report, scan_backlog
    from metalport.checkout import find_checkout
    from metalport.registry import load_registry

    checkout = find_checkout(args.repo)
    registry = load_registry(checkout.native_functions)
    wanted = {registry.resolve(name).name for name in args.op or ()}
    items = [i for i in scan_backlog(checkout, registry)
             if (not args.status or i.status.value in args.status)
             and (not args.family or i.family.value in args.family)
             and (not args.kind or (i.kind is not None and i.kind.kind.value in args.kind))
             and (not args.porter or (i.porter is not None and i.porter.porter.value in args.porter))
             and (not wanted or i.op in wanted)]
    fmt = output_format(args)
    if not items and (args.status or args.family or args.kind or args.porter or wanted):
        print(_why_empty(checkout, args.status or ()), file=sys.stderr)
    if fmt == "json":
        print(report.to_json(items))
    elif args.markdown:
        print(report.to_markdown(items, checkout.rel(checkout.native_functions)), end="")
    else:
        print_table(f"MPS backlog of {checkout.root}", report.COLUMNS, [report.row(i) for i in items], fmt,
                    caption=report.status_counts(items))
    return 0
