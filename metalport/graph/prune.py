"""Prune ended runs: their records, checkpoints and base snapshots, never a run that can go on."""

from __future__ import annotations

import shutil
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from metalport.errors import UsageError
from metalport.sandbox.base_tree import remove_snapshot
from metalport.graph.records import is_live, list_runs, repo_arg, run_dir, shared_store
from metalport.run_record import RunRecord, metalport_dir, repo_top
from metalport.graph.state import PRUNABLE_DEFAULT, TERMINAL_STATUSES


def prune_runs(repo_root: Path | str, statuses: tuple[str, ...] = PRUNABLE_DEFAULT, *,
               older_than_s: float = 0.0, dry_run: bool = False) -> tuple[list[RunRecord], list[tuple[RunRecord, str]]]:
    """Remove the records and checkpoints of ended runs in `statuses` older than `older_than_s`.

    Returns (pruned, kept with the reason). UsageError for a status that has not ended (running,
    awaiting-review): those are decided with `metalport resume`, never pruned. A run that still
    has a worktree (kept after an internal error, so a resume can retry it) or holds its lock is kept.
    """
    open_ = [s for s in statuses if s not in TERMINAL_STATUSES]
    if open_:
        raise UsageError(f"runs that are {', '.join(open_)} are never pruned",
                         hint="end them first with `metalport resume ID --abort`")
    root = repo_top(repo_root)
    if shared_store(root) is not None:
        raise UsageError("runs prune works on the embedded (SQLite) state only",
                         hint="unset METALPORT_DATABASE_URL to prune this checkout's local runs")
    pruned: list[RunRecord] = []
    kept: list[tuple[RunRecord, str]] = []
    now = time.time()
    chosen = [r for r in list_runs(root) if r.status in statuses and r.age_s(now) >= older_than_s]
    if not dry_run:
        from metalport.graph.nodes._stack import prune_stack_refs

        prune_stack_refs(root)  # refs of stacks already decided (left by runs that ended before they were dropped)
    if not chosen or dry_run:
        return chosen, kept
    with closing(sqlite3.connect(str(metalport_dir(root) / "state.sqlite"), timeout=30)) as conn:
        saver = SqliteSaver(conn)
        for record in chosen:
            if record.worktree and Path(record.worktree).is_dir():
                kept.append((record, f"its worktree {record.worktree} is kept for "
                                     f"`metalport resume {record.run_id}{repo_arg(root)}`"))
            elif is_live(root, record.run_id):
                kept.append((record, "a process still holds it"))
            else:
                forget_run(root, record.run_id, saver)
                pruned.append(record)
    return pruned, kept


def forget_run(root: Path, run_id: str, checkpointer: SqliteSaver) -> None:
    """Remove a run's base snapshot, stack ref, checkpoints and folder (record, plan, evidence, lock file)."""
    from metalport.graph.nodes._stack import drop_stack_ref

    remove_snapshot(root, run_id)
    drop_stack_ref(root, run_id)
    checkpointer.delete_thread(run_id)
    shutil.rmtree(run_dir(root, run_id), ignore_errors=True)
