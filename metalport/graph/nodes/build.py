"""build: compile the edited kernels (emulated) or build PyTorch (macos) through the executor."""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from metalport.graph.context import RunContext
from metalport.graph.nodes._common import executor_verdict, load_family, load_worktree, verdicts_with
from metalport.graph.state import PortState


def build(state: PortState, runtime: Runtime[RunContext]) -> dict:
    """Build the worktree; compile errors become failures for diagnose."""
    executor = runtime.context.executor()
    start = time.monotonic()
    # one build per distinct kernel/host file pair of the members
    plans = list({(m.kernel_file, m.host_file): m for m in load_family(state).members}.values())
    failures = [f for plan in plans for f in executor.build(load_worktree(state).path, plan)]
    verdict = executor_verdict(executor.name, failures, start)
    return {"stage": "build", "failures": [f.to_dict() for f in failures], "failure_stage": "build",
            "verdicts": verdicts_with(state, "build", verdict)}
