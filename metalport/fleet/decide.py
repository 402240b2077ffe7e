"""`send_decision`: a reviewer's decision from any checkout, given to the workflow driving the run.

Without a Temporal address (or when no running workflow drives the run: a run started locally)
it returns None and `metalport review` resumes the run itself, as before. With one:

- an approval publishes here, in the reviewer's checkout: the run's worktree is rebuilt from the
  shared store (base commit + diff, Note [portable runs]), committed, and the PR opened (a remote
  and token configured here) or the PR bundle written under this checkout. No worker's disk is
  needed. The workflow is then told the run is published and ends without an activity.
- a rejection or an abort goes to the workflow as a signal (the rework needs a build machine); it
  waits like a local decision does: until the run is aborted, or, after a rejection, until the
  rework is back at the gate (or ended). Ctrl-C stops only the waiting: the decision is already
  the workflow's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from metalport.graph.records import Approve, Decision, Reject, decision_value
from metalport.run_record import RunRecord
from metalport.store import load_settings, open_store


def send_decision(root: Path, record: RunRecord, decision: Decision, poll_s: float = 0.5) -> RunRecord | None:
    """Signal `decision` to the workflow of `record`'s op and return the record it leads to, or None."""
    if load_settings(root).temporal is None or open_store(root) is None:
        return None
    return asyncio.run(_send(root, record, decision, poll_s))


async def _send(root: Path, record: RunRecord, decision: Decision, poll_s: float) -> RunRecord | None:
    from metalport.fleet.client import connect, decision_handle, fleet_settings

    settings, store = fleet_settings(root)
    client = await connect(settings)
    handle = await decision_handle(client, store, record.op)
    if handle is None:
        return None
    if isinstance(decision, Approve):
        from metalport.graph.runs import resume_run

        published = await asyncio.to_thread(resume_run, root, record.run_id, decision)
        await handle.signal("decide", {**decision_value(decision), "published": published.to_dict()})
        return published
    await handle.signal("decide", decision_value(decision))
    if not isinstance(decision, Reject):
        await handle.result()
        return store.get(record.run_id)
    while True:  # a rejection: back to edit, then the gate again (or an end)
        await asyncio.sleep(poll_s)
        now = store.get(record.run_id)
        if now is not None and (now.attempts > record.attempts and now.status != "running"
                                or now.status not in ("running", "awaiting-review")):
            return now
