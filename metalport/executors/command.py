"""The command tier: only metalport.yaml's `executor.build` and `executor.test` commands, as they are.

For a machine whose build and tests are the user's own commands (a CI box, or a fleet test that
stands in for a Mac): no MPS shader pass and no held-out conformance, so its verdict is only as
strong as those commands. Output is read with the macOS tier's parsers (compiler diagnostics,
ninja, unittest, pytest).
"""

from __future__ import annotations

from pathlib import Path

from metalport.checks.report import ConformanceReport
from metalport.config import ExecutorConfig
from metalport.errors import UsageError
from metalport.executors.macos import build_failures, failing_tests, parse_test_output
from metalport.failure import Failure
from metalport.port import PortPlan
from metalport.sandbox.runner import run_command


class CommandExecutor:
    """`Executor` running the configured build and test argv in the worktree (`{op}` in test is the op)."""

    name = "command"

    def __init__(self, config: ExecutorConfig) -> None:
        if not (config.build and config.test):
            raise UsageError("executor command needs executor.build and executor.test in metalport.yaml",
                             hint='e.g. executor: {build: [ninja, -C, build], test: [python, -m, pytest, "-k", "{op}"]}')
        self.config = config

    def baseline(self, worktree_root: Path, plan: PortPlan) -> list[Failure]:
        """Nothing: the configured commands are the only checks this tier makes."""
        return []

    def build(self, worktree_root: Path, plan: PortPlan) -> list[Failure]:
        """Run the build command; its errors (`[]` = built)."""
        result = run_command(list(self.config.build), Path(worktree_root).resolve(), self.config.build_timeout_s)
        return build_failures(result)

    def test(self, worktree_root: Path, plan: PortPlan, *, held_out: bool) -> tuple[ConformanceReport, list[Failure]]:
        """Run the test command; a report counting its tests, and the failing ones."""
        argv = [arg.replace("{op}", plan.op) for arg in self.config.test]
        result = run_command(argv, Path(worktree_root).resolve(), self.config.test_timeout_s)
        tests = parse_test_output(result.stdout + "\n" + result.stderr)
        failures = failing_tests(result, tests)
        summary = f"{argv[0]}: {tests.passed} passed, {tests.failed} failed, {tests.errors} errors (command executor)"
        return ConformanceReport(f"aten::{plan.op}", "mps", "fail" if failures else "pass", (), summary), failures
