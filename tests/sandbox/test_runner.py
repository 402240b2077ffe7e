"""run_command: argv only, a timeout kills the whole process group, no secrets in the env."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from metalport.errors import SandboxError
from metalport.sandbox import run_command

SPAWNER = """
import subprocess, sys, pathlib
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
pathlib.Path(sys.argv[1]).write_text(str(child.pid))
print("spawned", flush=True)
child.wait()
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child of ours may linger as a zombie until reaped by init; zombies are dead.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_timeout_kills_the_grandchild_too(tmp_path: Path) -> None:
    script = tmp_path / "spawner.py"
    script.write_text(SPAWNER)
    pid_file = tmp_path / "grandchild.pid"
    result = run_command([sys.executable, str(script), str(pid_file)], tmp_path, timeout_s=2.0)
    assert result.timed_out and not result.ok
    assert result.stdout == "spawned\n"
    grandchild = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_env_has_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GITHUB_TOKEN", "HF_TOKEN", "MY_SECRET",
                 "DB_PASSWORD", "AWS_ACCESS_KEY_ID", "GOOGLE_CREDENTIALS"):
        monkeypatch.setenv(name, "hunter2")
    monkeypatch.setenv("CCACHE_DIR", "/tmp/cc")
    result = run_command(["env"], tmp_path, timeout_s=10, env_extra={"CCACHE_BASEDIR": str(tmp_path)})
    assert result.ok and result.returncode == 0
    assert "hunter2" not in result.stdout
    lines = result.stdout.splitlines()
    assert "CCACHE_DIR=/tmp/cc" in lines and f"CCACHE_BASEDIR={tmp_path}" in lines


def test_no_shell_and_missing_program(tmp_path: Path) -> None:
    result = run_command(["echo", "$HOME; rm -rf /"], tmp_path, timeout_s=10)
    assert result.stdout == "$HOME; rm -rf /\n" and result.argv == ("echo", "$HOME; rm -rf /")
    with pytest.raises(SandboxError, match="^program 'no-such-tool-x' not found; install it"):
        run_command(["no-such-tool-x"], tmp_path, timeout_s=10)
    with pytest.raises(SandboxError, match="non-empty argv list"):
        run_command("ls -l", tmp_path, timeout_s=10)  # type: ignore[arg-type]


def test_failure_exit_code_and_stderr(tmp_path: Path) -> None:
    result = run_command([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"],
                         tmp_path, timeout_s=10)
    assert (result.returncode, result.stderr, result.timed_out, result.ok) == (3, "boom", False, False)


def test_a_check_that_raises_kills_the_running_command_and_its_children(tmp_path: Path) -> None:
    """A fleet worker that lost a run's lease stops the run's build at once (commands_checked)."""
    import threading

    from metalport.sandbox.runner import commands_checked

    class Lost(Exception):
        pass

    marker = tmp_path / "child.pid"
    lost = threading.Event()
    threading.Timer(1.5, lost.set).start()

    def check() -> None:
        if lost.is_set():
            raise Lost("the lease went to mac-2")

    with commands_checked(check), pytest.raises(Lost, match="mac-2"):
        run_command(["sh", "-c", f"sleep 300 & echo $! > {marker}; wait"], tmp_path, timeout_s=600)
    child = int(marker.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the build's child outlived the stop"
    done = run_command(["sh", "-c", "echo fine"], tmp_path, timeout_s=10)  # outside the block: no check
    assert done.ok and done.stdout == "fine\n"


def test_a_command_dies_with_a_killed_metalport(tmp_path: Path) -> None:
    """A fleet worker killed with SIGKILL mid-build leaves no build behind (Note [commands die with
    metalport]): the command's session is led by a watcher that kills it once its parent is gone."""
    import signal
    import subprocess

    marker = tmp_path / "build.pid"
    runner = subprocess.Popen(
        [sys.executable, "-c", "import sys; from metalport.sandbox import run_command; "
         f"run_command(['sh', '-c', 'sleep 300 & echo $! > {marker}; wait'], sys.argv[1], timeout_s=600)",
         str(tmp_path)], env=dict(os.environ))
    try:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        build = int(marker.read_text())
        assert _alive(build)
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(build) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(build), "the build outlived the metalport that started it"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def test_a_command_killed_by_a_signal_reports_that_signal(tmp_path: Path) -> None:
    result = run_command(["sh", "-c", "kill -TERM $$"], tmp_path, timeout_s=10)
    assert result.returncode == -15 and not result.ok and not result.timed_out
    relative = tmp_path / "build.sh"
    relative.write_text("#!/bin/sh\necho built\n")
    relative.chmod(0o755)
    assert run_command(["./build.sh"], tmp_path, timeout_s=10).stdout == "built\n"
