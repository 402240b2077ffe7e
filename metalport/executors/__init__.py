"""Executors build and test a worktree; `macos` is the tier that runs PyTorch's own build and tests."""

from __future__ import annotations

from metalport.executors.macos import (
    Failure,
    TestReport,
    build_command,
    mps_test_command,
    parse_build_output,
    parse_test_output,
    report_failures,
    run_build,
    run_tests,
)

__all__ = ["Failure", "TestReport", "build_command", "parse_build_output", "parse_test_output",
           "mps_test_command", "report_failures", "run_build", "run_tests"]
