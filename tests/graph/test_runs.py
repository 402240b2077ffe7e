"""End to end through start_run/resume_run: to the gate, approve, abort, a broken recipe, resume."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from metalport.port import recipe_table
from metalport.agent.recipe_provider import RecipeProvider
from metalport.errors import PipelineError, UnknownRunError
from metalport.graph import Abort, Approve, RunOptions, get_run, list_runs, resume_run, run_dir, start_run
from metalport.graph.review import ask_decision
from tests.graph.conftest import branches, commits_on, git, user_tree, worktrees

EMULATED = RunOptions(executor="emulated")
KERNEL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"


def test_wheel_workspace_heaviside_to_gate_then_approve_writes_a_bundle(wheel_repo: Path,
                                                                         no_github_token: None) -> None:
    before = user_tree(wheel_repo)
    events: list[dict] = []
    record = start_run(wheel_repo, "aten::heaviside", EMULATED, run_id="wheel-1", progress=events.append)
    assert (record.status, record.stage, record.attempts) == ("awaiting-review", "approve", 1)
    assert record.branch == "metalport/heaviside" and Path(record.worktree).is_dir()
    assert [e["node"] for e in events if e["event"] == "done"] == [
        "resolve", "plan", "sandbox", "baseline", "edit", "hostcheck", "check", "build", "test"]
    assert all(record.verdicts[name]["ok"] for name in ("hostcheck", "check", "build", "test"))
    # the port's new BinaryKernel.mm (no base version) was compiled as Objective-C++ and passed
    assert record.verdicts["hostcheck"]["files"] == ["aten/src/ATen/native/mps/operations/BinaryKernel.mm"]
    report = record.verdicts["test"]["report"]
    assert report["status"] == "pass" and sum(d["samples"] for d in report["dtypes"]) > 0
    folder = run_dir(wheel_repo, "wheel-1")
    assert json.loads((folder / "run.json").read_text()) == record.to_dict()
    plan = json.loads((folder / "plan.json").read_text())
    assert plan["op"] == "heaviside" and plan["functor"] == "heaviside_functor"
    assert [r.run_id for r in list_runs(wheel_repo)] == ["wheel-1"] and get_run(wheel_repo, "wheel-1") == record
    assert user_tree(wheel_repo) == before

    published = resume_run(wheel_repo, "wheel-1", Approve())
    title = ("[MPS] Migrate heaviside to native Metal" if plan["migrate"]
             else "[MPS] Add native Metal kernel for heaviside")
    assert published.status == "published" and published.pr_url is None
    assert commits_on(wheel_repo, "metalport/heaviside") == [title]
    bundle = Path(published.bundle_path)
    assert bundle == folder / "bundle" and len(list((bundle / "patches").glob("*.patch"))) == 1
    assert (bundle / "PR.md").read_text().startswith(f"# {title}\n")
    evidence = json.loads((bundle / "evidence.json").read_text())
    assert evidence["verdicts"]["test"]["ok"] and evidence["attempts"] == 1
    assert git(wheel_repo, "remote").strip() == ""  # nothing to push to, nothing pushed
    assert published.worktree is None and worktrees(wheel_repo) == 1
    assert user_tree(wheel_repo) == before
    # Resuming a finished run changes nothing (no second commit).
    assert resume_run(wheel_repo, "wheel-1").status == "published"
    assert len(commits_on(wheel_repo, "metalport/heaviside")) == 1
    with pytest.raises(PipelineError, match="run wheel-1 is published at stage publish, not awaiting review; it is already published"):
        resume_run(wheel_repo, "wheel-1", Approve())


def test_fixture_migration_removes_legacy_code_and_abort_leaves_nothing(fixture_repo: Path) -> None:
    before = user_tree(fixture_repo)
    record = start_run(fixture_repo, "heaviside", EMULATED, run_id="fx-1")
    assert record.status == "awaiting-review"
    tree = Path(record.worktree)
    host = (tree / "aten/src/ATen/native/mps/operations/BinaryOps.mm").read_text()
    assert "heaviside_out_mps" not in host and "ATen/ops/heaviside_native.h" not in host
    assert "logaddexp_out_mps" in host  # the neighbour stays
    registry = (tree / "aten/src/ATen/native/native_functions.yaml").read_text()
    assert "CPU, CUDA, MPS: heaviside_out" in registry and "heaviside_out_mps" not in registry
    assert '"heaviside"' not in (tree / "torch/testing/_internal/common_mps.py").read_text()
    assert "REGISTER_BINARY_OP(heaviside, float, float);" in (tree / KERNEL).read_text()

    # While it waits, the op's branch is taken: a second run is refused, naming the first.
    with pytest.raises(PipelineError, match="run fx-1 of aten::heaviside is waiting for review on metalport/heav"):
        start_run(fixture_repo, "aten::heaviside", EMULATED)

    # The reviewer's view on a TTY: summary, the full diff on request, then a decision.
    screen = io.StringIO()
    answers = io.StringIO("diff\nreject\n\nmaybe\nabort\n")
    decision = ask_decision(Console(file=screen, width=200), fixture_repo, record, stream=answers)
    shown = screen.getvalue()
    assert decision == Abort()
    for text in ("plan:", "kind pointwise-stub: heaviside_out reaches heaviside_stub through a pointwise",
                 "registry heaviside.out line", "remove legacy heaviside_out_mps", "files changed",
                 "test: passed; emulated conformance on", "held-out", "attempts: 1; elapsed:", "cost: $0.0000",
                 "+struct heaviside_functor {", "a rejection needs feedback"):
        assert text in shown, text
    aborted = resume_run(fixture_repo, "fx-1", decision)
    assert (aborted.status, aborted.branch, aborted.worktree) == ("aborted", None, None)
    assert not tree.exists() and branches(fixture_repo) == ["main"] and worktrees(fixture_repo) == 1
    folder = run_dir(fixture_repo, "fx-1")
    assert get_run(fixture_repo, "fx-1").status == "aborted"
    assert "heaviside_functor" in (folder / "diff.patch").read_text()
    assert json.loads((folder / "evidence.json").read_text())["status"] == "aborted"
    assert user_tree(fixture_repo) == before


def test_broken_recipe_fails_with_evidence_not_at_the_gate(fixture_repo: Path) -> None:
    table = recipe_table()
    good = table["heaviside"]
    wrong = good.source.replace("return static_cast<T>(x > static_cast<T>(0));",
                                "return static_cast<T>(x < static_cast<T>(0));")
    assert wrong != good.source
    broken = RecipeProvider({**table, "heaviside": dataclasses.replace(good, source=wrong)})
    record = start_run(fixture_repo, "aten::heaviside", EMULATED, run_id="broken-1", provider=broken)
    assert record.status == "failed" and record.stage == "edit" and record.attempts == 2
    assert record.reason.startswith("test failed: ") and "recipe cannot repair test failures" in record.reason
    assert not record.verdicts["test"]["ok"] and record.verdicts["check"]["ok"]
    folder = run_dir(fixture_repo, "broken-1")
    evidence = json.loads((folder / "evidence.json").read_text())
    assert evidence["status"] == "failed" and evidence["failures"]
    assert "x < static_cast<T>(0)" in (folder / "diff.patch").read_text()
    assert branches(fixture_repo) == ["main"] and worktrees(fixture_repo) == 1
    assert resume_run(fixture_repo, "broken-1") == get_run(fixture_repo, "broken-1")  # ended: nothing to do
    assert branches(fixture_repo) == ["main"]


def test_a_base_tree_that_does_not_compile_ends_the_run_before_any_edit(fixture_repo: Path) -> None:
    kernel = fixture_repo / KERNEL
    lines = kernel.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("struct "))
    lines.insert(at, "constant float broken_base = undeclared_in_base;\n")
    kernel.write_text("".join(lines))
    git(fixture_repo, "commit", "-qam", "a base kernel file that does not compile")
    record = start_run(fixture_repo, "aten::heaviside", EMULATED, run_id="base-1")
    assert (record.status, record.stage, record.attempts) == ("base-broken", "baseline", 0)
    assert record.reason.startswith(
        f"the base tree does not compile in the emulated tier: {KERNEL}:{at + 1}: ")
    assert "undeclared_in_base" in record.reason and "\n" not in record.reason
    assert set(record.verdicts) == {"baseline"} and not record.verdicts["baseline"]["ok"]
    assert branches(fixture_repo) == ["main"] and worktrees(fixture_repo) == 1


def test_unknown_run_id_is_an_error_never_a_fresh_start(fixture_repo: Path) -> None:
    with pytest.raises(UnknownRunError, match="unknown run id 'heavisde-1'; no runs yet"):
        resume_run(fixture_repo, "heavisde-1", Approve())
    assert not (run_dir(fixture_repo, "heavisde-1")).exists()
    with pytest.raises(UnknownRunError, match="is not a valid run id"):
        get_run(fixture_repo, "../x")
