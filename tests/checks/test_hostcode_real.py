"""The conformance host lookup on real upstream files: the stub the op's CPU kernel calls leads to
its registration (macro-made too) and the kernel name the registered function passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.checks.contract.hostcode import HostCode, find_host_code
from tests.real_tree import overlay_real_tree

OPS = "aten/src/ATen/native/mps/operations"


@pytest.mark.parametrize(("op", "expected"), [
    # special_chebyshev_polynomial_t_out calls chebyshev_polynomial_t_stub (BinaryOps.cpp:491)
    ("special_chebyshev_polynomial_t", HostCode("chebyshev_polynomial_t", f"{OPS}/BinaryKernel.mm:105")),
    # REGISTER_UNARY_TI_DISPATCH(exp) makes exp_kernel_mps, which passes #NAME
    ("exp", HostCode("exp", f"{OPS}/UnaryKernel.mm:53")),
    ("special_erfcx", HostCode("erfcx", f"{OPS}/UnaryKernel.mm:49")),
    # REGISTER_MPS_UNARY_STUB(acosh, acosh): an MPSGraph kernel, nothing to run in emulation
    ("acosh", HostCode(None, f"{OPS}/UnaryOps.mm:176",
                       f"acosh_stub is registered with the MPSGraph kernel mps_acosh_kernel ({OPS}/UnaryOps.mm:176)",
                       graph=True)),
])
def test_host_lookup_follows_the_route(real_tree_workspace: Checkout, op: str, expected: HostCode) -> None:
    assert find_host_code(real_tree_workspace.root, op) == expected


def test_sub_runs_the_kernel_registered_for_add_stub_with_negated_alpha(tmp_path: Path) -> None:
    checkout = overlay_real_tree(tmp_path / "tree", writable=True)
    host = checkout.mps_operations / "BinaryKernel.mm"
    text = host.read_text()
    added = ("static void add_with_alpha_kernel(TensorIteratorBase& iter, const Scalar& alpha) {\n"
             '  lib.exec_binary_kernel(iter, "add_alpha", alpha);\n'
             "}\n"
             "REGISTER_DISPATCH(add_stub, &add_with_alpha_kernel)\n")
    host.write_text(text.replace("} // namespace at::native", added + "} // namespace at::native"))
    line = text[:text.index("} // namespace at::native")].count("\n") + 1
    assert find_host_code(checkout.root, "sub") == HostCode("add_alpha", f"{OPS}/BinaryKernel.mm:{line}",
                                                           stub_args=("-alpha",))
    assert find_host_code(checkout.root, "add").stub_args == ()  # add_out (ufunc) passes alpha as it is


def test_sub_conformance_feeds_the_add_kernel_negated_alpha(real_tree_workspace: Checkout, tmp_path: Path) -> None:
    from metalport.checks.conformance import run_conformance
    from metalport.port.plan.planner import apply_port, plan_port
    from tests.recipes.porting import clone

    plan = plan_port(real_tree_workspace, "sub")  # registers add_stub, which sub_out calls with -alpha
    worktree = clone(real_tree_workspace, tmp_path / "wt")
    apply_port(plan, worktree)
    report = run_conformance(worktree, "sub", dtypes=["float32", "int32"], include_held_out=False, seed=7)
    assert report.status == "pass", [f.message for d in report.dtypes for f in d.failures][:2]
    assert all(d.tallies["opinfo"].passed == d.tallies["opinfo"].samples == 11 for d in report.dtypes)
