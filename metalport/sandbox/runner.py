"""`run_command`: an argv list in its own process group, with a timeout and no secrets in its env."""

from __future__ import annotations

import os
import re
import signal
import subprocess
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
    start = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=scrubbed_env(env_extra), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except FileNotFoundError as err:
        raise SandboxError(f"program {argv[0]!r} not found", hint="install it or set its path "
                           "in metalport.yaml") from err
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


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
