"""The fleet workflow as released before per-repository queues and leases (kept to replay its histories).

`PortWorkflow`: one op on the fleet — run to the gate where the capability is, wait for the decision, publish.

Deterministic and coarse: the workflow only decides where and when; each activity is today's
pipeline call (`start_run` / `resume_run`) on a worker, and LangGraph keeps the run's state. The
workflow id comes from the repository and the op, so the engine refuses a second start of an op
that is still going. Waiting at the gate holds no process: the workflow sleeps on a condition until
the `decide` signal. A decision goes first to the `host.<name>` queue of the machine that holds
the worktree; when no worker takes it there within `publish_wait_s`, any worker of the capability
takes it through the portable run (its worktree rebuilt from base + diff).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, TimeoutError, TimeoutType

PORT_ACTIVITY = "metalport.port"
SWEEP_ACTIVITY = "metalport.sweep"
WORKFLOW_QUEUE = "metalport"  # every worker runs the workflows; activities go to capability and host queues
_NON_RETRYABLE = ["MetalportError"]


@workflow.defn(name="PortWorkflow")
class PortWorkflow:
    """Drive one run of one op; `request` = {repository, op, run_id, queue, options, heartbeat_s,
    publish_wait_s, attempts}. Returns the run's last record (as a dict)."""

    def __init__(self) -> None:
        self._decisions: list[dict] = []
        self._state: dict = {"status": "starting", "host": None, "stage": None}

    @workflow.run
    async def run(self, request: dict) -> dict:
        record = await self._port(request, None, request["queue"])
        while record.get("status") == "awaiting-review":
            self._state = {"status": "awaiting-review", "host": record.get("host"), "stage": "approve"}
            await workflow.wait_condition(lambda: bool(self._decisions))
            decision = self._decisions.pop(0)
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

    async def _decide(self, request: dict, decision: dict, host: str | None) -> dict:
        if host:
            try:
                return await self._port(request, decision, f"host.{host}", wait_s=request["publish_wait_s"])
            except ActivityError as err:
                if not (isinstance(err.cause, TimeoutError) and err.cause.type == TimeoutType.SCHEDULE_TO_START):
                    raise
                workflow.logger.info("host %s took no decision in %ss; any %s worker takes it", host,
                                     request["publish_wait_s"], request["queue"])
        return await self._port(request, decision, request["queue"])

    async def _port(self, request: dict, decision: dict | None, queue: str, wait_s: float | None = None) -> dict:
        heartbeat = timedelta(seconds=request["heartbeat_s"])
        payload = {"op": request["op"], "run_id": request["run_id"], "options": request["options"],
                   "decision": decision}
        return await workflow.execute_activity(
            PORT_ACTIVITY, payload, task_queue=queue, heartbeat_timeout=heartbeat,
            start_to_close_timeout=timedelta(hours=24),
            schedule_to_start_timeout=timedelta(seconds=wait_s) if wait_s else None,
            retry_policy=RetryPolicy(maximum_attempts=1 if wait_s else request["attempts"],
                                     initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30),
                                     non_retryable_error_types=_NON_RETRYABLE))


@workflow.defn(name="SweepWorkflow")
class SweepWorkflow:
    """A fleet sweep as a workflow (what the nightly Schedule starts): one activity on any worker."""

    @workflow.run
    async def run(self, request: dict) -> dict:
        return await workflow.execute_activity(
            SWEEP_ACTIVITY, request, task_queue=request["queue"], start_to_close_timeout=timedelta(minutes=30),
            retry_policy=RetryPolicy(maximum_attempts=2, non_retryable_error_types=_NON_RETRYABLE))
