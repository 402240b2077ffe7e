"""Stub routing in the plan and the contract, on real upstream files (METALPORT_REAL_TREE).

trunc is registered upstream by `REGISTER_MPS_UNARY_STUB(trunc, truncate);` (UnaryOps.mm:181, an
MPSGraph kernel): a port replaces that registration, and one that adds a second fails. (acosh is
registered the same way and MPS runs it for complex today: its plan keeps float2/half2.) `sub_out` calls
`add_stub` with `-alpha` (BinaryOps.cpp:448), and nothing calls `sub_stub`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.checks.contract.rules import check_contract
from metalport.port.plan.planner import PortPlan, apply_port, plan_port
from tests.recipes.porting import clone, read, write

UNARY_OPS = "aten/src/ATen/native/mps/operations/UnaryOps.mm"
UNARY_HOST = "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
BINARY_HOST = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"


# What a model would write for trunc, which is outside the recipe table.
TRUNC_FUNCTOR = """\
struct trunc_functor {
  template <typename T>
  inline T operator()(const T x) {
    return static_cast<T>(::metal::trunc(static_cast<float>(x)));
  }
};
"""


@pytest.fixture(scope="module")
def trunc(real_tree_workspace: Checkout) -> PortPlan:
    return plan_port(real_tree_workspace, "trunc")


def _stub_failures(base: Checkout, worktree: Path, plan: PortPlan) -> list[str]:
    return [f"{f.file}:{f.line}: {f.message}" for f in check_contract(base.root, worktree, plan)
            if f.message.startswith("[stub]")]


def test_trunc_plan_replaces_the_graph_registration(trunc: PortPlan) -> None:
    assert (trunc.status, trunc.stub, trunc.stubs) == ("mps-graph-stub", "trunc_stub", ("trunc_stub",))
    assert trunc.legacy_registrations == ((UNARY_OPS, 181, "REGISTER_MPS_UNARY_STUB(trunc, truncate);"),)
    assert trunc.stub_registered_at is None and UNARY_OPS in trunc.allowed_paths
    assert trunc.stub_route == ("trunc_out calls trunc_stub (if !(c10::isIntegralType(self.scalar_type(), false))) "
                                "(aten/src/ATen/native/UnaryOps.cpp:319)")


def test_acosh_plan_keeps_complex_and_replaces_the_graph_registration(real_tree_workspace: Checkout) -> None:
    plan = plan_port(real_tree_workspace, "acosh")
    assert plan.dtypes[-2:] == ("float2", "half2")
    assert plan.legacy_registrations == ((UNARY_OPS, 176, "REGISTER_MPS_UNARY_STUB(acosh, acosh);"),)


def test_trunc_port_keeps_one_registration(real_tree_workspace: Checkout, trunc: PortPlan, tmp_path: Path) -> None:
    worktree = clone(real_tree_workspace, tmp_path / "wt")
    apply_port(trunc, worktree, functor_source=TRUNC_FUNCTOR)
    assert "REGISTER_MPS_UNARY_STUB(trunc, truncate);" not in read(worktree, UNARY_OPS)
    assert "REGISTER_MPS_UNARY_STUB(floor, floor);" in read(worktree, UNARY_OPS)
    assert _stub_failures(real_tree_workspace, worktree, trunc) == []


def test_a_second_registration_beside_the_macro_fails(real_tree_workspace: Checkout, trunc: PortPlan,
                                                      tmp_path: Path) -> None:
    worktree = clone(real_tree_workspace, tmp_path / "wt")
    apply_port(trunc, worktree, functor_source=TRUNC_FUNCTOR)
    write(worktree, UNARY_OPS, read(real_tree_workspace.root, UNARY_OPS))  # the macro registration is back
    failures = _stub_failures(real_tree_workspace, worktree, trunc)
    assert len(failures) == 1
    assert failures[0].startswith(f"{UNARY_OPS}:181: [stub] trunc_stub must be registered for MPS exactly once, "
                                  f"found 2 ({UNARY_HOST}:")
    assert failures[0].endswith(f", {UNARY_OPS}:181 by REGISTER_MPS_UNARY_STUB): a link error")


def test_sub_registers_the_stub_sub_out_calls(real_tree_workspace: Checkout, tmp_path: Path) -> None:
    plan = plan_port(real_tree_workspace, "sub")
    assert (plan.stub, plan.stubs, plan.stub_args) == ("add_stub", ("add_stub",), ("-alpha",))
    assert plan.register_dispatch is not None and plan.register_dispatch.startswith("REGISTER_DISPATCH(add_stub,")
    worktree = clone(real_tree_workspace, tmp_path / "wt")
    apply_port(plan, worktree)
    host = read(worktree, BINARY_HOST)
    line = next(i for i, t in enumerate(host.splitlines(), 1) if t.startswith("REGISTER_DISPATCH(add_stub,"))
    runs = {c for c in ("sub", "sub_alpha") if f'"{c}"' in host}
    if runs:  # a kernel that subtracts, fed -alpha, adds: caught
        assert _stub_failures(real_tree_workspace, worktree, plan) == [
            f"{BINARY_HOST}:{line}: [stub] add_stub is called with -alpha (sub_out calls add_stub (with -alpha) "
            "(aten/src/ATen/native/BinaryOps.cpp:445)), so the kernel registered for it must compute add; "
            f"sub_mps_kernel runs {', '.join(repr(k) for k in sorted(runs))}"]
    else:
        assert _stub_failures(real_tree_workspace, worktree, plan) == []


def test_a_registration_nothing_calls_fails(real_tree_workspace: Checkout, tmp_path: Path) -> None:
    plan = plan_port(real_tree_workspace, "sub")
    worktree = clone(real_tree_workspace, tmp_path / "wt")
    apply_port(plan, worktree)
    host = read(worktree, BINARY_HOST)
    write(worktree, BINARY_HOST, host.replace("REGISTER_DISPATCH(add_stub,", "REGISTER_DISPATCH(sub_stub,"))
    failures = _stub_failures(real_tree_workspace, worktree, plan)
    assert failures[0] == (f"{BINARY_HOST}:None: [stub] add_stub must be registered for MPS exactly once, found 0; "
                           "sub_out calls add_stub (with -alpha) (aten/src/ATen/native/BinaryOps.cpp:445)")
    line = next(i for i, t in enumerate(read(worktree, BINARY_HOST).splitlines(), 1)
                if "REGISTER_DISPATCH(sub_stub," in t)
    assert failures[1] == (f"{BINARY_HOST}:{line}: [stub] nothing calls sub_stub, yet the port registers it; "
                           "sub_out calls add_stub (with -alpha) (aten/src/ATen/native/BinaryOps.cpp:445)")
    assert len(failures) == 2


def test_sgn_registers_both_stubs_its_kernel_calls(real_tree_workspace: Checkout, tmp_path: Path) -> None:
    plan = plan_port(real_tree_workspace, "sgn")
    assert (plan.stub, plan.stubs) == ("sign_stub", ("sign_stub", "sgn_stub"))
    worktree = clone(real_tree_workspace, tmp_path / "wt")
    apply_port(plan, worktree)
    host = read(worktree, plan.host_file)
    assert "REGISTER_DISPATCH(sign_stub, sgn_mps_kernel);\nREGISTER_DISPATCH(sgn_stub, sgn_mps_kernel);\n" in host
    assert _stub_failures(real_tree_workspace, worktree, plan) == []
    write(worktree, plan.host_file, host.replace("REGISTER_DISPATCH(sgn_stub, sgn_mps_kernel);\n", ""))
    assert _stub_failures(real_tree_workspace, worktree, plan) == [
        f"{plan.host_file}:None: [stub] sgn_stub must be registered for MPS exactly once, found 0; "
        "sgn_out calls sign_stub (real), sgn_stub (complex) (aten/src/ATen/native/UnaryOps.cpp:747)"]
