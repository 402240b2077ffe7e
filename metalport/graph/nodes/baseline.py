"""baseline: before any edit, the executor checks the base tree (emulated: the plan's kernel file
type-checks); a base tree that does not compile ends the run as `base-broken`, never a port failure."""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from metalport.failure import Failure
from metalport.graph.context import RunContext
from metalport.graph.nodes._common import executor_verdict, load_plan, load_worktree, verdicts_with
from metalport.graph.state import PortState


def baseline(state: PortState, runtime: Runtime[RunContext]) -> dict:
    """Check the untouched worktree; failures end the run with one line (no diagnose, no model)."""
    executor = runtime.context.executor()
    start = time.monotonic()
    failures = executor.baseline(load_worktree(state).path, load_plan(state))
    verdict = executor_verdict(executor.name, failures, start)
    update: dict = {"stage": "baseline", "verdicts": verdicts_with(state, "baseline", verdict)}
    if failures:
        update.update(status="base-broken", reason=_reason(executor.name, failures[0]))
    return update


def _reason(tier: str, first: Failure) -> str:
    """`the base tree does not compile in the emulated tier: FILE:LINE: message`."""
    where = ":".join(str(p) for p in (first.file, first.line) if p is not None) or "the kernel file"
    return f"the base tree does not compile in the {tier} tier: {where}: {first.message}"
