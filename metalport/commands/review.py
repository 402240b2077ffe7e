"""`metalport review`: the runs waiting at the approval gate, and the decision on each.

`review` / `review list` lists them; `show ID` prints the plan, evidence and diff; `approve`,
`reject --feedback` and `abort` resume the run with that decision. A run that is not awaiting
review is an error naming the state it is in. Each decision refreshes the sweep dashboard.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from metalport.checks.report import counts_text
from metalport.commands._complete import complete_run_ids, with_completer
from metalport.commands._console import add_format_option, output_format, print_code, print_table
from metalport.commands._repo import add_repo_option, checkout_root


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `review` command and its actions."""
    parser = subparsers.add_parser("review", help="review runs waiting at the approval gate",
                                   description="List the runs awaiting review, show one, or approve, reject or "
                                               "abort it.")
    add_repo_option(parser)
    add_format_option(parser, json_help="list as JSON (same as --format json)")
    parser.set_defaults(func=run_command, action="list")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--repo", type=Path, default=argparse.SUPPRESS, help="PyTorch checkout")
    listing = actions.add_parser("list", parents=[common], help="runs awaiting review (the default)")
    add_format_option(listing, json_help="print JSON", default=argparse.SUPPRESS)
    for name, text in (("show", "plan, evidence and diff of a run"), ("approve", "approve and publish a run"),
                       ("abort", "drop a run: its worktree and branch are removed, its record kept")):
        action = actions.add_parser(name, parents=[common], help=text)
        with_completer(action.add_argument(
            "run_id", metavar="ID", help="a run awaiting review (see `metalport review`)"), complete_run_ids)
        if name == "show":
            action.add_argument("--file", default=None, metavar="NAME",
                                help="print one evidence file (a name `show` lists, or patch-series.mbox)")
    reject = actions.add_parser("reject", parents=[common], help="send a run back with feedback")
    with_completer(reject.add_argument("run_id", metavar="ID", help="a run awaiting review (see `metalport review`)"),
                   complete_run_ids)
    reject.add_argument("--feedback", required=True, help="what the reviewer wants changed")


def run_command(args: argparse.Namespace) -> int:
    """Dispatch one review action."""
    root = checkout_root(args)
    if args.action in (None, "list"):
        return _list(root, output_format(args))
    if args.action == "show":
        record = _awaiting(root, args.run_id)
        return _show_file(root, record, args.file) if getattr(args, "file", None) else _show(root, record)
    return _decide(root, args.action, _awaiting(root, args.run_id), getattr(args, "feedback", None))


def _awaiting(root: Path, run_id: str) -> Any:
    """The record of `run_id`; SweepError naming its state when it is not awaiting review."""
    from metalport.errors import SweepError
    from metalport.graph.records import next_step
    from metalport.graph.runs import get_run
    from metalport.sweep.model import status_of

    record = get_run(root, run_id)
    status = status_of(record)
    if status == "awaiting-review":
        return record
    raise SweepError(f"run {run_id} ({record.op}) is {status} at stage {record.stage}, not awaiting review",
                     hint=next_step(record, root))


def _list(root: Path, fmt: str) -> int:
    from metalport.graph.runs import list_runs
    from metalport.sweep.model import status_of

    unreadable: list[str] = []
    waiting = [r for r in list_runs(root, unreadable) if status_of(r) == "awaiting-review"]
    for line in unreadable:
        print(f"metalport: skipped {line}", file=sys.stderr)
    rows = [_summary(r) for r in sorted(waiting, key=lambda r: r.created_at)]
    if fmt == "table" and not rows:
        print("no runs await review")
        return 0
    print_table(f"runs awaiting review in {root}",
                ("id", "op", "branch", "attempts", "checks", "conformance", "cost", "age"),
                [(row["run_id"], row["op"], row["branch"], str(row["attempts"]), row["checks"], row["conformance"],
                  f"${row['cost_usd']:.4f}", _age_text(row["age_s"])) for row in rows],
                fmt, records=rows, no_wrap=("id", "op", "branch", "attempts", "cost", "age"))
    if fmt == "table":
        print(f"show one with `metalport review show ID{_repo_flag(root)}`; then `approve`, "
              "`reject --feedback` or `abort`")
    return 0


def _summary(record: Any) -> dict[str, Any]:
    """The list row of one awaiting run."""
    verdicts = dict(record.verdicts or {})
    conformance = verdicts.get("test", verdicts.get("conformance"))
    order = ("edit", "check", "build")  # pipeline order; run.json stores keys sorted
    checks = {k: verdicts[k] for k in sorted(verdicts, key=lambda k: (order.index(k) if k in order else 9, k))
              if k not in ("test", "conformance")}
    return {"run_id": record.run_id, "op": record.op, "branch": record.branch, "attempts": record.attempts,
            "checks": ", ".join(f"{k} {_verdict(v)}" for k, v in checks.items()) or "none recorded",
            "conformance": _verdict(conformance) if conformance is not None else "none recorded",
            "cost_usd": float((record.usage or {}).get("cost_usd", 0.0) or 0.0),
            "calls": int((record.usage or {}).get("calls", 0) or 0), "age_s": _age_s(record.created_at)}


def _verdict(value: Any) -> str:
    """A verdict in a few words: pass/partial/fail, with the counts of a conformance report (skips included)."""
    if isinstance(value, dict):
        report = value.get("report") or {}
        dtypes = report.get("dtypes") or []
        counts = f" ({counts_text(dtypes)}, {len(dtypes)} dtypes)" if dtypes else ""
        if "status" in value:
            judged = value.get("judged", value["status"] not in ("partial", "no-host-model"))  # Note [not judged]
            return ("" if judged else "not judged: ") + str(value["status"]) + counts
        if report.get("status") and value.get("ok", True):
            return str(report["status"]) + counts
        if "ok" in value:
            return ("pass" if value["ok"] else "fail") + counts
        failures = value.get("failures")
        return "pass" if not failures else f"fail ({len(failures)})"
    if isinstance(value, (list, tuple)):
        return "pass" if not value else f"fail ({len(value)})"
    if isinstance(value, bool):
        return "pass" if value else "fail"
    return str(value)


def _show(root: Path, record: Any) -> int:
    from rich.console import Console
    from rich.markup import escape

    from metalport.graph.nodes.publish import verdict_lines
    from metalport.graph.review import plan_lines, worktree_diff
    from metalport.graph.runs import run_dir

    console = Console(soft_wrap=True)  # nothing here is wrapped; a terminal wraps long lines itself
    row = _summary(record)
    console.print(f"[bold]run {escape(record.run_id)}[/]: {record.op} on branch {escape(str(record.branch))}, attempt "
                  f"{record.attempts}, awaiting review for {_age_text(row['age_s'])}, cost ${row['cost_usd']:.4f} "
                  f"({row['calls']} model calls)", highlight=False)
    console.print("\n[bold]plan[/]")
    for line in plan_lines(root, record.run_id):
        console.print(line, markup=False, highlight=False)
    console.print("\n[bold]verdicts[/]")
    for line in verdict_lines({"verdicts": dict(record.verdicts or {})}) or ["(none recorded)"]:
        console.print(line, markup=False, highlight=False)
    folder = run_dir(root, record.run_id)
    shared = _shared_artifacts(root, record) if not (folder / "plan.json").is_file() else None
    if shared is not None:  # a fleet run made on another machine
        host, stored = shared
        console.print(f"\n[bold]evidence[/] in {escape(stored.where)} (made on {host or 'another machine'}; "
                      f"`metalport review show {record.run_id} --file NAME` prints one)", highlight=False)
        for name, size in stored.files:
            console.print(f"  {name}  {size} bytes", highlight=False, markup=False)
        console.print(f"\n[bold]patch series[/] (git format-patch, from {escape(stored.where)})", highlight=False)
        print_code(stored.series, "diff", console)
    else:
        console.print(f"\n[bold]evidence[/] in {escape(str(folder))}", highlight=False)
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
            console.print(f"  {path.relative_to(folder)}  {path.stat().st_size} bytes", highlight=False, markup=False)
        console.print("\n[bold]diff[/]")
        diff = worktree_diff(record, stat=False, repo_root=root)
        print_code(diff, "diff", console)
    flag = _repo_flag(root)
    console.print(f"\ndecide with `metalport review approve {record.run_id}{flag}`, "
                  f"`metalport review reject {record.run_id}{flag} --feedback \"…\"` or "
                  f"`metalport review abort {record.run_id}{flag}`", highlight=False, markup=False)
    return 0


def _shared_artifacts(root: Path, record: Any) -> tuple[str | None, Any] | None:
    """(host, StoredArtifacts) a worker stored at the gate (database or artifacts remote), or None."""
    from metalport.graph.records import shared_store
    from metalport.store.portable import stored_artifacts

    store = shared_store(root)
    stored = stored_artifacts(root, store, record.run_id) if store is not None else None
    return (store.placement(record.run_id)[0], stored) if stored is not None else None


def _show_file(root: Path, record: Any, name: str) -> int:
    """Print one evidence file of a run (from its run folder here, else from what the worker stored)."""
    from metalport.errors import SweepError
    from metalport.graph.records import run_dir, shared_store
    from metalport.store.portable import stored_artifacts

    local = run_dir(root, record.run_id) / name
    if local.is_file() and local.resolve().is_relative_to(run_dir(root, record.run_id).resolve()):
        print(local.read_text(encoding="utf-8", errors="replace"), end="")
        return 0
    store = shared_store(root)
    stored = stored_artifacts(root, store, record.run_id) if store is not None else None
    text = stored.read(root, store, record.run_id, name) if stored is not None else None
    if text is None:
        raise SweepError(f"run {record.run_id} has no evidence file {name!r}",
                         hint=f"`metalport review show {record.run_id}` lists them")
    print(text, end="")
    return 0


def _decide(root: Path, action: str, record: Any, feedback: str | None) -> int:
    from metalport.errors import SweepError
    from metalport.fleet.decide import send_decision
    from metalport.graph.runs import Abort, Approve, Reject, resume_run
    from metalport.sweep.model import status_of

    if action == "reject" and not (feedback or "").strip():
        raise SweepError("--feedback is empty", hint="say what the reviewer wants changed")
    decision = {"approve": Approve, "abort": Abort}.get(action)
    choice = decision() if decision else Reject(feedback=feedback.strip())
    after = send_decision(root, record, choice)  # the fleet's workflow takes it, when one drives the run
    after = after or resume_run(root, record.run_id, choice, progress=_notes)
    _refresh(root)
    status = status_of(after)
    link = after.pr_url or after.bundle_path
    what = {"published": f"published: {link}", "rejected": f"rejected: {after.feedback or feedback}",
            "aborted": f"aborted; worktree and branch {record.branch} removed, record kept",
            "awaiting-review": "reworked with the feedback; it awaits review again"}.get(
        status, f"{status} at stage {after.stage}: {after.reason}")
    print(f"run {after.run_id} ({after.op}) {what}")
    expected = {"approve": ("published",), "abort": ("aborted",),
                "reject": ("rejected", "awaiting-review")}[action]
    return 0 if status in expected else 1


def _notes(event: dict) -> None:
    """Print the run's notes (who authors the commit when git has no identity), one line each on stderr."""
    if event.get("event") == "note":
        print(f"note: {event.get('message')}", file=sys.stderr)


def _refresh(root: Path) -> None:
    """Bring the latest sweep's dashboard up to date with the runs' records."""
    from metalport.errors import MetalportError
    from metalport.graph.runs import get_run
    from metalport.sweep import metalport_dir, refresh_dashboard

    def lookup(run_id: str) -> Any | None:
        try:
            return get_run(root, run_id)
        except MetalportError:
            return None

    refresh_dashboard(metalport_dir(root), lookup)


def _repo_flag(root: Path) -> str:
    """` --repo ROOT` when the command runs outside the checkout, so printed commands run as printed."""
    return "" if Path.cwd().resolve() == root.resolve() else f" --repo {root}"


def _age_s(created_at: Any) -> float:
    """Seconds since `created_at` (epoch seconds or an ISO-8601 string)."""
    from datetime import datetime, timezone

    if isinstance(created_at, (int, float)):
        return max(0.0, time.time() - float(created_at))
    stamp = datetime.fromisoformat(str(created_at).replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return max(0.0, time.time() - stamp.timestamp())


def _age_text(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m" if minutes else \
        f"{int(seconds)}s"

