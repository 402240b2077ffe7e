"""approve: the human gate. `interrupt()` comes first: a resumed node re-runs from its top."""

from __future__ import annotations

import time

from langgraph.types import interrupt

from metalport.graph.state import PortState

DECISIONS = ("approve", "reject", "abort")


def approve(state: PortState) -> dict:
    """Wait for the reviewer's decision: approve, reject (with feedback) or abort."""
    answer = interrupt({"run_id": state["run_id"], "op": state["op"], "attempts": state.get("attempts", 0)})
    decision = answer.get("decision") if isinstance(answer, dict) else None
    if decision not in DECISIONS:
        raise ValueError(f"unknown gate decision {answer!r}")
    paused = state.get("paused_s", 0.0) + max(0.0, time.time() - state.get("gate_at", time.time()))
    update: dict = {"stage": "approve", "decision": decision, "paused_s": paused}
    if decision == "reject":
        update["feedback"] = str(answer.get("feedback") or "")
    elif decision == "abort":
        update.update(status="aborted", reason="aborted by the reviewer at the gate")
    return update
