"""The fleet's activities: today's pipeline calls, run by a worker in its own checkout.

`port` starts a run (first attempt) or resumes it (a retry after a dead or stopped worker, or a
decision from the gate) and returns the run's record with the host that holds its worktree. The
pipeline runs in a thread holding the run's lease (Note [run leases] in `metalport.store.pg`);
the activity heartbeats only while that thread lives and the lease is still this machine's, so a
stopped worker's activity times out and moves to another worker, which waits for the lease to
lapse and resumes from the shared checkpoint. A worker that wakes up without its lease stops
that run at its next write, removes its worktree here and says so. A cancelled activity (the
workflow cancelled, or Temporal moved the activity on) gives the lease up the same way, without
touching the run's shared record: the next attempt retries its last step.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from metalport.errors import MetalportError
from metalport.fleet.workflow import CLEANUP_ACTIVITY, PORT_ACTIVITY, SWEEP_ACTIVITY
from metalport.graph.state import TERMINAL_STATUSES


@dataclass
class FleetActivities:
    """The activities of one worker: its checkout, its host name, the executor it builds with, and the
    repository it serves (a task of another one is refused)."""

    root: Path
    host: str
    executor: str
    repository: str
    heartbeat_s: float = 30.0
    concurrency: int = 1  # pipelines at once across the capability and host queues (a Mac builds one at a time)
    _slots: asyncio.Semaphore | None = field(default=None, repr=False)

    async def _take_slot(self) -> None:
        """Wait for one of the worker's `concurrency` pipeline slots, heartbeating while waiting."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        while self._slots.locked():
            activity.heartbeat({"stage": "waiting for a slot", "host": self.host})
            await asyncio.sleep(max(0.2, self.heartbeat_s / 4))
        await self._slots.acquire()  # free now: returns at once (one event loop, no await in between)

    def _refuse_other_repository(self, request: dict) -> None:
        theirs = request.get("repository")
        if theirs and theirs != self.repository:
            message = (f"worker {self.host} serves repository {self.repository} and refused a task of {theirs} "
                       f"(run {request.get('run_id', '?')}): queues are per repository, check the workers' "
                       "METALPORT_REPOSITORY / database.repository")
            print(f"metalport worker: REFUSED: {message}", file=sys.stderr, flush=True)
            raise ApplicationError(message, type="WrongRepository", non_retryable=True)

    @activity.defn(name=PORT_ACTIVITY)
    async def port(self, request: dict) -> dict:
        """Start or resume the run, to the gate or an end; its record as a dict with `host`."""
        from metalport.store import held_lease

        self._refuse_other_repository(request)
        run_id = request["run_id"]
        stage = {"node": "start"}
        done, cancelled = threading.Event(), threading.Event()
        workflow_id = activity.info().workflow_id
        await self._take_slot()
        task = asyncio.ensure_future(asyncio.to_thread(self._port, request, stage, done, cancelled, workflow_id))
        task.add_done_callback(lambda _: self._slots.release())  # the slot is free once the pipeline thread is
        def own_lease() -> object | None:
            # This attempt's lease only: a cancelled earlier attempt of the run in this process may
            # still hold (and have lost) one until its thread reaches its next write.
            lease = held_lease(run_id)
            return lease if lease is not None and lease.owner is stage.get("thread") else None

        try:
            while not done.is_set():
                lease = own_lease()
                if lease is None or lease.lost_to is None:  # waiting for the lease, or driving under it
                    activity.heartbeat({"stage": stage["node"], "host": self.host})
                await asyncio.wait([task], timeout=max(0.2, self.heartbeat_s / 4))
        except asyncio.CancelledError:
            cancelled.set()
            lease = own_lease()
            if lease is not None and lease.lost_to is None:
                lease.lost_to = "the fleet (this attempt was cancelled)"  # the next write stops the pipeline
            raise
        return await task

    def _port(self, request: dict, stage: dict, done: threading.Event, cancelled: threading.Event,
              workflow_id: str) -> dict:
        """One attempt of the port activity: start or resume the run under this attempt's lease, and
        map each way it stops to the Temporal error type the workflow retries on or not. Longer
        than most: its two callbacks close over the attempt's run id, stage and lease state, and
        the except clauses are the one table of outcomes."""
        from metalport.graph.records import RunOptions
        from metalport.graph.runs import resume_run, start_run
        from metalport.sandbox.runner import commands_checked
        from metalport.errors import RunLocked
        from metalport.store import DatabaseError, LeaseLost, RunBusy, held_lease, open_store

        run_id, decision = request["run_id"], request.get("decision")
        recorded = {"workflow": False}

        stage["thread"] = threading.current_thread()  # the pipeline's thread: its lease is this attempt's

        def progress(event: dict) -> None:
            lease = held_lease(run_id)
            lease = lease if lease is not None and lease.owner is threading.current_thread() else None
            if lease is not None and lease.lost_to is not None:
                lease.check()  # raises LeaseLost: stop before the next node starts
            if lease is not None:
                lease.progressed()
            if not recorded["workflow"]:
                store.set_workflow(run_id, workflow_id)
                recorded["workflow"] = True
            if event.get("event") == "start":
                stage["node"] = event.get("node")

        def stop_if_lost() -> None:
            # A running build asks this every second (commands_checked): once this attempt's lease is
            # lost (the machine slept past it, the attempt was cancelled, no progress for stall_s),
            # the build is killed and LeaseLost stops the pipeline, instead of building to the end.
            lease = held_lease(run_id)
            if lease is not None and lease.owner is stage.get("thread") and lease.lost_to is not None:
                lease.check()

        try:
            store = open_store(self.root)
            if store is None:
                raise ApplicationError("the worker's checkout has no database configured", type="MetalportError",
                                       non_retryable=True)
            self._wait_for_lease(store, run_id, cancelled)
            record = store.get(run_id)
            if record is None:
                options = RunOptions.from_dict({**request["options"], "executor": self.executor})
                with commands_checked(stop_if_lost):
                    record = start_run(self.root, request["op"], options, run_id=run_id, progress=progress)
            elif record.status in TERMINAL_STATUSES and decision is None:
                pass  # a retry after the run ended (the worker died while reporting)
            else:
                with commands_checked(stop_if_lost):
                    record = resume_run(self.root, run_id, _choice(decision), progress=progress)
            store.set_workflow(run_id, workflow_id)
            host, _ = store.placement(run_id)
            return {**record.to_dict(), "host": host}
        except LeaseLost as err:
            self._stand_down(run_id, request["op"], str(err))
            raise ApplicationError(str(err), type="LeaseLost") from None
        except (RunBusy, RunLocked) as err:
            # Taken between the wait and the hold, or this worker's cancelled attempt still unwinding
            # holds the run's local lock: the retry waits for the lease (and the lock) again.
            raise ApplicationError(str(err), type="RunBusy") from None
        except DatabaseError as err:
            # An outage longer than the worker waits: Temporal retries the attempt (its last step).
            raise ApplicationError(str(err), type="DatabaseUnavailable") from None
        except MetalportError as err:
            # A run that ended on bad input has its record; anything else is the caller's mistake.
            raise ApplicationError(str(err), type="MetalportError", non_retryable=True) from None
        finally:
            done.set()

    def _wait_for_lease(self, store: object, run_id: str, cancelled: threading.Event) -> None:
        """Block while another machine's lease on the run has not lapsed (a stopped holder loses it)."""
        said = False
        while not cancelled.is_set():
            held = store.lease(run_id)  # type: ignore[attr-defined]
            if held is None:
                return
            if not said:
                print(f"metalport worker: run {run_id} is leased by {held['host']} for {held['left_s']:.0f}s more; "
                      "waiting for the lease", file=sys.stderr, flush=True)
                said = True
            time.sleep(min(max(0.2, float(held["left_s"]) + 0.1), 2.0))
        raise ApplicationError(f"run {run_id}: cancelled while waiting for its lease", type="Cancelled")

    def _stand_down(self, run_id: str, op: str, why: str) -> None:
        """After a lost lease: remove this machine's worktree (and branch) of the run and say so."""
        from metalport.sandbox.worktree import branch_name, discard_worktree, worktrees_dir

        import git

        repo = git.Repo(self.root)
        path = worktrees_dir(repo) / run_id
        try:
            discard_worktree(repo, path)  # a locked one too (Note [interrupted worktree add])
        except (git.GitCommandError, OSError):
            pass  # best effort: the run lives on at the machine that holds its lease
        branch = branch_name(op)
        subprocess.run(["git", "branch", "-D", branch], cwd=self.root, capture_output=True, check=False)
        print(f"metalport worker: {why}; {'standing down: ' if 'lease' in why else ''}worktree {path} and branch "
              f"{branch} removed here", file=sys.stderr, flush=True)

    @activity.defn(name=CLEANUP_ACTIVITY)
    async def cleanup(self, request: dict) -> str:
        """After the reviewer's checkout published the run: remove this machine's worktree and branch of it."""
        from metalport.sandbox.worktree import branch_name, worktrees_dir

        import git

        self._refuse_other_repository(request)
        path = worktrees_dir(git.Repo(self.root)) / request["run_id"]
        if not path.exists():
            return "nothing here"
        await asyncio.to_thread(self._stand_down, request["run_id"], request["op"],
                                f"run {request['run_id']} was published by the reviewer's checkout")
        return f"removed {path} and {branch_name(request['op'])}"

    @activity.defn(name=SWEEP_ACTIVITY)
    async def sweep(self, request: dict) -> dict:
        """A fleet sweep from this worker's checkout (the nightly Schedule's job); the report's counts."""
        from metalport.fleet.sweep import FleetSweepOptions, fleet_sweep

        self._refuse_other_repository(request)
        options = FleetSweepOptions.from_dict(request)
        try:
            # Its own loop in a thread: the scan and database calls block, and must not stall heartbeats.
            report = await asyncio.to_thread(asyncio.run, fleet_sweep(self.root, options))
        except MetalportError as err:
            raise ApplicationError(str(err), type="MetalportError", non_retryable=True) from None
        return {"counts": report.counts(), "started": list(report.started_runs)}


def _choice(decision: dict | None) -> object:
    """The reviewer's decision a workflow signal carried, as the graph takes it (None: no decision)."""
    from metalport.graph.records import Abort, Approve, Reject

    if decision is None:
        return None
    kind = decision.get("decision")
    if kind == "approve":
        return Approve()
    if kind == "abort":
        return Abort()
    return Reject(str(decision.get("feedback") or ""))
