"""Every recipe of the table, end to end on the wheel workspace: plan, apply, contract, emulated
build and conformance with held-out cases (about 5 s per op on two cores, 2 min in all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.port import recipe_table
from metalport.port.port import apply_port, plan_port
from metalport.checkout import Checkout
from metalport.checks.contract import check_contract
from metalport.executors import emulated
from tests.recipes.porting import clone


# MPS runs these for complex today and their functors have no complex branch: the plan refuses
# (tests/recipes/test_port.py checks the message), so there is nothing to build.
_REFUSED = {"addcmul", "addcdiv"}


@pytest.mark.parametrize("op", sorted(set(recipe_table()) - _REFUSED))
def test_recipe_passes_contract_build_and_conformance(wheel_workspace: Checkout, tmp_path: Path, op: str) -> None:
    plan = plan_port(wheel_workspace, op)
    wt = clone(wheel_workspace, tmp_path / "wt")
    apply_port(plan, wt)
    assert check_contract(wheel_workspace.root, wt, plan) == []
    assert emulated.build(wt, plan) == []
    report, failures = emulated.test(wt, plan, held_out=True)
    assert (report.status, [str(f) for f in failures], report.skipped) == ("pass", [], 0)
