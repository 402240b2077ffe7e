"""addcmul and addcdiv ported as two changes, in either order (issue 20): each port planned on the
tree the other left applies, passes its contract, extends the shared launcher once (the first)
and removes their shared MPSGraph helper with its last user (the second); both orders end with the
same kernels, host stubs and registry rows. Real corpus ($METALPORT_REAL_TREE) with the
OperationUtils.mm fixture (tests/port/fixtures/shared_launcher)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from metalport.checkout import Checkout
from metalport.checks.contract.rules import check_contract
from metalport.port.plan.planner import apply_port, plan_port
from metalport.port.write.shared import KERNEL_HOME, LAUNCHER_HOME
from tests.port.test_shared_extend import _git, _tree

HOST = "aten/src/ATen/native/mps/operations/PointwiseOps.mm"
KERNEL = "aten/src/ATen/native/mps/kernels/PointwiseOps.metal"


def _port_in_order(base: Path, work: Path, order: tuple[str, str]) -> list:
    subprocess.run(["git", "clone", "-q", str(base), str(work)], check=True, capture_output=True)
    plans = []
    for op in order:
        before = work.parent / f"{work.name}-before-{op}"
        subprocess.run(["git", "clone", "-q", str(work), str(before)], check=True, capture_output=True)
        plan = plan_port(Checkout(work), op)
        apply_port(plan, work)
        assert check_contract(before, work, plan) == [], op
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", f"[MPS] Migrate {op} to Metal")
        plans.append(plan)
    return plans


def _shape(root: Path) -> tuple:
    host = (root / HOST).read_text()
    kernel = (root / KERNEL).read_text()
    return (sorted(re.findall(r"^REGISTER_\w+\([^)]*\);", kernel, re.M)),
            sorted(re.findall(r"^struct \w+_functor", kernel, re.M)),
            sorted(re.findall(r"^REGISTER_DISPATCH\([^)]*\);", host, re.M)),
            "addc_mul_div_out_mps" in host,
            (root / KERNEL_HOME).read_text().count("#define REGISTER_TERNARY_ALPHA_OP("),
            (root / LAUNCHER_HOME).read_text().count("void MetalShaderLibrary::exec_ternary_kernel("))


def test_addcmul_and_addcdiv_as_two_changes_apply_in_either_order(tmp_path: Path) -> None:
    base = _tree(tmp_path).root
    shapes = []
    for order in (("addcmul", "addcdiv"), ("addcdiv", "addcmul")):
        work = tmp_path / "-".join(order)
        first, second = _port_in_order(base, work, order)
        assert (first.shared_launcher, second.shared_launcher) == ("extend", "reuse"), order
        assert (first.legacy_others, bool(second.legacy_others)) == ((), True), order  # the helper goes second
        # The second change, made on the tree the first left, applies on the base after the first.
        patches = _git(work, "format-patch", "-o", str(tmp_path / f"patches-{order[0]}"), "HEAD~2").split()
        target = tmp_path / f"am-{order[0]}"
        subprocess.run(["git", "clone", "-q", str(base), str(target)], check=True, capture_output=True)
        _git(target, "am", "-q", *patches)
        assert _git(target, "rev-parse", "HEAD^{tree}") == _git(work, "rev-parse", "HEAD^{tree}")
        shapes.append(_shape(work))
    registrations, functors, dispatches, helper, macros, launchers = shapes[0]
    assert shapes[1] == shapes[0]
    assert functors == ["struct addcdiv_functor", "struct addcmul_functor"] and not helper
    assert dispatches == ["REGISTER_DISPATCH(addcdiv_stub, &addcdiv_mps_kernel);",
                          "REGISTER_DISPATCH(addcmul_stub, &addcmul_mps_kernel);"]
    assert "REGISTER_TERNARY_ALPHA_OP(addcdiv, half, float, half);" in registrations
    assert (macros, launchers) == (1, 2)  # the shared variant added once, beside the plain launcher
