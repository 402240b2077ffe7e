"""`PortWorkflow`: one op on the fleet — run to the gate where the capability is, wait for the decision, publish.

Deterministic and coarse: the workflow only decides where and when; each activity is today's
pipeline call (`start_run` / `resume_run`) on a worker, and LangGraph keeps the run's state. The
workflow id comes from the repository and the op, so the engine refuses a second start of an op
that is still going. Waiting at the gate holds no process: the workflow sleeps on a condition until
the `decide` signal. A decision goes first to the `host.<name>` queue of the machine that holds
the worktree; when no worker takes it there within `publish_wait_s`, any worker of the capability
takes it through the portable run (its worktree rebuilt from base + diff). An approval is
published by the reviewer's own checkout (`metalport.fleet.decide`), which then signals the
decision with the published record: the workflow ends with it, running nothing.

Every queue name carries the repository's key (`repository_queue`), so a worker of another
repository on the same server never sees these tasks. A busy run (another machine's lease not yet
expired) is not a failure: the activity waits for the lease, and the first activity retries
without an attempt limit (the lease, not a count, decides).

Versioning: workflows wait at the gate for days, across worker upgrades. A change in what the
workflow does goes behind `workflow.patched(ID)` so histories recorded by older code replay on the
new one; the ids in use are listed in PATCHES.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, TimeoutError, TimeoutType

PORT_ACTIVITY = "metalport.port"
SWEEP_ACTIVITY = "metalport.sweep"
CLEANUP_ACTIVITY = "metalport.cleanup"
LEGACY_WORKFLOW_QUEUE = "metalport"  # the shared workflow queue before queues carried the repository
_NON_RETRYABLE = ["MetalportError", "WrongRepository"]
PATCHES = ("reviewer-publishes", "lease-retries")  # workflow.patched ids, oldest first (see module docstring)


def repository_key(repository: str) -> str:
    """A short stable key of the repository's fleet-wide name (in queue names and workflow ids)."""
    import hashlib

    return hashlib.sha256(repository.encode()).hexdigest()[:12]


def repository_queue(repository: str, name: str) -> str:
    """The task queue `name` (mac, linux, host.NAME, or "" for workflows) of one repository."""
    key = repository_key(repository)
    return f"metalport.{key}.{name}" if name else f"metalport.{key}"


@workflow.defn(name="PortWorkflow")
class PortWorkflow:
    """Drive one run of one op; `request` = {repository, op, run_id, queue, options, heartbeat_s,
    publish_wait_s, attempts}. Returns the run's last record (as a dict)."""

    def __init__(self) -> None:
        self._decisions: list[dict] = []
        self._state: dict = {"status": "starting", "host": None, "stage": None}

    @workflow.run
    async def run(self, request: dict) -> dict:
        record = await self._port(request, None, self._queue(request, request["queue"]))
        while record.get("status") == "awaiting-review":
            self._state = {"status": "awaiting-review", "host": record.get("host"), "stage": "approve"}
            await workflow.wait_condition(lambda: bool(self._decisions))
            decision = self._decisions.pop(0)
            if decision.get("published") and workflow.patched("reviewer-publishes"):
                await self._clean_host(request, record.get("host"))
                record = {**decision["published"], "host": None}  # published by the reviewer's checkout
                break
            self._state = {**self._state, "status": f"deciding ({decision.get('decision')})"}
            record = await self._decide(request, decision, record.get("host"))
        self._state = {"status": record.get("status"), "host": record.get("host"), "stage": record.get("stage")}
        return record

    @workflow.signal(name="decide")
    def decide(self, decision: dict) -> None:
        """The reviewer's decision: {"decision": "approve" | "reject" | "abort", "feedback": ...}."""
        self._decisions.append(decision)

    @workflow.query(name="state")
    def state(self) -> dict:
        """Where the run is: status, host, stage, decisions waiting."""
        return {**self._state, "pending_decisions": len(self._decisions)}

    async def _clean_host(self, request: dict, host: str | None) -> None:
        """Best effort: the machine that took the run to the gate removes its worktree and branch of it."""
        if not host:
            return
        try:
            await workflow.execute_activity(
                CLEANUP_ACTIVITY, {"run_id": request["run_id"], "op": request["op"],
                                   "repository": request.get("repository")},
                task_queue=self._queue(request, f"host.{host}"),
                schedule_to_start_timeout=timedelta(seconds=request["publish_wait_s"]),
                start_to_close_timeout=timedelta(minutes=5), retry_policy=RetryPolicy(maximum_attempts=2))
        except ActivityError:
            workflow.logger.info("host %s did not clean run %s's worktree (offline?)", host, request["run_id"])

    @staticmethod
    def _queue(request: dict, name: str) -> str:
        # Workflows started before queues carried the repository have no "repository_queues" flag.
        return repository_queue(request["repository"], name) if request.get("repository_queues") else name

    async def _decide(self, request: dict, decision: dict, host: str | None) -> dict:
        if host:
            try:
                return await self._port(request, decision, self._queue(request, f"host.{host}"),
                                        wait_s=request["publish_wait_s"])
            except ActivityError as err:
                if not (isinstance(err.cause, TimeoutError) and err.cause.type == TimeoutType.SCHEDULE_TO_START):
                    raise
                workflow.logger.info("host %s took no decision in %ss; any %s worker takes it", host,
                                     request["publish_wait_s"], request["queue"])
        return await self._port(request, decision, self._queue(request, request["queue"]))

    async def _port(self, request: dict, decision: dict | None, queue: str, wait_s: float | None = None) -> dict:
        heartbeat = timedelta(seconds=request["heartbeat_s"])
        payload = {"op": request["op"], "run_id": request["run_id"], "options": request["options"],
                   "decision": decision, "repository": request.get("repository")}
        # The lease decides whether a run is busy, not a count: unlimited attempts (0) since "lease-retries".
        attempts = 0 if workflow.patched("lease-retries") else request["attempts"]
        return await workflow.execute_activity(
            PORT_ACTIVITY, payload, task_queue=queue, heartbeat_timeout=heartbeat,
            start_to_close_timeout=timedelta(hours=24),
            schedule_to_start_timeout=timedelta(seconds=wait_s) if wait_s else None,
            retry_policy=RetryPolicy(maximum_attempts=1 if wait_s else attempts,
                                     initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30),
                                     non_retryable_error_types=_NON_RETRYABLE))


@workflow.defn(name="SweepWorkflow")
class SweepWorkflow:
    """A fleet sweep as a workflow (what the nightly Schedule starts): one activity on any worker."""

    @workflow.run
    async def run(self, request: dict) -> dict:
        queue = repository_queue(request["repository"], request["queue"]) if request.get("repository") \
            else request["queue"]
        return await workflow.execute_activity(
            SWEEP_ACTIVITY, request, task_queue=queue, start_to_close_timeout=timedelta(minutes=30),
            retry_policy=RetryPolicy(maximum_attempts=2, non_retryable_error_types=_NON_RETRYABLE))
