"""Every recipe of the table, end to end on the wheel workspace: plan, apply, contract, emulated
build and conformance with held-out cases. About 20 s per op, so one op per family runs always
and the rest are opt-in:
`METALPORT_TABLE_CONFORMANCE=1 python -m pytest tests/recipes/test_table_conformance.py`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metalport.agent.recipes import recipe_table
from metalport.agent.recipes.port import apply_port, plan_port
from metalport.checkout import Checkout
from metalport.checks.contract import check_contract
from metalport.executors import emulated
from tests.recipes.porting import clone

# One recipe per family and output kind (unary to bool, binary to bool, float-only binary, ternary);
# heaviside runs end to end in tests/graph.
_ALWAYS = frozenset({"signbit", "logical_xor", "sigmoid_backward", "addcmul"})
_OPT_IN = pytest.mark.skipif(os.environ.get("METALPORT_TABLE_CONFORMANCE") != "1",
                             reason="opt-in: set METALPORT_TABLE_CONFORMANCE=1 (about 20 s per op)")

# The host model packs `sub`'s alpha without the host's cast to the tensor dtype (uint8 with
# alpha=-3 is refused), so that sample cannot run emulated; the functor is not at fault.
_HOST_MODEL_GAPS = {"sub"}


@pytest.mark.parametrize("op", [pytest.param(op, marks=() if op in _ALWAYS else _OPT_IN)
                                for op in sorted(recipe_table())])
def test_recipe_passes_contract_build_and_conformance(wheel_workspace: Checkout, tmp_path: Path, op: str) -> None:
    plan = plan_port(wheel_workspace, op)
    wt = clone(wheel_workspace, tmp_path / "wt")
    apply_port(plan, wt)
    assert check_contract(wheel_workspace.root, wt, plan) == []
    assert emulated.build(wt, plan) == []
    report, failures = emulated.test(wt, plan, held_out=True)
    if op in _HOST_MODEL_GAPS and failures:
        pytest.xfail(f"host model gap: {failures[:1]}")
    assert (report.status, [str(f) for f in failures]) == ("pass", [])
