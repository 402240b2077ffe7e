"""Every recipe of the table, end to end on the wheel workspace: plan, apply, contract, emulated
build and conformance with held-out cases (about 5 s per op on two cores, 2 min in all)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from metalport.port import recipe_table
from metalport.port.plan.planner import apply_port, plan_port
from metalport.checkout import Checkout
from metalport.checks.contract.rules import check_contract
from metalport.executors import emulated
from tests.recipes.porting import clone


@pytest.mark.parametrize("op", sorted(recipe_table()))
def test_recipe_passes_contract_build_and_conformance(wheel_workspace: Checkout, tmp_path: Path, op: str) -> None:
    plan = plan_port(wheel_workspace, op)
    wt = clone(wheel_workspace, tmp_path / "wt")
    apply_port(plan, wt)
    assert check_contract(wheel_workspace.root, wt, plan) == []
    assert emulated.build(wt, plan) == []
    report, failures = emulated.test(wt, plan, held_out=True)
    assert (report.status, [str(f) for f in failures], report.skipped) == ("pass", [], 0)


def test_a_ternary_kernel_that_drops_value_fails_conformance(wheel_workspace: Checkout, tmp_path: Path) -> None:
    # OpInfo's addcmul samples pass `value` != 1; they reach the kernel (no call is skipped), so a
    # kernel that ignores it is caught.
    plan = plan_port(wheel_workspace, "addcmul")
    wt = clone(wheel_workspace, tmp_path / "wt")
    apply_port(plan, wt)
    kernel = wt / (plan.kernel_file or "")
    text = kernel.read_text(encoding="utf-8")
    dropped = text.replace("mul(static_cast<T>(value), t1)", "mul(static_cast<T>(1), t1)")
    assert dropped != text
    kernel.write_text(dropped, encoding="utf-8")
    report, failures = emulated.test(wt, plan, held_out=False)
    assert report.status == "fail" and report.skipped == 0
    assert any(re.search(r"opinfo sample \d+: addcmul\(.*, alpha=(?!1\))", str(f)) for f in failures)
