"""diagnose: decide whether a failed attempt is retried (attempts and wall time left) or ends the run."""

from __future__ import annotations

import time

from metalport.graph.nodes._common import first_failure
from metalport.graph.state import PortState


def diagnose(state: PortState) -> dict:
    """Return the end status when attempts or wall time ran out; otherwise only the stage."""
    options = state["options"]
    max_attempts, wall_s = int(options.get("max_attempts", 3)), float(options.get("wall_time_s", 1800.0))
    attempts, failures = state.get("attempts", 0), state.get("failures") or []
    elapsed = time.time() - state.get("started_at", time.time()) - state.get("paused_s", 0.0)
    what = f"{state.get('failure_stage') or 'check'} failed: {first_failure(failures)}"
    if elapsed >= wall_s:
        return {"stage": "diagnose", "status": "budget-exhausted",
                "reason": f"wall time {elapsed:.0f} s reached the budget of {wall_s:.0f} s; last {what}"}
    if attempts >= max_attempts:
        return {"stage": "diagnose", "status": "failed",
                "reason": f"{what} after {attempts} attempt(s) (--max-attempts {max_attempts})"}
    return {"stage": "diagnose"}
