"""Executors build and test a worktree: `emulated` (Metal on the CPU) or `macos` (PyTorch's build).

`select_executor("auto")` picks macos where `torch.backends.mps.is_available()`, else emulated.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from metalport.config import AgentConfig, ExecutorConfig
from metalport.errors import UsageError
from metalport.executors.emulated import EmulatedExecutor
from metalport.executors.macos import (
                                       Failure,
                                       MacosExecutor,
                                       TestReport,
                                       build_command,
                                       mps_test_command,
                                       parse_build_output,
                                       parse_test_output,
                                       report_failures,
                                       run_build,
                                       run_tests,
                                       )
from metalport.torch_facts import mps_available

if TYPE_CHECKING:
    from metalport.port import PortPlan
    from metalport.checks.report import ConformanceReport

EXECUTORS = ("auto", "emulated", "macos", "command")


class Executor(Protocol):
    """Builds and tests a worktree holding a port."""

    name: str

    def baseline(self, worktree_root: Path, plan: PortPlan) -> list[Failure]:
        """Check the untouched base tree before any edit; its failures are the base tree's (`[]` = fine)."""
        ...

    def build(self, worktree_root: Path, plan: PortPlan) -> list[Failure]:
        """Build; `[]` when it built."""
        ...

    def test(self, worktree_root: Path, plan: PortPlan, *,
             held_out: bool) -> tuple[ConformanceReport, list[Failure]]:
        """Test; held-out cases run when `held_out` (at the approval gate)."""
        ...


def select_executor(name: str = "auto", config: ExecutorConfig | AgentConfig | None = None) -> Executor:
    """The executor called `name` ("auto" | "emulated" | "macos").

    Raises UsageError for an unknown name or macos without MPS, EmulateError when the emulated
    tier has no C++ compiler and SandboxUnavailable when it has no sandbox and the user did not
    pass --no-sandbox (all before any worktree is made).
    """
    if name not in EXECUTORS:
        close = difflib.get_close_matches(name, EXECUTORS, n=1)
        raise UsageError(f"unknown executor {name!r}",
                         hint=f"did you mean {close[0]!r}?" if close else "use auto, emulated or macos")
    cfg = config.executor if isinstance(config, AgentConfig) else (config or ExecutorConfig())
    if name == "command":
        from metalport.executors.command import CommandExecutor

        return CommandExecutor(cfg)
    mps = mps_available()
    if name == "auto":
        name = "macos" if mps else "emulated"
    if name == "macos":
        if not mps:
            raise UsageError("executor macos needs MPS, but torch.backends.mps.is_available() is False",
                             hint="run on an Apple-silicon Mac, or use --executor emulated")
        return MacosExecutor(cfg)
    from metalport.emulate import find_compiler
    from metalport.sandbox.confine import select_sandbox

    find_compiler()
    select_sandbox()
    return EmulatedExecutor()


__all__ = ["EXECUTORS", "EmulatedExecutor", "Executor", "Failure", "MacosExecutor", "TestReport",
           "build_command", "mps_available", "mps_test_command", "parse_build_output", "parse_test_output",
           "report_failures", "run_build", "run_tests", "select_executor"]
