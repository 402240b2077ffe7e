"""Start and resume migration runs: the graph driven over checkpoints, one record per run.

A resume checks the thread first (`get_state().next/.interrupts`): an unknown id is an
UnknownRunError, never a fresh start. `driver.py` holds the run while it moves; `prune.py`
removes ended runs.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from langgraph.types import Command

from metalport.agent.provider import Provider
from metalport.errors import PipelineError, UnknownRunError, UsageError, filesystem_error
from metalport.graph.driver import Progress, RunDriver
from metalport.graph.provider import check_model, run_provider
from metalport.graph.prune import prune_runs
from metalport.graph.records import (
                                     Abort,
                                     Approve,
                                     Decision,
                                     Reject,
                                     RunOptions,
                                     decision_value,
                                     get_run,
                                     list_runs,
                                     next_step,
                                     repo_arg,
                                     run_dir,
                                     shared_store,
                                     write_record,
                                     )
from metalport.run_record import RunRecord, now_iso, repo_top
from metalport.graph.state import TERMINAL_STATUSES, PortState
from metalport.run_ids import new_run_id
from metalport.sandbox.worktree import branch_name
from metalport.store.portable import needs_relocation, relocate

__all__ = ["Abort", "Approve", "Decision", "Reject", "RunOptions", "RunRecord", "get_run", "list_runs",
           "prune_runs", "resume_run", "run_dir", "start_run"]


def start_run(repo_root: Path | str, op: str, options: RunOptions, *, run_id: str | None = None,
              progress: Progress | None = None, provider: Provider | None = None) -> RunRecord:
    """Run `op` from resolve to the approval gate (awaiting-review) or to an end; return its record.

    `provider` overrides the one `options.model` names (tests use a recipe table override).
    """
    root = repo_top(repo_root)
    name = op.strip().removeprefix("aten::")
    branch_name(name)  # rejects names that cannot be an op before anything is written
    check_model(options.model)
    _refuse_open_run(root, f"aten::{name}")
    _refuse_published(root, f"aten::{name}", options.base or "HEAD")
    run_id = run_id or new_run_id(name)
    directory = run_dir(root, run_id)
    if directory.exists():
        raise PipelineError(f"run {run_id} already exists",
                            hint=f"resume it with `metalport resume {run_id}{repo_arg(root)}`")
    provider = provider or run_provider(options, root, directory)  # a missing key fails before any record
    stamp = now_iso()
    first = RunRecord(run_id, f"aten::{name}", "running", "resolve", 0, None, None, stamp, stamp)
    store = shared_store(root)
    if store is not None:  # the unique live-run index refuses a second run of the op on any machine
        store.claim(first, store.settings.host_name())
    state: PortState = {
        "run_id": run_id, "op": f"aten::{name}", "repo_root": str(root), "options": options.to_dict(),
        "attempts": 0, "stage": "resolve", "failures": [], "verdicts": {}, "feedback": None, "decision": None,
        "usage": {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0},
        "started_at": time.time(), "paused_s": 0.0, "status": "running", "reason": None}
    driver = RunDriver(root, run_id, options, progress, provider)
    try:
        try:
            directory.mkdir(parents=True)
            write_record(first, directory)
        except OSError as err:
            raise filesystem_error(err, what="the run record",
                                   then=f"`run-migration aten::{name}{repo_arg(root)}` again") from None
        driver.__enter__()
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)  # the run never started: leave no record of it
        raise
    with driver:
        return driver.drive(state)


def resume_run(repo_root: Path | str, run_id: str, decision: Decision | None = None, *,
               progress: Progress | None = None, provider: Provider | None = None) -> RunRecord:
    """Continue `run_id` from its last checkpoint, or give the gate its decision; return the record.

    UnknownRunError for an id without record or checkpoint; PipelineError for approve/reject on a
    run that is not awaiting review, or for a run that already ended. Abort also drops a run that
    stopped before the gate (a crash): worktree and branch removed, the record kept.
    """
    root = repo_top(repo_root)
    record = get_run(root, run_id)
    if decision is not None and not isinstance(decision, (Approve, Reject, Abort)):
        raise UsageError(f"unknown decision {decision!r}", hint="use Approve(), Reject(feedback) or Abort()")
    with RunDriver(root, run_id, None, progress, provider) as driver:
        snapshot = driver.snapshot()
        if not snapshot.values:
            raise UnknownRunError(f"run {run_id} has a record but no checkpoint in {driver.db_path}",
                                  hint=f"start a new run with `run-migration {record.op}{repo_arg(root)}`")
        at_gate = bool(snapshot.interrupts) or (snapshot.next == ("approve",) and record.status == "awaiting-review")
        if driver.store is not None and record.status not in TERMINAL_STATUSES \
                and needs_relocation(snapshot.values, root):
            # A portable run: its worktree is rebuilt here from base + diff (Note [portable runs]).
            update = relocate(dict(snapshot.values), root, driver.store.portable(run_id))
            driver.graph.update_state(driver.config(3), update)
            snapshot = driver.snapshot()
        if at_gate:
            if decision is None:
                return driver.record_from({**snapshot.values, "stage": "approve"}, awaiting=True)
            return driver.drive(Command(resume=decision_value(decision)))
        if isinstance(decision, Abort) and record.status not in TERMINAL_STATUSES:
            values = dict(snapshot.values)
            values.update(status="aborted", reason=f"aborted by the user at stage {record.stage} (not at the gate)")
            return driver.finish(values)
        if decision is not None:
            raise PipelineError(f"run {run_id} is {record.status} at stage {record.stage}, not awaiting review",
                                hint=next_step(record, root))
        # A Ctrl-C can land after a node's writes were saved but before the next checkpoint:
        # `next` is then empty while that node's task (with its writes) is still pending, and
        # streaming from the checkpoint applies them and goes on.
        if snapshot.next or snapshot.tasks:
            # A run that failed on bad input had its worktree removed: nothing to continue. After an
            # internal error (worktree kept) or a publish error (approved work kept) a resume retries.
            if record.status in TERMINAL_STATUSES and record.worktree is None and record.stage != "publish":
                raise PipelineError(f"run {run_id} ended {record.status}: {record.reason}",
                                    hint=f"start a new run with `run-migration {record.op}{repo_arg(root)}`")
            return driver.drive(None)
        return driver.finish(dict(snapshot.values))


def _refuse_open_run(root: Path, op: str) -> None:
    """PipelineError when another run of `op` still holds its branch (at the gate, running, stopped)."""
    for record in list_runs(root):
        if record.status in TERMINAL_STATUSES and record.worktree is None:
            continue
        if record.op != op and op.removeprefix("aten::") in _family_ops(root, record.run_id):
            raise PipelineError(f"run {record.run_id} ports {op} in its family change ({record.op} and others), "
                                f"{record.status} on {record.branch}",
                                hint=f"review that run (`metalport runs show {record.run_id}{repo_arg(root)}`)")
        if record.op == op:
            what = "is waiting for review" if record.status == "awaiting-review" else f"is {record.status}"
            command = f"metalport resume {record.run_id}"
            repo = repo_arg(root)
            raise PipelineError(f"run {record.run_id} of {op} {what} on {record.branch}", hint=(
                f"decide it first (`{command} --approve{repo}` / `{command} --abort{repo}`)"
                if record.status == "awaiting-review" else f"`{command}{repo}` or `{command} --abort{repo}`"))


def _refuse_published(root: Path, op: str, base: str) -> None:
    """PipelineError when a run published `op` on a branch whose change `base` does not hold yet: the
    port exists, unmerged (planning again would stack on it and find the op already native)."""
    import subprocess

    from metalport.graph.nodes._stack import change_landed

    for record in reversed(list_runs(root)):
        if record.op != op or record.status != "published" or not record.branch:
            continue
        found = subprocess.run(["git", "rev-parse", "-q", "--verify", f"refs/heads/{record.branch}^{{commit}}"],
                               cwd=root, capture_output=True, text=True, timeout=60)
        if found.returncode != 0 or change_landed(root, found.stdout.strip(), base):
            return  # its branch is gone, or its change is in the base: a new port starts from the base
        link = record.pr_url or record.bundle_path or record.branch
        raise PipelineError(f"{op} is already published by run {record.run_id} ({link}), not yet merged",
                            hint=f"merge that change (its PR, or `git am --keep-non-patch` of its bundle); to port "
                                 f"it again, delete branch {record.branch} first")


def _family_ops(root: Path, run_id: str) -> tuple[str, ...]:
    """The ops a run ports (its family.json: one for a run of one op), () when it has none."""
    import json

    path = run_dir(root, run_id) / "family.json"
    try:
        return tuple(json.loads(path.read_text(encoding="utf-8")).get("ops") or ()) if path.is_file() else ()
    except (OSError, ValueError):
        return ()
