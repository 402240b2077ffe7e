"""The graph's routers and its loop, compiled with an in-memory checkpointer."""

from __future__ import annotations

from pathlib import Path

from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END
from langgraph.types import Command

from metalport.agent.recipe_provider import RecipeProvider
from metalport.graph.context import RunContext
from metalport.graph.records import RunOptions
from metalport.graph.wiring import (
                                    after_approve,
                                    after_rebase,
                                    after_baseline,
                                    after_build,
                                    after_check,
                                    after_diagnose,
                                    after_edit,
                                    after_hostcheck,
                                    after_plan,
                                    after_test,
                                    compile_graph,
                                    recursion_limit,
                                    )
from tests.graph.conftest import branches, git

FAIL = [{"kind": "contract", "file": "x.yaml", "line": 3, "column": None, "message": "row left on _mps"}]


def test_routers_are_pure_functions_of_the_state() -> None:
    assert after_plan({"status": "needs-llm"}) == END and after_plan({"status": "running"}) == "sandbox"
    assert after_baseline({"status": "base-broken"}) == END and after_baseline({"status": "running"}) == "edit"
    assert after_edit({"failures": FAIL}) == "diagnose" and after_edit({"failures": []}) == "hostcheck"
    assert (after_hostcheck({"failures": FAIL}), after_hostcheck({"failures": []})) == ("diagnose", "check")
    assert after_edit({"status": "rejected", "failures": []}) == END
    assert (after_check({"failures": FAIL}), after_check({"failures": []})) == ("diagnose", "build")
    assert (after_build({"failures": FAIL}), after_build({})) == ("diagnose", "test")
    assert (after_test({"failures": FAIL}), after_test({"failures": []})) == ("diagnose", "approve")
    assert after_diagnose({"status": "failed"}) == END and after_diagnose({"status": "running"}) == "edit"
    assert [after_approve({"decision": d}) for d in ("approve", "reject", "abort")] == ["rebase", "edit", END]
    assert [after_rebase(s) for s in ({"reverify": False}, {"reverify": True}, {"status": "failed"})] == \
        ["publish", "edit", END]
    assert recursion_limit(3) > 2 * 3 + 10


def test_memory_graph_pauses_at_the_gate_and_loops_back_on_reject(fixture_repo: Path, tmp_path: Path) -> None:
    graph = compile_graph(MemorySaver())
    context = RunContext(fixture_repo, tmp_path / "run", RecipeProvider(), executor_name="emulated")
    config = {"configurable": {"thread_id": "t1"}, "recursion_limit": recursion_limit(3)}
    start = {"run_id": "t1", "op": "aten::heaviside", "repo_root": str(fixture_repo),
             "options": RunOptions(executor="emulated").to_dict(), "attempts": 0, "failures": [], "verdicts": {},
             "started_at": 0.0, "paused_s": 0.0, "status": "running"}
    seen = [next(iter(p["data"])) for p in graph.stream(start, config, stream_mode=["updates"], version="v2",
                                                        context=context, durability="sync")]
    assert seen == ["resolve", "plan", "sandbox", "baseline", "edit", "hostcheck", "check", "build", "test",
                    "__interrupt__"]
    state = graph.get_state(config)
    assert state.next == ("approve",) and state.interrupts[0].value["op"] == "aten::heaviside"
    assert state.values["verdicts"]["test"]["ok"] and state.values["attempts"] == 1
    worktree = Path(state.values["worktree"]["path"])
    assert "heaviside_functor" in (worktree / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal").read_text()

    # Rejected: back through edit with the feedback; the recipe model cannot act on it.
    after = [next(iter(p["data"])) for p in graph.stream(
        Command(resume={"decision": "reject", "feedback": "register bfloat too"}), config,
        stream_mode=["updates"], version="v2", context=context, durability="sync")]
    assert after == ["approve", "edit"]
    values = graph.get_state(config).values
    assert values["status"] == "rejected" and values["feedback"] == "register bfloat too"
    assert "recipe cannot act on review feedback" in values["reason"] and values["attempts"] == 2
    assert graph.get_state(config).next == ()
    assert "metalport/heaviside" in branches(fixture_repo)  # cleanup is the runner's job, not the graph's
    git(fixture_repo, "worktree", "remove", "--force", str(worktree))


def test_a_rejection_reaches_the_model_as_review_feedback_and_held_out_inputs_never_do(fixture_repo: Path) -> None:
    from metalport.port.plan.planner import plan_port
    from metalport.checkout import Checkout
    from metalport.graph.nodes.edit import _fix_request

    port = plan_port(Checkout(fixture_repo), "heaviside")
    state = {"op": "aten::heaviside", "feedback": "register bfloat too", "failures": [], "options": {}}
    review = _fix_request(state, port, rejected=True)
    assert review.failure_stage == "review" and review.diagnostics[0]["message"] == "register bfloat too"
    assert review.allowed_paths == port.allowed_paths and "heaviside_functor" in review.plan_summary
    held = {"kind": "held-out", "file": "K.metal", "line": 3, "column": None, "message": "case x=-0.0 fails"}
    failed = _fix_request({**state, "failures": [held], "failure_stage": "test"}, port, rejected=False)
    assert failed.failure_stage == "test" and "-0.0" not in str(failed.diagnostics)
