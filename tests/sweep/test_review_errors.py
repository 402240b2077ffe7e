"""`metalport review` on recorded runs: the list, and errors for runs that are not awaiting review."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.cli import main
from tests.sweep.conftest import fabricate

VERDICTS = {"check": {"ok": True, "failures": 0},
            "build": {"ok": True, "failures": 0, "executor": "emulated"},
            "test": {"ok": True, "failures": 0, "report": {"backend": "emulated", "dtypes": [
                {"dtype": "float32", "samples": 30, "passed": 30}, {"dtype": "float16", "samples": 30, "passed": 30}]}}}


@pytest.fixture
def recorded(workspace: Path) -> Path:
    fabricate(workspace, "heaviside-1", "heaviside", "awaiting-review", branch="metalport/heaviside",
              verdicts=VERDICTS, usage={"calls": 2, "cost_usd": 0.0125})
    fabricate(workspace, "sign-1", "sign", "rejected", stage="approve", feedback="keep the old kernel")
    fabricate(workspace, "sgn-1", "sgn", "running", stage="build")
    fabricate(workspace, "frac-1", "frac", "published", stage="publish", bundle_path="/tmp/bundles/frac")
    return workspace


def test_list_shows_only_runs_awaiting_review_with_verdicts_and_cost(
        recorded: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["review", "list", "--json", "--repo", str(recorded)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["op"], r["branch"], r["attempts"]) for r in rows] == [
        ("heaviside-1", "aten::heaviside", "metalport/heaviside", 1)]
    assert rows[0]["checks"] == "check pass, build pass"
    assert rows[0]["conformance"] == "pass (60/60 samples, 2 dtypes)"
    assert rows[0]["cost_usd"] == 0.0125 and rows[0]["age_s"] > 0

    assert main(["review", "--repo", str(recorded)]) == 0
    table = capsys.readouterr().out
    assert "heaviside-1" in table and "aten::heaviside" in table and "$0.0125" in table
    # Piped output is not squeezed to 80 columns: every verdict reads whole on the row.
    row = next(line for line in table.splitlines() if "heaviside-1" in line)
    assert "check pass, build pass" in row and "pass (60/60 samples, 2 dtypes)" in row
    assert "sign-1" not in table


@pytest.mark.parametrize("argv, message", [
    (["show", "sign-1"], "run sign-1 (aten::sign) is rejected at stage approve, not awaiting review; it ended "
                         "rejected; start a new run with `run-migration aten::sign --repo {repo}`"),
    (["approve", "sgn-1"], "run sgn-1 (aten::sgn) is running at stage build, not awaiting review; it is at "
                           "stage build; wait for it, or `metalport resume sgn-1 --repo {repo}` if its process died"),
    (["reject", "frac-1", "--feedback", "no"], "run frac-1 (aten::frac) is published at stage publish, not "
                                                "awaiting review; it is already published (/tmp/bundles/frac); "
                                                "nothing left to decide"),
    (["abort", "nope-1"], "unknown run id 'nope-1'"),
])
def test_a_run_not_awaiting_review_is_an_error_naming_its_state(
        recorded: Path, capsys: pytest.CaptureFixture, argv: list[str], message: str) -> None:
    code = main(["review", *argv, "--repo", str(recorded)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"metalport: error: {message.format(repo=recorded)}") and err.count("\n") == 1


def test_no_runs_await_review(workspace: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["review", "--repo", str(workspace)]) == 0
    assert capsys.readouterr().out == "no runs await review\n"


def _kind(samples: int, passed: int, warned: int = 0) -> dict:
    return {"samples": samples, "passed": passed, "warned": warned}


PARTIAL = {"check": {"ok": True, "failures": 0},
           "test": {"ok": True, "status": "partial", "failures": 0, "report": {
               "backend": "emulated", "status": "partial", "warnings": 1,
               "reason": "48 calls skipped, no emulated host model; verify on macOS: addcmul value",
               "dtypes": [{"dtype": "float32", "samples": 50, "passed": 50, "skipped": 48, "worst_error": 1e-7,
                           "opinfo": _kind(40, 40), "random": _kind(10, 10), "held_out": _kind(30, 29, 1)}]}}}


def test_skipped_calls_make_the_verdict_partial_everywhere_it_is_shown(workspace: Path,
                                                                       capsys: pytest.CaptureFixture) -> None:
    fabricate(workspace, "addcmul-1", "addcmul", "awaiting-review", branch="metalport/addcmul", verdicts=PARTIAL)
    assert main(["review", "list", "--json", "--repo", str(workspace)]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["conformance"] == ("not judged: partial (opinfo 40/40, random 10/10, held-out 29/30 (1 out of scope), 48 skipped, "
                                  "1 dtypes)")
    assert main(["review", "show", "addcmul-1", "--repo", str(workspace)]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert "test: not judged: partial (48 skipped: 48 calls skipped" in shown and "passed" not in shown.split("test:")[1][:40]
    assert "opinfo 40/40, random 10/10, held-out 29/30 (1 out of scope), 48 skipped" in shown
