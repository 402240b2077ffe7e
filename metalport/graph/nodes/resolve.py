"""resolve: the op's registry rows, backlog status, family, stub, MPS implementation and xfails."""

from __future__ import annotations

from pathlib import Path

from langgraph.runtime import Runtime

from metalport.graph.context import RunContext
from metalport.graph.nodes._common import jsonable
from metalport.graph.state import PortState


def resolve(state: PortState, runtime: Runtime[RunContext]) -> dict:
    """Resolve the op in the user's checkout; UnknownOpError (with close names) when it is not there.

    Also selects the executor, so a missing compiler stops the run before any worktree exists.
    """
    from metalport.agent.recipes.port import resolve_op
    from metalport.checkout import find_checkout

    checkout = find_checkout(Path(state["repo_root"]))
    resolution = resolve_op(checkout, state["op"])
    runtime.context.executor()
    return {"stage": "resolve", "resolution": jsonable(resolution)}
