"""Skip reasons from run records, branches and open PRs, and --max-open, without starting runs.

The run records are written in the contract's shape (as another process's runs would leave them);
every sweep here starts no run, so each op's outcome comes from the skip logic alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.cli import main
from tests.sweep.conftest import FakeGitHub, add_branch, fabricate

POINTWISE = ["--status", "missing", "--family", "unary-pointwise,binary-pointwise"]


def _sweep(repo: Path, *args: str, capsys: pytest.CaptureFixture) -> tuple[int, dict, str]:
    code = main(["sweep", "--repo", str(repo), *POINTWISE, "--json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def _by_op(report: dict) -> dict[str, dict]:
    return {o["op"]: o for o in report["outcomes"]}


@pytest.fixture
def history(workspace: Path) -> Path:
    """A workspace where each pointwise candidate but one has a reason to be left alone."""
    fabricate(workspace, "heaviside-1", "heaviside", "awaiting-review", branch="metalport/heaviside")
    fabricate(workspace, "ndtri-1", "special_ndtri", "rejected", feedback="use c10::metal::ndtri instead")
    fabricate(workspace, "frexp-1", "frexp", "needs-llm", stage="plan", attempts=0,
              reason="frexp has no recipe; needs an LLM (--model openai:...)")
    fabricate(workspace, "lndtr-1", "special_log_ndtr", "running", stage="build")
    fabricate(workspace, "lag-1", "special_laguerre_polynomial_l", "failed", stage="test",
              reason="conformance failed for float32 (2 of 40 samples)")
    add_branch(workspace, "metalport/special_airy_ai")
    return workspace


def test_every_op_is_skipped_with_its_reason_and_max_open_stops_the_rest(
        history: Path, capsys: pytest.CaptureFixture) -> None:
    code, report, err = _sweep(history, "--max-open", "1", capsys=capsys)
    assert code == 0
    ops = _by_op(report)
    assert list(ops) == ["special_airy_ai", "special_log_ndtr", "special_ndtri", "heaviside",
                         "special_laguerre_polynomial_l", "special_legendre_polynomial_p"]  # ease order
    assert "frexp" not in ops  # only a person can port it (two outputs): unranked, never swept
    assert {op: o["outcome"] for op, o in ops.items()} == {
        "special_airy_ai": "skipped", "special_log_ndtr": "skipped",
        "special_ndtri": "skipped", "heaviside": "skipped", "special_laguerre_polynomial_l": "skipped",
        "special_legendre_polynomial_p": "candidate"}
    assert ops["heaviside"]["reason"] == "run heaviside-1 awaits review"
    assert ops["heaviside"]["command"].startswith("metalport review show heaviside-1")
    assert ops["special_ndtri"]["reason"] == ('rejected in run ndtri-1: "use c10::metal::ndtri instead"; '
                                              "pass --retry-rejected to try it again")
    assert ops["special_log_ndtr"]["reason"] == (
        "run lndtr-1 is resumable but was not resumed: 1 runs await review (--max-open 1); review them with "
        f"`metalport review --repo {history}`")
    assert ops["special_log_ndtr"]["command"].startswith("metalport resume lndtr-1")
    assert ops["special_laguerre_polynomial_l"]["reason"] == (
        "the last run lag-1 failed at stage test: conformance failed for float32 (2 of 40 samples); "
        "pass --retry-failed to try again")
    assert ops["special_airy_ai"]["reason"].startswith(
        "branch metalport/special_airy_ai exists and no metalport run made it")
    assert ops["special_legendre_polynomial_p"]["reason"] == (
        f"not started: 1 runs await review (--max-open 1); review them with `metalport review --repo {history}`")
    assert report["started_runs"] == [] and report["stop_reason"].startswith("1 runs await review")
    assert "sweep: heaviside: skipped — run heaviside-1 awaits review" in err

    dashboard = (history / ".git" / "metalport" / "dashboard.md").read_text()
    assert "## Skipped (5)" in dashboard and "## Candidates not started (1)" in dashboard
    assert "use c10::metal::ndtri instead" in dashboard


def test_retry_flags_make_rejected_and_failed_ops_candidates(history: Path, capsys: pytest.CaptureFixture) -> None:
    code, report, _ = _sweep(history, "--max-open", "1", "--retry-rejected", "--retry-failed", capsys=capsys)
    ops = _by_op(report)
    assert code == 0
    assert ops["special_ndtri"]["outcome"] == ops["special_laguerre_polynomial_l"]["outcome"] == "candidate"
    assert ops["heaviside"]["outcome"] == "skipped"


def test_an_open_pr_by_anyone_skips_its_op(history: Path, github: FakeGitHub, capsys: pytest.CaptureFixture) -> None:
    github.open_pr(41, "[MPS] special_legendre_polynomial_p as a Metal kernel", "alice", "alice/legendre")
    code, report, _ = _sweep(history, "--github-repo", "pytorch/pytorch", "--github-api", github.url,
                             "--no-resume", capsys=capsys)
    legendre = _by_op(report)["special_legendre_polynomial_p"]
    assert code == 0 and report["started_runs"] == report["resumed_runs"] == []
    assert legendre["outcome"] == "skipped"
    assert _by_op(report)["special_log_ndtr"]["reason"] == "run lndtr-1 was interrupted at stage build and is resumable"
    assert legendre["reason"] == ('open PR #41 by alice is on it: "[MPS] special_legendre_polynomial_p as a '
                                  'Metal kernel" (https://github.test/pytorch/pytorch/pull/41)')
    assert github.queries == [
        'repo:pytorch/pytorch is:pr is:open in:title "special_legendre_polynomial_p"',
        "repo:pytorch/pytorch is:pr is:open head:metalport/special_legendre_polynomial_p"]


def test_a_pr_from_a_metalport_branch_of_another_fork_skips_its_op(
        history: Path, github: FakeGitHub, capsys: pytest.CaptureFixture) -> None:
    github.open_pr(42, "Port an op", "bob", "metalport/special_legendre_polynomial_p")
    _, report, _ = _sweep(history, "--github-repo", "pytorch/pytorch", "--github-api", github.url, "--no-resume",
                          capsys=capsys)
    assert _by_op(report)["special_legendre_polynomial_p"]["reason"].startswith('open PR #42 by bob is on it')


def test_a_configured_github_repo_without_a_token_is_an_error(
        history: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    code = main(["sweep", "--repo", str(history), "--github-repo", "pytorch/pytorch"])
    assert code == 2
    assert capsys.readouterr().err.startswith("metalport: error: GITHUB_TOKEN is not set")


def test_a_spent_sweep_budget_starts_nothing_and_says_why(workspace: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    board = tmp_path / "public" / "sweep.md"
    code, report, _ = _sweep(workspace, "--budget-wall-s", "0.001", "--dashboard", str(board), capsys=capsys)
    assert (report["markdown_path"], report["json_path"]) == (str(board), str(board.with_suffix(".json")))
    assert json.loads(board.with_suffix(".json").read_text())["stop_reason"] == report["stop_reason"]
    assert code == 0 and report["started_runs"] == []
    assert report["stop_reason"].startswith("budget-exhausted: the sweep's wall_s ")
    assert report["stop_reason"].endswith(" reached the limit 0.001")
    assert {o["outcome"] for o in report["outcomes"]} == {"candidate"}
    assert all(o["reason"] == f"not started: {report['stop_reason']}" for o in report["outcomes"])
    assert "**Stopped starting runs:** budget-exhausted" in Path(report["markdown_path"]).read_text()


def test_an_interrupted_run_without_a_checkpoint_fails_its_resume_with_the_reason(
        workspace: Path, capsys: pytest.CaptureFixture) -> None:
    fabricate(workspace, "lndtr-1", "special_log_ndtr", "running", stage="build")
    for op in ("frexp", "special_airy_ai", "special_ndtri"):
        fabricate(workspace, f"{op}-1", op, "needs-llm", stage="plan")
    code, report, _ = _sweep(workspace, "--family", "unary-pointwise", capsys=capsys)
    ndtr = _by_op(report)["special_log_ndtr"]
    assert code == 0 and report["resumed_runs"] == ["lndtr-1"]
    assert ndtr["outcome"] == "failed" and ndtr["reason"].startswith(
        "the run process exited with code 2 at stage build: metalport: error: run lndtr-1 has a record but no "
        "checkpoint in ")
