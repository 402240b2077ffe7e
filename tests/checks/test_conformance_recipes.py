"""Conformance of a deterministic recipe port in a wheel workspace (the pipeline's emulated test)."""

from __future__ import annotations

import shutil
from pathlib import Path

from metalport.port.plan.planner import apply_port, plan_port
from metalport.checkout import Checkout
from metalport.checks.conformance import ConformanceSession, run_conformance


def test_recipe_port_of_heaviside_passes(wheel_workspace: Checkout, tmp_path: Path,
                                          session: ConformanceSession) -> None:
    worktree = tmp_path / "wt"
    shutil.copytree(wheel_workspace.root, worktree, ignore=shutil.ignore_patterns(".git"))
    plan = plan_port(wheel_workspace, "heaviside")
    apply_port(plan, worktree)
    report = run_conformance(worktree, "heaviside", backend="emulated", seed=4, session=session,
                             dtypes=["float32", "half", "int32", "bool"])
    assert report.status == "pass", report.summary_for_model()
    assert [d.dtype for d in report.dtypes] == ["float32", "float16", "int32", "bool"]
    assert all(d.samples >= 9 and d.held_out_samples >= 12 for d in report.dtypes)
