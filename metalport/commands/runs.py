"""`metalport runs`: every run of the repository; `runs show ID` for one run's evidence; `runs prune`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from metalport.commands._complete import complete_run_ids, with_completer
from metalport.commands._console import add_format_option, output_format, print_table
from metalport.commands._repo import add_repo_option, checkout_root
from metalport.graph.state import PRUNABLE_DEFAULT, TERMINAL_STATUSES


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `runs` command and its `show` action."""
    parser = subparsers.add_parser("runs", help="list migration runs, or show one",
                                   description="List the repository's migration runs (id, op, status, stage, "
                                               "attempts, branch, age), or show one run's plan and evidence.")
    add_repo_option(parser)
    add_format_option(parser, json_help="print a JSON list (same as --format json)")
    parser.set_defaults(func=run, action=None)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    show = actions.add_parser("show", help="one run's plan, verdicts and evidence")
    with_completer(show.add_argument("run_id", metavar="ID", help="the run id (see `metalport runs`)"),
                   complete_run_ids)
    show.add_argument("--repo", type=Path, default=argparse.SUPPRESS, help="PyTorch checkout")
    show.add_argument("--transcript", action="store_true", help="also print the model transcript")
    show.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print the record as JSON")
    prune = actions.add_parser("prune", help="delete the records of ended runs (default: failed, aborted, "
                                             "needs-llm, budget-exhausted, base-broken)",
                               description="Delete the records and checkpoints of ended runs. Runs that are "
                                           "running or awaiting review are never pruned; a run that kept its "
                                           "worktree (to be resumed) is kept.")
    prune.add_argument("--repo", type=Path, default=argparse.SUPPRESS, help="PyTorch checkout")
    prune.add_argument("--status", type=_statuses, action="extend", metavar="S",
                       help=f"only runs with these statuses (comma-separated or repeated; one of "
                            f"{', '.join(sorted(TERMINAL_STATUSES))})")
    prune.add_argument("--older-than", type=_duration, default=0.0, metavar="D", dest="older_than_s",
                       help="only runs created at least D ago: 30m, 12h, 7d, 2w (default: any age)")
    prune.add_argument("--dry-run", action="store_true", help="list what would be pruned, delete nothing")


def _statuses(text: str) -> list[str]:
    """`--status a,b`: each must be a status a run can end in."""
    items = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in items if s not in TERMINAL_STATUSES]
    if bad or not items:
        raise argparse.ArgumentTypeError(f"invalid status {', '.join(bad) or repr(text)} (choose from "
                                         f"{', '.join(sorted(TERMINAL_STATUSES))}; running and awaiting-review "
                                         "runs are never pruned)")
    return items


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _duration(text: str) -> float:
    """`30m`, `12h`, `7d`, `2w` (or seconds) as seconds."""
    value, unit = text.strip()[:-1], text.strip()[-1:]
    if unit.isdigit():
        value, unit = text.strip(), "s"
    try:
        seconds = float(value) * _UNITS[unit]
    except (KeyError, ValueError):
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (use e.g. 30m, 12h, 7d or 2w)") from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: negative")
    return seconds


def run(args: argparse.Namespace) -> int:
    """List, show or prune runs."""
    root = checkout_root(args)
    if args.action == "show":
        return _show(root, args.run_id, transcript=args.transcript, as_json=args.json)
    if args.action == "prune":
        return _prune(root, tuple(args.status or PRUNABLE_DEFAULT), args.older_than_s, args.dry_run)
    return _list(root, output_format(args))


def _prune(root: Path, statuses: tuple[str, ...], older_than_s: float, dry_run: bool) -> int:
    from metalport.graph import prune_runs

    pruned, kept = prune_runs(root, statuses, older_than_s=older_than_s, dry_run=dry_run)
    verb = "would prune" if dry_run else "pruned"
    for record in pruned:
        print(f"{verb} {record.run_id} ({record.op}, {record.status}, {_age(record.age_s())} old)")
    for record, why in kept:
        print(f"kept {record.run_id} ({record.status}): {why}")
    print(f"{verb} {len(pruned)} run{'s' if len(pruned) != 1 else ''} ({', '.join(statuses)}"
          f"{f', older than {_age(older_than_s)}' if older_than_s else ''})")
    return 0


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def _list(root: Path, fmt: str) -> int:
    from metalport.graph import list_runs
    from metalport.graph.records import is_live

    unreadable: list[str] = []
    records = list_runs(root, unreadable)
    for line in unreadable:
        print(f"metalport: skipped {line}", file=sys.stderr)
    if fmt == "json":
        print(json.dumps([r.to_dict() for r in records], sort_keys=True))
        return 0
    if not records and fmt == "table":
        print(f"no runs in {root}")
        return 0
    rows = []
    for r in records:
        status = r.status if r.status != "running" or is_live(root, r.run_id) else "running (stopped: resume it)"
        rows.append((r.run_id, r.op, status, r.stage, str(r.attempts), r.branch or "-", _age(r.age_s())))
    print_table(f"metalport runs in {root}", ("id", "op", "status", "stage", "attempts", "branch", "age"), rows,
                fmt, no_wrap=("id", "branch"))
    return 0


def _show(root: Path, run_id: str, *, transcript: bool, as_json: bool) -> int:
    from metalport.agent.transcript import read_transcript
    from metalport.graph import get_run, run_dir
    from metalport.graph.review import summary_lines

    record = get_run(root, run_id)
    if as_json:
        print(json.dumps(record.to_dict(), sort_keys=True))
        return 0
    for line in summary_lines(root, record):
        print(line)
    if record.reason:
        print(f"reason: {record.reason}")
    directory = run_dir(root, run_id)
    for name in ("evidence.json", "diff.patch", "bundle"):
        if (directory / name).exists():
            print(f"{name}: {directory / name}")
    if record.pr_url:
        print(f"pull request: {record.pr_url}")
    if transcript:
        path = directory / "transcript.jsonl"
        if not path.is_file():
            print("transcript: none (the recipe model makes no LLM calls)")
        for event in read_transcript(path) if path.is_file() else ():
            print(json.dumps(event, sort_keys=True))
    return 0
