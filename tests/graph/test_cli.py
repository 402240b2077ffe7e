"""The CLI as users see it: exit codes, one-line errors, the gate message, nothing left behind."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from metalport.cli import main, run_migration
from metalport.graph import get_run
from tests.graph.conftest import branches, git, user_tree, worktrees

HOST = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"


def _one_line_error(err: str, prog: str = "run-migration") -> str:
    lines = [line for line in err.splitlines() if line.startswith((f"{prog}: error:", "metalport: error:"))]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _clean(repo: Path, before: tuple[str, str, str], extra_branches: tuple[str, ...] = ()) -> None:
    assert branches(repo) == sorted(["main", *extra_branches]) and worktrees(repo) == 1
    assert user_tree(repo) == before


def test_dirty_tree_gate_without_input_then_reject_with_the_recipe_model(
        fixture_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A dirty base tree is allowed and said; the run starts from the commit and never touches it.
    (fixture_repo / "aten/src/ATen/native/native_functions.yaml").write_text("# the user's edit\n")
    (fixture_repo / "scratch.txt").write_text("untracked\n")
    before = user_tree(fixture_repo)
    repo = str(fixture_repo)
    assert run_migration(["aten::heaviside", "--repo", repo, "--executor", "emulated", "--no-input",
                          "--run-id", "cli-1"]) == 0
    err = capsys.readouterr().err
    assert "work tree has uncommitted changes; the worktree starts from commit" in err
    for node in ("resolve", "plan", "sandbox", "baseline", "edit", "hostcheck", "check", "build", "test"):
        assert f"✓ {node}" in err
    # Run from outside the repository, so every printed command carries --repo and runs as printed.
    assert f"metalport review approve cli-1 --repo {fixture_repo}\n" in err
    assert f"metalport resume cli-1 --approve --repo {fixture_repo}\n" in err

    assert main(["runs", "--repo", repo, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["status"], r["stage"], r["attempts"], r["branch"]) for r in listed] == [
        ("cli-1", "awaiting-review", "approve", 1, "metalport/heaviside")]
    assert main(["resume", "cli-1", "--repo", repo, "--json"]) == 0  # at the gate, no decision: unchanged
    paused = json.loads(capsys.readouterr().out)
    assert (paused["status"], paused["stage"], paused["attempts"]) == ("awaiting-review", "approve", 1)
    assert main(["runs", "--repo", repo]) == 0
    table = capsys.readouterr().out
    assert "cli-1" in table and "awaiting-review" in table and "metalport/heaviside" in table
    assert main(["runs", "show", "cli-1", "--repo", repo, "--transcript"]) == 0
    shown = capsys.readouterr().out
    assert "heaviside_functor" in shown and "test: passed" in shown and "files changed" in shown
    assert "transcript: none (the recipe model makes no LLM calls)" in shown

    assert main(["resume", "cli-1", "--repo", repo, "--reject", "also register bfloat"]) == 1
    err = capsys.readouterr().err
    assert "rejected: rejected by the reviewer: also register bfloat" in err
    record = get_run(fixture_repo, "cli-1")
    assert (record.status, record.feedback, record.branch) == ("rejected", "also register bfloat", None)
    _clean(fixture_repo, before)


def test_bad_inputs_are_one_line_and_leave_nothing(fixture_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = str(fixture_repo)
    before = user_tree(fixture_repo)
    cases = [
        (["aten::heavisid"], 2, "unknown op 'aten::heavisid'; did you mean 'heaviside'?"),
        (["aten::atan2"], 2, "aten::atan2 is already native (shared); pass --force"),
        (["aten::hypot"], 1, None),
        (["aten::heaviside", "--model", "gpt"], 2, "unknown model 'gpt'"),
        (["aten::heaviside", "--max-attempts", "0"], 2, "--max-attempts must be at least 1"),
        (["aten::heaviside", "--base", "no-such-ref"], 2, "base 'no-such-ref' is not a commit"),
    ]
    for argv, code, message in cases:
        assert run_migration([*argv, "--repo", repo, "--executor", "emulated", "--no-input"]) == code, argv
        err = capsys.readouterr().err
        if message:
            assert message in _one_line_error(err), err
        _clean(fixture_repo, before)
    # Input refused before a worktree existed leaves no record and no checkpoint; needs-llm is a result.
    (kept,) = os.listdir(fixture_repo / ".git/metalport/runs")
    assert kept.startswith("hypot-") and get_run(fixture_repo, kept).status == "needs-llm"
    with sqlite3.connect(fixture_repo / ".git/metalport/state.sqlite") as db:
        assert {t for (t,) in db.execute("SELECT DISTINCT thread_id FROM checkpoints")} == {kept}

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OPENAI_API_KEY", raising=False)
        assert run_migration(["aten::hypot", "--repo", repo, "--model", "openai:gpt-x", "--no-input",
                              "--run-id", "nokey-1"]) == 2
    assert "no API key: $OPENAI_API_KEY is not set" in _one_line_error(capsys.readouterr().err)
    assert not (fixture_repo / ".git/metalport/runs/nokey-1").exists()

    assert main(["resume", "nope-1", "--repo", repo]) == 2
    assert "unknown run id 'nope-1'" in _one_line_error(capsys.readouterr().err, "metalport")

    # No compiler for the emulated tier: refused before any worktree exists.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("METALPORT_CXX", "/nonexistent/c++")
        assert run_migration(["aten::heaviside", "--repo", repo, "--executor", "emulated", "--no-input"]) == 2
    assert "$METALPORT_CXX='/nonexistent/c++' does not run" in _one_line_error(capsys.readouterr().err)
    _clean(fixture_repo, before)

    # A write the plan would make through a symlink out of the worktree is refused; the target is untouched.
    outside = fixture_repo.parent / "outside.metal"
    kernel = fixture_repo / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    outside.write_text(kernel.read_text())
    kernel.unlink()
    kernel.symlink_to(outside)
    git(fixture_repo, "commit", "-q", "-am", "kernel file is a link")
    before = user_tree(fixture_repo)
    assert run_migration(["aten::heaviside", "--repo", repo, "--executor", "emulated", "--no-input"]) == 2
    assert "leading out of the worktree" in _one_line_error(capsys.readouterr().err)
    assert "heaviside" not in outside.read_text()
    _clean(fixture_repo, before)

    # A branch a human committed to is never taken over.
    git(fixture_repo, "branch", "metalport/heaviside")
    git(fixture_repo, "worktree", "add", "-q", str(fixture_repo.parent / "human"), "metalport/heaviside")
    (fixture_repo.parent / "human" / "notes.txt").write_text("mine\n")
    git(fixture_repo.parent / "human", "add", "notes.txt")
    git(fixture_repo.parent / "human", "-c", "user.name=Ada", "-c", "user.email=ada@example.com",
        "commit", "-q", "-m", "my work")
    git(fixture_repo, "worktree", "remove", str(fixture_repo.parent / "human"))
    human = git(fixture_repo, "rev-parse", "metalport/heaviside")
    assert run_migration(["aten::heaviside", "--repo", repo, "--executor", "emulated", "--no-input"]) == 2
    assert "that metalport did not make" in _one_line_error(capsys.readouterr().err)
    assert git(fixture_repo, "rev-parse", "metalport/heaviside") == human
    _clean(fixture_repo, before, ("metalport/heaviside",))


def test_a_plan_edit_that_misses_its_anchor_fails_after_diagnose_or_exhausts_the_budget(
        fixture_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    host = fixture_repo / HOST
    # Neither a REGISTER_DISPATCH block to join nor a namespace comment to insert before.
    host.write_text(host.read_text().replace("} // namespace at::native", "}")
                    .replace("REGISTER_DISPATCH(atan2_stub, &atan2_mps_kernel)\n", ""))
    git(fixture_repo, "commit", "-q", "-am", "host file without its namespace comment or registrations")
    before = user_tree(fixture_repo)
    repo = str(fixture_repo)
    assert run_migration(["aten::heaviside", "--repo", repo, "--executor", "emulated", "--no-input", "--json",
                          "--run-id", "anchor-1"]) == 1
    out, err = capsys.readouterr()
    record = json.loads(out)
    assert (record["status"], record["stage"], record["attempts"]) == ("failed", "edit", 2)
    assert record["reason"].startswith("edit failed: ") and "recipe cannot repair edit failures" in record["reason"]
    assert "✗ edit" in err and "→ diagnose" in err and set(record["timings_s"]) >= {"edit", "diagnose"}
    _clean(fixture_repo, before)

    assert run_migration(["aten::heaviside", "--repo", repo, "--executor", "emulated", "--no-input",
                          "--wall-time", "0.001", "--run-id", "anchor-2"]) == 1
    assert "budget-exhausted: wall time" in capsys.readouterr().err
    assert get_run(fixture_repo, "anchor-2").status == "budget-exhausted"
    _clean(fixture_repo, before)
