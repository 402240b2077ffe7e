"""One migration run of a sweep, as a `python -m metalport run` subprocess.

Each run is its own process (its own worktree, thread id and interpreter), so runs go truly in
parallel, a crash in one cannot take the sweep down, and a killed sweep leaves every run to its
checkpoints. The sweep follows a run only through its record (`get_run`), never its output.
The child starts with `-P`: a `metalport/` folder in the working directory (a clone's parent, an
older checkout) is never imported in place of the installed package.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metalport.budget_limits import BudgetLimits


@dataclass(frozen=True)
class RunCommand:
    """How the sweep starts one run: the repository, model, executor and extra `run` flags."""

    repo_root: Path
    model: str
    executor: str
    extra: tuple[str, ...] = ()
    python: str = field(default_factory=lambda: sys.executable)

    def argv(self, op: str, run_id: str, limits: BudgetLimits | None = None) -> list[str]:
        """The command line of the run of `op` with id `run_id`, within `limits` when given."""
        argv = [self.python, "-P", "-m", "metalport", "run", f"aten::{op}", "--no-input", "--json",
                "--repo", str(self.repo_root), "--model", self.model, "--executor", self.executor,
                "--run-id", run_id, *self.extra]
        if limits is not None and limits.max_wall_s:
            # `run` takes a wall-time limit only; the sweep's other limits are enforced between runs.
            argv += ["--wall-time", f"{limits.max_wall_s:g}"]
        return argv

    def resume_argv(self, run_id: str) -> list[str]:
        """The command line that continues the interrupted run `run_id` from its checkpoint to the gate."""
        return [self.python, "-P", "-m", "metalport", "resume", run_id, "--no-input", "--json",
                "--repo", str(self.repo_root)]


class RunProcess:
    """A launched run: its process, its log files and the latest record read for it."""

    def __init__(self, op: str, run_id: str, argv: Sequence[str], log_dir: Path, *, ease: int | None) -> None:
        self.op, self.run_id, self.ease = op, run_id, ease
        self.started = time.monotonic()
        self.record: Any | None = None
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stdout_path, self.stderr_path = log_dir / f"{run_id}.out", log_dir / f"{run_id}.err"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            # A new session: a Ctrl-C meant for the sweep does not hit the run mid-checkpoint; the
            # sweep decides what to tell its runs (see `terminate`).
            self.proc = subprocess.Popen(list(argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         start_new_session=True, env=_child_env())

    def poll(self, lookup: Callable[[str], Any | None]) -> int | None:
        """Refresh `record` from `lookup(run_id)`; return the exit code once the process is done."""
        code = self.proc.poll()
        record = lookup(self.run_id)
        if record is not None:
            self.record = record
        return code

    def elapsed_s(self) -> float:
        """Seconds since launch."""
        return time.monotonic() - self.started

    def last_error_line(self) -> str:
        """The last non-empty line the run printed on stderr (its one-line error), or ''."""
        try:
            lines = self.stderr_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        return next((line.strip() for line in reversed(lines) if line.strip()), "")

    def terminate(self, grace_s: float = 10.0) -> None:
        """Ask the run's process group to stop (SIGTERM), then kill it after `grace_s`."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env
