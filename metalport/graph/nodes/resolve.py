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
    The op is resolved in the base commit's tree (`sandbox.base_tree`), not in a dirty work tree.
    """
    from metalport.port import resolve_op
    from metalport.checkout import find_checkout

    from metalport.sandbox.base_tree import base_root

    runtime.context.executor()
    root = base_root(Path(state["repo_root"]), state["run_id"], state["options"].get("base", "HEAD"))
    resolution = resolve_op(find_checkout(root), state["op"])
    return {"stage": "resolve", "resolution": jsonable(resolution), "base_root": str(root)}
