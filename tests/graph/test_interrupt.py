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


_PROMPT_CHILD = """
import signal, sys, threading, time
from metalport.graph.review import TerminalLines
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()  # a thread that takes SIGINT
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # so the kernel must hand it to that thread
print("decision?", flush=True)
try:
    TerminalLines().readline()
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def test_ctrl_c_at_the_prompt_interrupts_even_when_another_thread_takes_the_signal() -> None:
    """Note [Ctrl-C at the prompt]: the SIGINT landing on another thread than the one reading the
    terminal still ends the wait (a blocking read slept on: a CI run hung at the gate's prompt)."""
    import pty

    master, slave = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", _PROMPT_CHILD], stdin=slave, stdout=subprocess.PIPE,
                             cwd=REPO_ROOT, start_new_session=True)
    os.close(slave)
    try:
        assert child.stdout.readline() == b"decision?\n"
        time.sleep(0.3)  # the child is waiting for a line now
        os.killpg(child.pid, signal.SIGINT)
        assert child.wait(timeout=20) == INTERRUPTED
        assert child.stdout.read() == b"interrupted\n"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        os.close(master)


def test_a_line_typed_at_the_prompt_is_read_whole_and_ctrl_d_is_end_of_input(monkeypatch) -> None:
    import pty

    import pytest

    from metalport.graph.review import TerminalLines

    master, slave = pty.openpty()
    terminal = os.fdopen(slave, "r", closefd=False)
    monkeypatch.setattr(sys, "stdin", terminal)
    try:
        os.write(master, b"reject\nkeep NaN\n")  # two lines typed ahead: one read gives one line
        assert TerminalLines().readline() == "reject\n"
        assert TerminalLines().readline() == "keep NaN\n"
        os.write(master, b"\x04")  # Ctrl-D on an empty line
        with pytest.raises(EOFError):
            TerminalLines().readline()
    finally:
        terminal.close()
        os.close(slave)
        os.close(master)


def test_ctrl_c_in_the_test_stage_says_so_at_once_and_prints_the_resume_command(fixture_repo: Path) -> None:
    repo, run_id = str(fixture_repo), "int-3"
    first = metalport("run", "aten::heaviside", "--repo", repo, "--executor", "emulated", "--no-input",
                      "--run-id", run_id, env={KILL_ENV: "test", KILL_SIGNAL_ENV: "INT"})
    assert first.returncode == INTERRUPTED and "Traceback" not in first.stderr, first.stderr[-2000:]
    lines = first.stderr.splitlines()
    assert f"metalport: Ctrl-C: stopping run {run_id} (its build or test processes end first; the run stays " \
           "resumable)" in lines
    stage = get_run(fixture_repo, run_id).stage
    assert lines[-1] == (f"metalport: interrupted run {run_id} at stage {stage}; continue it with `metalport resume "
                         f"{run_id} --repo {repo}` (or drop it: `metalport resume {run_id} --abort --repo {repo}`)")
    _at_gate(fixture_repo, run_id)  # the printed command works
