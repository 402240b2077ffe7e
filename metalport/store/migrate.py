"""`migrate_local_runs`: copy a checkout's embedded state (run.json files, SQLite checkpoints) to the shared store.

Idempotent: records are upserted and checkpoints are put under their own ids, so a second migrate
copies nothing new. A run whose op already has another live run in the database is reported and
left out (the one-live-run-per-op rule holds across machines).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from metalport.run_record import RunRecord, metalport_dir
from metalport.store.pg import RunStore
from metalport.store.portable import capture


@dataclass(frozen=True)
class MigrateReport:
    """What a migrate copied and what it left out (run id → reason)."""

    runs: int
    checkpoints: int
    skipped: dict[str, str]


def migrate_local_runs(root: Path, store: RunStore) -> MigrateReport:
    """Copy every local run record, its plan and its checkpoints to `store`."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    mdir = metalport_dir(root)
    records = []
    for path in sorted((mdir / "runs").glob("*/run.json")):
        try:
            records.append(RunRecord.from_dict(json.loads(path.read_text(encoding="utf-8"))))
        except (ValueError, TypeError):
            continue
    host = store.settings.host_name()
    skipped: dict[str, str] = {}
    copied = checkpoints = 0
    database = mdir / "state.sqlite"
    conn = sqlite3.connect(str(database), check_same_thread=False) if database.is_file() else None
    try:
        local = SqliteSaver(conn) if conn is not None else None
        with store.saver() as shared:
            for record in records:
                live = store.live_run(record.op) if record.status in ("running", "awaiting-review") else None
                if live is not None and live.run_id != record.run_id:
                    skipped[record.run_id] = f"{record.op} already has live run {live.run_id} in the database"
                    continue
                store.put(record, host)
                plan = mdir / "runs" / record.run_id / "plan.json"
                if plan.is_file():
                    store.put_file(record.run_id, "plan.json", plan.read_text(encoding="utf-8"))
                copied += 1
                if local is not None:
                    checkpoints += _copy_thread(local, shared, record.run_id)
                    _share_worktree(local, store, record.run_id, host)
    finally:
        if conn is not None:
            conn.close()
    return MigrateReport(copied, checkpoints, skipped)


def _share_worktree(local: object, store: RunStore, run_id: str, host: str) -> None:
    """Record base + diff of the run's worktree when it is in this checkout (a run at the gate)."""
    latest = local.get_tuple({"configurable": {"thread_id": run_id}})  # type: ignore[attr-defined]
    worktree = latest.checkpoint.get("channel_values", {}).get("worktree") if latest else None
    captured = capture(worktree or {})
    if captured is not None:
        store.put_portable(run_id, *captured, host=host)


def _copy_thread(source: object, target: object, thread_id: str) -> int:
    """Put every checkpoint of `thread_id` (oldest first) and its pending writes into `target`."""
    tuples = list(source.list({"configurable": {"thread_id": thread_id}}))  # type: ignore[attr-defined]
    for item in reversed(tuples):
        parent = item.parent_config or {"configurable": {"thread_id": thread_id,
                                                         "checkpoint_ns": item.config["configurable"].get(
                                                             "checkpoint_ns", "")}}
        saved = target.put(parent, item.checkpoint, item.metadata,  # type: ignore[attr-defined]
                           item.checkpoint.get("channel_versions", {}))
        by_task: dict[str, list[tuple[str, object]]] = {}
        for task_id, channel, value in item.pending_writes or ():
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            target.put_writes(saved, writes, task_id)  # type: ignore[attr-defined]
    return len(tuples)
