"""`run_command`: an argv list in its own process group, with a timeout and no secrets in its env."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from metalport.errors import SandboxError

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.I)
_SECRET_PREFIXES = ("OPENAI_", "ANTHROPIC_", "AWS_", "GITHUB_", "GH_", "HF_", "HUGGING", "AZURE_")
_CHECK_S = 1.0  # how often a running command asks its context's check
_CHECK: ContextVar[Callable[[], None] | None] = ContextVar("metalport_command_check", default=None)

# Note [commands die with metalport]: a command runs in its own session (so a timeout or a lost
# lease kills its whole process group), which also means it outlives a metalport killed with
# SIGKILL: a fleet worker killed mid-build would leave an hour-long build running on its machine.
# So the session's leader is this small watcher, not the command: it starts the command in its
# group, and when its parent is gone (getppid changes; portable to macOS, unlike PR_SET_PDEATHSIG)
# it kills the group. It passes the command's exit status on unchanged (a signal by re-raising it).
# `-I -S`: no site, no user paths, so it starts in ~20 ms whatever the environment.
_WATCHER = """
import os, signal, subprocess, sys
parent, argv = int(sys.argv[1]), sys.argv[2:]
try:
    child = subprocess.Popen(argv)
except OSError as err:
    print(f"metalport: cannot run {argv[0]!r}: {err.strerror}", file=sys.stderr)
    sys.exit(127)
signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL))
while True:
    try:
        code = child.wait(timeout=0.5)
        break
    except subprocess.TimeoutExpired:
        if os.getppid() != parent:
            os.killpg(0, signal.SIGKILL)
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


@contextmanager
def commands_checked(check: Callable[[], None]) -> Iterator[None]:
    """Within the block (and the threads LangGraph runs its nodes in, which copy the context), a
    running command calls `check` every second; when `check` raises, the command's process group
    is killed and the exception goes on. A fleet worker that lost a run's lease (it slept past the
    lease, or the attempt was cancelled) so stops that run's build at once, not at the build's end.
    """
    token = _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(token)


@dataclass(frozen=True)
class CommandResult:
    """What one command did: its argv, exit code, output, wall time and whether it timed out."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its timeout."""
        return self.returncode == 0 and not self.timed_out


def scrubbed_env(env_extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the current environment without secret-looking names, plus `env_extra`."""
    env = {name: value for name, value in os.environ.items()
           if not _SECRET_NAME.search(name) and not name.upper().startswith(_SECRET_PREFIXES)}
    env.update(env_extra or {})
    return env


def run_command(argv: list[str], cwd: Path | str, timeout_s: float,
                env_extra: Mapping[str, str] | None = None) -> CommandResult:
    """Run `argv` (never through a shell) in `cwd`; on timeout kill its whole process group.

    Raises SandboxError when the program does not exist.
    """
    if not argv or isinstance(argv, str):
        raise SandboxError(f"a command must be a non-empty argv list, not {argv!r}")
    env = scrubbed_env(env_extra)
    if not _found(argv[0], cwd, env):
        raise SandboxError(f"program {argv[0]!r} not found", hint="install it or set its path in metalport.yaml")
    start = time.monotonic()
    # The watcher leads the session and starts `argv` in it (Note [commands die with metalport]).
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _WATCHER, str(os.getpid()), *argv], cwd=cwd,
                            env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    timed_out, check = False, _CHECK.get()
    try:
        while True:
            left = start + timeout_s - time.monotonic()
            try:
                stdout, stderr = proc.communicate(timeout=max(0.0, min(left, _CHECK_S)) if check else timeout_s)
                break
            except subprocess.TimeoutExpired:
                if check is None or time.monotonic() - start >= timeout_s:
                    timed_out = True
                    _kill_group(proc.pid)
                    stdout, stderr = proc.communicate()
                    break
                try:
                    check()
                except BaseException:
                    _kill_group(proc.pid)
                    proc.communicate()
                    raise
    finally:
        # Children that outlive a finished leader still belong to the group: leave none behind.
        _kill_group(proc.pid)
    return CommandResult(tuple(argv), proc.returncode, stdout, stderr,
                         time.monotonic() - start, timed_out)


def _found(program: str, cwd: Path | str, env: Mapping[str, str]) -> bool:
    """Whether exec would find `program`: a path (relative to `cwd`) or a name on the env's PATH."""
    if os.sep in program:
        path = Path(cwd) / program
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(program, path=env.get("PATH", os.defpath)) is not None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
