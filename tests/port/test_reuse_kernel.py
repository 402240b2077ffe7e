"""A port launches a kernel the tree already has instead of writing a functor (issue 20): upstream's
conj_physical migration registers its stub beside the copy kernels and launches `copy_conj`.

On the real corpus ($METALPORT_REAL_TREE over a wheel workspace) with a Copy.metal/Copy.mm pair
laid over (tests/port/fixtures/copy_kernels: the corpus has no copy kernels; the fixture follows the
shape upstream's took after 2.13, registrations made by a per-dtype macro).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.checkout.sources import shader_registrations
from metalport.port.write.apply import apply_port
from metalport.checks.reuse_check import verify_reuse
from metalport.port.plan.planner import plan_port
from metalport.port.tree.reuse import existing_kernels
from tests.real_tree import overlay_real_tree

FIXTURES = Path(__file__).parent / "fixtures" / "copy_kernels"
KERNEL = "aten/src/ATen/native/mps/kernels/Copy.metal"
HOST = "aten/src/ATen/native/mps/operations/Copy.mm"
UNARY = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"


def _tree(tmp_path: Path, kernel_text: str | None = None) -> Checkout:
    from metalport.checkout.workspace import GIT_IDENTITY

    checkout = overlay_real_tree(tmp_path / "tree", writable=True)
    (checkout.root / KERNEL).write_text(kernel_text or (FIXTURES / "Copy.metal").read_text())
    shutil.copyfile(FIXTURES / "Copy.mm", checkout.root / HOST)
    for argv in (["add", "-A"], ["commit", "-q", "-m", "copy kernels"]):
        subprocess.run(["git", *GIT_IDENTITY, *argv], cwd=checkout.root, check=True, capture_output=True)
    return checkout


def _diff(root: Path, *paths: str) -> str:
    return subprocess.run(["git", "diff", "--", *paths], cwd=root, capture_output=True, text=True,
                          check=True).stdout


def test_registrations_a_file_local_macro_makes_are_read_per_invocation() -> None:
    text = ("#define REG(DTYPE) \\\n  REGISTER_UNARY_OP(neg, DTYPE##2, DTYPE##2); \\\n"
            "  REGISTER_UNARY_OP(abs, DTYPE, DTYPE)\n\nREG(float);\nREG(half);\nREGISTER_UNARY_OP(sin, int, float);\n")
    regs = {(r.name, r.args, r.where.line) for r in shader_registrations(text, "k.metal")}
    assert regs == {("neg", ("float2", "float2"), 5), ("abs", ("float", "float"), 5),
                    ("neg", ("half2", "half2"), 6), ("abs", ("half", "half"), 6), ("sin", ("int", "float"), 7)}


def test_the_real_unary_kernels_register_real_types_only() -> None:
    import os

    if not os.environ.get("METALPORT_REAL_TREE"):
        pytest.skip("METALPORT_REAL_TREE is unset: no real PyTorch tree to read")
    path = Path(os.environ["METALPORT_REAL_TREE"]) / UNARY
    regs = shader_registrations(path.read_text(), UNARY)
    assert not [r for r in regs if any("DTYPE" in a for a in r.args)]
    assert {r.args[0] for r in regs if r.name == "neg"} >= {"float", "half", "bfloat", "float2", "half2", "long"}


def test_without_a_behavioural_check_the_planner_does_not_reuse_another_ops_kernel(tmp_path: Path) -> None:
    # the planner runs no kernel (port/ imports no checks/): a caller that passes no verifier gets
    # the op's own functor, and the plan says why copy_conj was left
    plan = plan_port(_tree(tmp_path), "conj_physical")
    assert plan.reused_kernel is None and plan.functor == "conj_physical_functor"
    assert any("does not reuse kernel copy_conj" in line and "no behavioural check" in line for line in plan.reuse)


def test_conj_physical_launches_the_trees_copy_conj_kernel(tmp_path: Path) -> None:
    from metalport.checks.contract.rules import check_contract

    checkout = _tree(tmp_path)
    plan = plan_port(checkout, "conj_physical", verify_reuse=verify_reuse)
    assert (plan.reused_kernel, plan.kernel_name, plan.functor, plan.registrations) == ("copy_conj", "copy_conj", None, ())
    assert (plan.kernel_file, plan.host_file, plan.needs_llm) == (KERNEL, HOST, False)
    assert KERNEL not in plan.allowed_paths
    assert plan.reuse[0].startswith(f"reuses kernel copy_conj ({KERNEL}) instead of adding a functor")
    assert "conformance of aten::conj_physical through it passed before planning" in plan.reuse[0]
    assert any(p.startswith(f"host file {HOST}: it launches copy_conj already") for p in plan.placement)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout.root, capture_output=True, text=True).stdout
    apply_port(plan, checkout.root)
    assert _diff(checkout.root, KERNEL, UNARY) == ""  # no functor written anywhere
    host = _diff(checkout.root, HOST)
    assert 'lib.exec_unary_kernel(iter, "copy_conj");' in host
    assert "+REGISTER_DISPATCH(conj_physical_stub, &conj_physical_mps_kernel);" in host
    assert "conj_physical_functor" not in _diff(checkout.root)
    with_base = tmp_path / "base"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(with_base), base.strip()], cwd=checkout.root,
                   check=True, capture_output=True)
    assert check_contract(with_base, checkout.root, plan) == []


def test_a_kernel_that_computes_something_else_is_turned_down_with_the_input_shown(tmp_path: Path) -> None:
    # The candidate's complex branch forgets to negate: conformance at plan time fails on complex64.
    wrong = (FIXTURES / "Copy.metal").read_text().replace("return T(x.x, -x.y);", "return T(x.x, x.y);")
    checkout = _tree(tmp_path, wrong)
    plan = plan_port(checkout, "conj_physical", verify_reuse=verify_reuse)
    assert plan.reused_kernel is None and plan.functor == "conj_physical_functor"
    assert plan.kernel_file == UNARY and plan.functor_step == "table"
    refused = [line for line in plan.reuse if line.startswith("does not reuse kernel copy_conj")]
    assert len(refused) == 1 and "fail" in refused[0], plan.reuse
    assert any(line.startswith("adds conj_physical_functor") for line in plan.reuse)


def test_without_a_kernel_computing_it_the_port_writes_its_functor(tmp_path: Path) -> None:
    checkout = overlay_real_tree(tmp_path / "tree")
    plan = plan_port(checkout, "conj_physical", verify_reuse=verify_reuse)
    assert plan.reused_kernel is None and plan.functor == "conj_physical_functor"
    assert not any(line.startswith(("reuses kernel", "does not reuse kernel")) for line in plan.reuse)


def test_candidates_of_another_arity_or_missing_types_are_said(tmp_path: Path) -> None:
    checkout = _tree(tmp_path)
    from metalport.checkout import scan_sources

    sources = scan_sources(checkout)
    found, refused = existing_kernels(checkout, sources, "conj_physical", 2,
                                      ("REGISTER_BINARY_OP(conj_physical, float, float);",))
    assert found == [] and refused == [f"does not reuse kernel copy_conj ({KERNEL}): its functor takes 1 operand(s), "
                                       f"aten::conj_physical needs 2"]
    found, refused = existing_kernels(checkout, sources, "conj_physical", 1,
                                      ("REGISTER_UNARY_OP(conj_physical, float, float);",
                                       "REGISTER_UNARY_OP(conj_physical, ushort, ushort);"))
    assert found == [] and "lacks 1 registration(s) the port needs, e.g. REGISTER_UNARY_OP(copy_conj, ushort, " \
        "ushort)" in refused[0]
    found, _ = existing_kernels(checkout, sources, "logical_and", 2, ("REGISTER_BINARY_OP(logical_and, float, bool);",))
    assert found == []  # logical_or/xor/not share a word but do not name its leading words


def test_the_ops_own_kernel_registered_for_every_type_is_launched_as_it_is(tmp_path: Path) -> None:
    # The corpus's UnaryKernel.metal has logical_not's functor and every registration the recipe makes.
    checkout = overlay_real_tree(tmp_path / "tree")
    plan = plan_port(checkout, "logical_not")
    assert (plan.functor_step, plan.reused_kernel, plan.functor) == ("reuse", "logical_not", None)
    assert plan.kernel_file == UNARY and plan.host_file == "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
    assert "host file aten/src/ATen/native/mps/operations/UnaryKernel.mm: it loads UnaryKernel.metal's library" \
        in plan.placement
    assert not any("through it passed" in line for line in plan.reuse)  # its own kernel: checked at test time


def test_sub_routed_through_add_stub_launches_the_trees_add_alpha_kernel(tmp_path: Path) -> None:
    # Note [routed stubs reuse the stub's kernel]: sub_out calls add_stub with -alpha, so the port
    # registers add_stub and launches the tree's add_alpha kernel (a + alpha * b, fed -alpha)
    # instead of renaming sub's functor to add_alpha_functor (which computed a - (-alpha) * b)
    root = overlay_real_tree(tmp_path / "tree", writable=True).root
    plan = plan_port(Checkout(root), "sub", verify_reuse=verify_reuse)
    assert plan.functor_step == "reuse" and plan.reused_kernel == "add_alpha" and not plan.needs_llm
    assert plan.register_dispatch == "REGISTER_DISPATCH(add_stub, &sub_mps_kernel);"
    assert plan.kernel_file == "aten/src/ATen/native/mps/kernels/BinaryKernel.metal" and plan.registrations == ()
    assert plan.reuse[0].startswith("reuses kernel add_alpha (aten/src/ATen/native/mps/kernels/BinaryKernel.metal)")
    before = (root / plan.kernel_file).read_text(encoding="utf-8")
    changed = apply_port(plan, root)
    assert plan.kernel_file not in changed and (root / plan.kernel_file).read_text(encoding="utf-8") == before
    host = (root / plan.host_file).read_text(encoding="utf-8")
    assert "REGISTER_DISPATCH(add_stub, &sub_mps_kernel)" in host and "\"add_alpha\"" in host
