"""Sweeps end to end on the wheel workspace with the recipe model: real `metalport run` subprocesses.

The binary pointwise candidates of the wheel workspace, in ease order: heaviside (a recipe: it
reaches the gate), special_laguerre_polynomial_l and special_legendre_polynomial_p (no recipe: the
recipe model skips them without starting a run). Each test starts as few runs as its story needs.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest

from metalport.cli import main

POINTWISE = ["--status", "missing", "--family", "binary-pointwise"]


def _sweep(repo: Path, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, dict]:
    code = main(["sweep", "--repo", str(repo), *POINTWISE, "--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def _outcomes(report: dict) -> dict[str, tuple[str, str]]:
    return {o["op"]: (o["outcome"], o["reason"]) for o in report["outcomes"]}


def _branches(repo: Path) -> set[str]:
    return {h.name for h in git.Repo(repo).heads if h.name.startswith("metalport/")}


def _review(repo: Path, capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str]:
    code = main(["review", *argv, "--repo", str(repo)])
    return code, capsys.readouterr().out


def test_sweep_k2_to_the_gate_then_approve_and_sweep_again(workspace: Path, capsys: pytest.CaptureFixture) -> None:
    code, report = _sweep(workspace, capsys, "-K", "2", "--max-open", "2")
    outcomes = _outcomes(report)
    assert code == 0 and len(report["started_runs"]) == 1  # only the op the recipe model can port
    assert list(outcomes) == ["heaviside", "special_laguerre_polynomial_l", "special_legendre_polynomial_p"]
    run_id = report["started_runs"][0]
    assert outcomes["heaviside"] == ("awaiting-review", f"run {run_id} passed its checks and awaits review")
    for op in ("special_laguerre_polynomial_l", "special_legendre_polynomial_p"):
        assert outcomes[op] == ("skipped", f"aten::{op} has no recipe in the recipe table (it needs an LLM); "
                                           "sweep with --model openai:MODEL to port it")
    assert _branches(workspace) == {"metalport/heaviside"}
    dashboard = Path(report["markdown_path"])
    assert dashboard == workspace / ".git" / "metalport" / "dashboard.md"
    text = dashboard.read_text()
    assert "## Awaiting review (1)" in text and f"`metalport review show {run_id} --repo {workspace}`" in text
    assert "## Failed" not in text

    code, listing = _review(workspace, capsys, "list", "--json")
    rows = json.loads(listing)
    assert code == 0 and [(r["run_id"], r["op"], r["branch"]) for r in rows] == [
        (run_id, "aten::heaviside", "metalport/heaviside")]
    assert rows[0]["checks"] == "check pass, build pass, baseline pass, hostcheck pass" and rows[0]["conformance"].startswith("pass (")
    code, shown = _review(workspace, capsys, "show", run_id)
    assert code == 0 and "heaviside_functor" in shown and "test: passed" in shown and "+++ b/" in shown

    code, said = _review(workspace, capsys, "approve", run_id)
    assert code == 0 and said.startswith(f"run {run_id} (aten::heaviside) published: ")
    text = dashboard.read_text()
    assert "## Published (1)" in text and "## Awaiting review" not in text
    assert said.split("published: ")[1].strip() in text  # the bundle path (no remote configured)

    code, report = _sweep(workspace, capsys, "-K", "2", "--max-open", "2")
    outcomes = _outcomes(report)
    assert code == 0 and report["started_runs"] == []  # nothing is started twice
    assert outcomes["heaviside"][0] == "skipped" and outcomes["heaviside"][1].startswith(
        f"already published by run {run_id} (")
    assert outcomes["special_laguerre_polynomial_l"][0] == "skipped"
    assert "has no recipe in the recipe table" in outcomes["special_laguerre_polynomial_l"][1]


def test_a_killed_sweep_and_run_are_resumed_by_the_next_sweep_without_duplicates(
        workspace: Path, capsys: pytest.CaptureFixture) -> None:
    argv = [sys.executable, "-m", "metalport", "sweep", "--repo", str(workspace), "--status", "missing",
            "--family", "binary-pointwise", "-K", "1", "--max-open", "1", "--json"]
    sweep = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    runs = workspace / ".git" / "metalport" / "runs"
    deadline = time.monotonic() + 120
    while not (found := list(runs.glob("heaviside*/run.json"))) or \
            json.loads(found[0].read_text())["stage"] in ("resolve",):  # past its first checkpoint
        assert sweep.poll() is None and time.monotonic() < deadline, sweep.stderr.read().decode()
        time.sleep(0.1)
    run_id = found[0].parent.name
    run_pid = int((runs / run_id / ".lock").read_text())
    os.killpg(sweep.pid, signal.SIGKILL)  # the sweep, then its run: a power cut mid-run
    os.killpg(run_pid, signal.SIGKILL)
    sweep.wait()
    sweep.stderr.close()
    assert json.loads((runs / run_id / "run.json").read_text())["status"] == "running"

    code, report = _sweep(workspace, capsys, "-K", "1", "--max-open", "1")
    outcomes = _outcomes(report)
    assert code == 0  # the killed sweep's lock went with it
    assert report["started_runs"] == [] and report["resumed_runs"] == [run_id]  # continued, not duplicated
    assert outcomes["heaviside"] == ("awaiting-review", f"run {run_id} passed its checks and awaits review")
    assert outcomes["special_laguerre_polynomial_l"] == (
        "candidate", f"not started: 1 runs await review (--max-open 1); review them with `metalport review "
                     f"--repo {workspace}`")
    assert [p.parent.name for p in runs.glob("*/run.json")] == [run_id]
    assert _branches(workspace) == {"metalport/heaviside"}

    code, said = _review(workspace, capsys, "reject", run_id, "--feedback", "keep NaN handling explicit")
    assert code == 0 and said.strip() == f"run {run_id} (aten::heaviside) rejected: keep NaN handling explicit"
    assert "metalport/heaviside" not in _branches(workspace)
    text = (workspace / ".git" / "metalport" / "dashboard.md").read_text()
    assert "## Rejected (1)" in text and "keep NaN handling explicit" in text

    code, report = _sweep(workspace, capsys, "--max-open", "1", "--retry-rejected")
    assert code == 0 and len(report["started_runs"]) == 1
    again = report["started_runs"][0]
    assert _outcomes(report)["heaviside"][0] == "awaiting-review"
    code, said = _review(workspace, capsys, "abort", again)
    assert code == 0 and said.strip() == (f"run {again} (aten::heaviside) aborted; worktree and branch "
                                           "metalport/heaviside removed, record kept")
    assert "metalport/heaviside" not in _branches(workspace)
    data = json.loads((workspace / ".git" / "metalport" / "dashboard.json").read_text())
    heaviside = {o["op"]: o for o in data["outcomes"]}["heaviside"]
    assert heaviside["outcome"] == "aborted" and heaviside["run_id"] == again
    assert "## Aborted (1)" in (workspace / ".git" / "metalport" / "dashboard.md").read_text()
    assert main(["review", "approve", again, "--repo", str(workspace)]) == 2
    assert f"run {again} (aten::heaviside) is aborted at stage approve" in capsys.readouterr().err


def test_a_sweep_started_beside_a_metalport_folder_runs_the_installed_package(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    here = tmp_path / "parent"
    (here / "metalport").mkdir(parents=True)  # e.g. a clone's parent, or another version's checkout
    (here / "metalport" / "__init__.py").write_text("")  # a package without __version__ or __main__
    monkeypatch.chdir(here)
    code, report = _sweep(workspace, capsys, "-K", "1", "--max-open", "1")
    assert code == 0, report
    [run_id] = report["started_runs"]
    assert _outcomes(report)["heaviside"] == ("awaiting-review", f"run {run_id} passed its checks and awaits review")
