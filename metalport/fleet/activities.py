"""The fleet's activities: today's pipeline calls, run by a worker in its own checkout.

`port` starts a run (first attempt) or resumes it (a retry after a dead worker, or a decision from
the gate) and returns the run's record with the host that holds its worktree. It runs the blocking
pipeline in a thread and heartbeats the run's stage, so when the worker dies the heartbeat timeout
hands the activity to another worker, which resumes from the shared checkpoint.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from metalport.errors import MetalportError
from metalport.fleet.workflow import PORT_ACTIVITY, SWEEP_ACTIVITY
from metalport.graph.state import TERMINAL_STATUSES


@dataclass
class FleetActivities:
    """The activities of one worker: its checkout, its host name and the executor it builds with."""

    root: Path
    host: str
    executor: str
    heartbeat_s: float = 30.0
    _stage: dict = field(default_factory=dict)

    @activity.defn(name=PORT_ACTIVITY)
    async def port(self, request: dict) -> dict:
        """Start or resume the run, to the gate or an end; its record as a dict with `host`."""
        stage = {"node": "start"}
        done = threading.Event()
        task = asyncio.ensure_future(asyncio.to_thread(self._port, request, stage, done))
        while not done.is_set():
            activity.heartbeat({"stage": stage["node"], "host": self.host})
            await asyncio.wait([task], timeout=max(0.2, self.heartbeat_s / 4))
        return await task

    def _port(self, request: dict, stage: dict, done: threading.Event) -> dict:
        from metalport.graph.records import Abort, Approve, Reject, RunOptions
        from metalport.graph.runs import resume_run, start_run
        from metalport.store import open_store

        def progress(event: dict) -> None:
            if event.get("event") == "start":
                stage["node"] = event.get("node")

        try:
            store = open_store(self.root)
            if store is None:
                raise ApplicationError("the worker's checkout has no database configured", type="MetalportError",
                                       non_retryable=True)
            run_id, decision = request["run_id"], request.get("decision")
            if store.is_live(run_id):
                # The database has not yet seen the previous holder die (a host that vanished without
                # closing its connection): retry with backoff instead of failing the workflow.
                raise ApplicationError(f"run {run_id} is still held by {store.placement(run_id)[0] or 'another host'}",
                                       type="RunBusy")
            record = store.get(run_id)
            if record is None:
                options = RunOptions.from_dict({**request["options"], "executor": self.executor})
                record = start_run(self.root, request["op"], options, run_id=run_id, progress=progress)
            elif record.status in TERMINAL_STATUSES and decision is None:
                pass  # a retry after the run ended (the worker died while reporting)
            else:
                choice = None
                if decision is not None:
                    kind = decision.get("decision")
                    choice = Approve() if kind == "approve" else Abort() if kind == "abort" else Reject(
                        str(decision.get("feedback") or ""))
                record = resume_run(self.root, run_id, choice, progress=progress)
            host, _ = store.placement(run_id)
            return {**record.to_dict(), "host": host}
        except MetalportError as err:
            # A run that ended on bad input has its record; anything else is the caller's mistake.
            raise ApplicationError(str(err), type="MetalportError", non_retryable=True) from None
        finally:
            done.set()

    @activity.defn(name=SWEEP_ACTIVITY)
    async def sweep(self, request: dict) -> dict:
        """A fleet sweep from this worker's checkout (the nightly Schedule's job); the report's counts."""
        from metalport.fleet.sweep import FleetSweepOptions, fleet_sweep

        options = FleetSweepOptions.from_dict(request)
        try:
            # Its own loop in a thread: the scan and database calls block, and must not stall heartbeats.
            report = await asyncio.to_thread(asyncio.run, fleet_sweep(self.root, options))
        except MetalportError as err:
            raise ApplicationError(str(err), type="MetalportError", non_retryable=True) from None
        return {"counts": report.counts(), "started": list(report.started_runs)}
