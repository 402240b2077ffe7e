"""`RunContext`: what nodes need besides the state, rebuilt by every process (never checkpointed).

Note [test kill hook]: `METALPORT_TEST_KILL_AT=<point>` makes the process SIGKILL itself at that
point, to test crash recovery. Points are node names (checked by `runs.py` when the node's task
starts, before it runs) and `publish:committed` (after the commit, before the PR or bundle).
`METALPORT_TEST_KILL_SIGNAL=INT` sends SIGINT instead (a Ctrl-C there). Test-only; unset in use.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metalport.agent.provider import Provider

KILL_ENV = "METALPORT_TEST_KILL_AT"
KILL_SIGNAL_ENV = "METALPORT_TEST_KILL_SIGNAL"


@dataclass
class RunContext:
    """Per-process resources of one run: the repository, the run folder, the provider, the executor."""

    repo_root: Path
    run_dir: Path
    provider: Provider
    executor_name: str = "auto"
    usage_base: dict = field(default_factory=dict)  # usage of earlier processes of this run
    config_path: Path | None = None  # metalport.yaml (its `executor:` section configures the executor)
    _executor: Any = None

    def executor(self) -> Any:
        """The selected executor (`metalport.executors.select_executor`), made once per process."""
        if self._executor is None:
            from metalport.config import load_config
            from metalport.executors import select_executor

            self._executor = select_executor(self.executor_name, load_config(self.config_path))
        return self._executor

    def secret_env(self) -> tuple[str, ...]:
        """The variables holding secrets besides the defaults: the API key's and `secret_env`."""
        return secret_env_of(self.config_path)

    def total_usage(self, current: dict) -> dict:
        """`current` (this process's cumulative provider usage) plus the earlier processes' usage."""
        keys = ("calls", "input_tokens", "output_tokens", "cost_usd")
        total = {k: self.usage_base.get(k, 0) + current.get(k, 0) for k in keys}
        total["cost_usd"] = round(float(total["cost_usd"]), 6)
        return total


def secret_env_of(config_path: Path | None) -> tuple[str, ...]:
    """The API key's variable and the `secret_env` names of the config at `config_path`."""
    from metalport.config import load_config

    config = load_config(config_path if config_path is not None and config_path.is_file() else None)
    return (config.provider.api_key_env, *config.secret_env)


def kill_point(point: str) -> None:
    """SIGKILL (or `$METALPORT_TEST_KILL_SIGNAL`) this process when `$METALPORT_TEST_KILL_AT`
    names `point` (Note [test kill hook])."""
    if os.environ.get(KILL_ENV) == point:
        os.kill(os.getpid(), signal.Signals["SIG" + os.environ.get(KILL_SIGNAL_ENV, "KILL")])
