"""Ctrl-C is as safe as kill -9: SIGINT at every node (Note [test kill hook] with
`METALPORT_TEST_KILL_SIGNAL=INT`) and in the middle of a node, then `metalport resume` continues
from the last completed node to the gate."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from metalport.graph import get_run
from metalport.graph.context import KILL_ENV, KILL_SIGNAL_ENV
from metalport.graph.records import is_live
from tests.graph.conftest import REPO_ROOT, branches, metalport, worktrees

INTERRUPTED = 130


def _interrupted_at(repo: Path, run_id: str, point: str, *argv: str) -> None:
    result = metalport(*argv, env={KILL_ENV: point, KILL_SIGNAL_ENV: "INT"})
    assert result.returncode == INTERRUPTED, (point, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    record = get_run(repo, run_id)
    assert record.status == "running" and not is_live(repo, run_id), (point, record)
    assert branches(repo) == ["main", "metalport/heaviside"] and worktrees(repo) == 2


def _at_gate(repo: Path, run_id: str) -> None:
    paused = metalport("resume", run_id, "--repo", str(repo), "--no-input")
    assert paused.returncode == 0, paused.stderr[-2000:]
    assert f"metalport resume {run_id} --approve" in paused.stderr
    assert get_run(repo, run_id).status == "awaiting-review"


def test_ctrl_c_at_each_node_then_resume_reaches_the_gate(fixture_repo: Path) -> None:
    repo, run_id = str(fixture_repo), "int-1"
    first = metalport("run", "aten::heaviside", "--repo", repo, "--executor", "emulated", "--no-input",
                      "--run-id", run_id, env={KILL_ENV: "sandbox", KILL_SIGNAL_ENV: "INT"})
    assert first.returncode == INTERRUPTED, first.stderr[-2000:]
    for point in ("baseline", "edit", "check", "build", "test"):
        _interrupted_at(fixture_repo, run_id, point, "resume", run_id, "--repo", repo, "--no-input")
    _at_gate(fixture_repo, run_id)


def test_ctrl_c_in_the_middle_of_a_node_then_resume_reaches_the_gate(fixture_repo: Path) -> None:
    repo, run_id = str(fixture_repo), "int-2"
    proc = subprocess.Popen([sys.executable, "-m", "metalport", "run", "aten::heaviside", "--repo", repo,
                             "--executor", "emulated", "--no-input", "--run-id", run_id],
                            cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "→ build" in line:
                time.sleep(1.0)  # inside the build node, compiling
                proc.send_signal(signal.SIGINT)
                break
        rest = proc.stderr.read()
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    assert code in (INTERRUPTED, 0), rest[-2000:]  # 0: the build finished before the signal came
    assert "Traceback" not in rest
    if code == INTERRUPTED:
        assert get_run(fixture_repo, run_id).status == "running"
        _at_gate(fixture_repo, run_id)
