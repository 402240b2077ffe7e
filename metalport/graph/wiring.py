"""The migration graph: nodes and edges only, plus the routers (pure functions of the state).

resolve → plan → sandbox → baseline → edit → hostcheck → check → build → test → approve → rebase → publish; a base
tree that does not compile ends the run at baseline; a failure in edit, check, build or test goes
to diagnose, which returns to edit while attempts and wall time remain.
A rejection at the gate goes back to edit with the feedback; an abort ends the run. An approved
run whose base moved is re-planned by rebase and verified again before the gate (Note [rebase at
approval]).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from metalport.graph import nodes
from metalport.graph.context import RunContext
from metalport.graph.state import TERMINAL_STATUSES, PortState

NODE_NAMES = ("resolve", "plan", "sandbox", "baseline", "edit", "hostcheck", "check", "build", "test", "approve", "rebase", "publish",
              "diagnose")


def after_plan(state: PortState) -> str:
    """Stop when the plan cannot be carried out by the chosen model (needs-llm)."""
    return END if state.get("status") in TERMINAL_STATUSES else "sandbox"


def after_baseline(state: PortState) -> str:
    """Stop when the base tree does not compile (nothing the port did), else edit."""
    return END if state.get("status") in TERMINAL_STATUSES else "edit"


def after_edit(state: PortState) -> str:
    """End on a terminal status, diagnose an edit failure, else the host check."""
    if state.get("status") in TERMINAL_STATUSES:
        return END
    return "diagnose" if state.get("failures") else "hostcheck"


def after_hostcheck(state: PortState) -> str:
    """diagnose on host compile errors, else the contract check."""
    return "diagnose" if state.get("failures") else "check"


def after_check(state: PortState) -> str:
    """diagnose on contract failures, else build."""
    return "diagnose" if state.get("failures") else "build"


def after_build(state: PortState) -> str:
    """diagnose on compile failures, else test."""
    return "diagnose" if state.get("failures") else "test"


def after_test(state: PortState) -> str:
    """diagnose on conformance failures, else the approval gate."""
    return "diagnose" if state.get("failures") else "approve"


def after_diagnose(state: PortState) -> str:
    """Retry the edit unless diagnose ended the run."""
    return END if state.get("status") in TERMINAL_STATUSES else "edit"


def after_approve(state: PortState) -> str:
    """approve → rebase, reject → edit (with the feedback), abort → end."""
    return {"approve": "rebase", "reject": "edit"}.get(state.get("decision") or "", END)


def after_rebase(state: PortState) -> str:
    """publish, or edit when the rebase re-planned the run (verified again before the gate)."""
    if state.get("status") in TERMINAL_STATUSES:
        return END
    return "edit" if state.get("reverify") else "publish"


def build_graph() -> StateGraph:
    """The uncompiled graph; compile it with a checkpointer (`compile_graph`)."""
    graph = StateGraph(PortState, context_schema=RunContext)
    for name in NODE_NAMES:
        graph.add_node(name, getattr(nodes, name))
    graph.add_edge(START, "resolve")
    graph.add_edge("resolve", "plan")
    graph.add_conditional_edges("plan", after_plan, ["sandbox", END])
    graph.add_edge("sandbox", "baseline")
    graph.add_conditional_edges("baseline", after_baseline, ["edit", END])
    graph.add_conditional_edges("edit", after_edit, ["diagnose", "hostcheck", END])
    graph.add_conditional_edges("hostcheck", after_hostcheck, ["diagnose", "check"])
    graph.add_conditional_edges("check", after_check, ["diagnose", "build"])
    graph.add_conditional_edges("build", after_build, ["diagnose", "test"])
    graph.add_conditional_edges("test", after_test, ["diagnose", "approve"])
    graph.add_conditional_edges("diagnose", after_diagnose, ["edit", END])
    graph.add_conditional_edges("approve", after_approve, ["rebase", "edit", END])
    graph.add_conditional_edges("rebase", after_rebase, ["publish", "edit", END])
    graph.add_edge("publish", END)
    return graph


def compile_graph(checkpointer: Checkpointer) -> CompiledStateGraph:
    """The compiled graph with `checkpointer` (SqliteSaver for runs, MemorySaver in unit tests)."""
    return build_graph().compile(checkpointer=checkpointer)


def recursion_limit(max_attempts: int) -> int:
    """Supersteps a run may take: every node once, plus edit/hostcheck/check/build/test/diagnose per retry."""
    return len(NODE_NAMES) + 7 * (max_attempts + 1) + 10
