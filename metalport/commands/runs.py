"""`metalport runs`: every run of the repository; `metalport runs show ID` for one run's evidence."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `runs` command and its `show` action."""
    parser = subparsers.add_parser("runs", help="list migration runs, or show one",
                                   description="List the repository's migration runs (id, op, status, stage, "
                                               "attempts, branch, age), or show one run's plan and evidence.")
    parser.add_argument("--repo", type=Path, default=None, help="PyTorch checkout (default: the enclosing one)")
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.set_defaults(func=run, action=None)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    show = actions.add_parser("show", help="one run's plan, verdicts and evidence")
    show.add_argument("run_id", metavar="ID")
    show.add_argument("--repo", type=Path, default=argparse.SUPPRESS, help="PyTorch checkout")
    show.add_argument("--transcript", action="store_true", help="also print the model transcript")
    show.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print the record as JSON")


def run(args: argparse.Namespace) -> int:
    """List or show runs."""
    from metalport.checkout import find_checkout

    root = find_checkout(args.repo).root
    if args.action == "show":
        return _show(root, args.run_id, transcript=args.transcript, as_json=args.json)
    return _list(root, as_json=args.json)


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def _list(root: Path, *, as_json: bool) -> int:
    from rich.table import Table

    from metalport.commands._console import table_console
    from metalport.graph import list_runs
    from metalport.graph.records import is_live

    records = list_runs(root)
    if as_json:
        print(json.dumps([r.to_dict() for r in records], sort_keys=True))
        return 0
    table = Table(title=f"metalport runs in {root}")
    for column in ("id", "op", "status", "stage", "attempts", "branch", "age"):
        table.add_column(column, overflow="fold")
    for r in records:
        status = r.status if r.status != "running" or is_live(root, r.run_id) else "running (stopped: resume it)"
        table.add_row(r.run_id, r.op, status, r.stage, str(r.attempts), r.branch or "-", _age(r.age_s()))
    # Piped output is not cut to 80 columns: ids and branches are what scripts grep for.
    console = table_console()
    console.print(table) if records else print(f"no runs in {root}")
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
