"""test: conformance of the built kernels against the CPU reference, held-out cases included."""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from metalport.failure import Failure
from metalport.graph.context import RunContext
from metalport.graph.nodes._common import load_family, load_worktree, verdicts_with
from metalport.graph.state import PortState


def test(state: PortState, runtime: Runtime[RunContext]) -> dict:
    """Run the executor's tests; a report that is not ok without failures still fails (its reason),
    except one not judged (Note [not judged] in checks.report: calls skipped, or no host model), which
    reaches the gate marked "not judged" with its status and reason shown, never as a pass or a fail."""
    executor = runtime.context.executor()
    start = time.monotonic()
    plans = list(load_family(state).members)  # every member is tested
    failures, members, report = [], {}, None
    for plan in plans:  # the report shown: the first member's, or the first member's that does not pass
        one, found = executor.test(load_worktree(state).path, plan, held_out=True)
        members[plan.op] = one.status
        failures += list(found)
        if report is None or (one.status != "pass" and report.status == "pass"):
            report = one
    judged = getattr(report, "judged", report.status not in ("partial", "no-host-model"))
    if not failures and not report.ok() and judged:
        failures = [Failure("conformance", None, None, None,
                            f"conformance {report.status}: {report.reason or 'no verdict'}")]
    verdict = {"ok": not failures, "status": "fail" if failures else report.status, "executor": executor.name,
               "judged": bool(failures) or judged,
               "failures": len(failures),
               "first": str(failures[0]) if failures else None,
               "seconds": round(time.monotonic() - start, 3), "report": report.to_dict()}
    if len(plans) > 1:
        verdict["members"] = members
    update: dict = {"stage": "test", "failures": [f.to_dict() for f in failures], "failure_stage": "test",
                    "verdicts": verdicts_with(state, "test", verdict)}
    if not failures:
        update["gate_at"] = time.time()
    return update
