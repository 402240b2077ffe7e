"""The contract of a spec-recipe port on the wheel workspace: the applied port keeps it; a
hand-edited launch, a second definition, a missing instantiation, an unlisted one and a missing
MPS row each fail with their check named."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from metalport.checks.contract import check_contract
from metalport.port.plan_model import NATIVE_FUNCTIONS
from metalport.port.port import apply_port, plan_port

HOST = "aten/src/ATen/native/mps/operations/Mode.mm"
KERNEL = "aten/src/ATen/native/mps/kernels/Mode.metal"


@pytest.fixture(scope="module")
def ported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    from metalport.checkout import init_workspace

    base = tmp_path_factory.mktemp("spec-contract")
    checkout = init_workspace(base / "workspace")
    plan = plan_port(checkout, "aten::mode")
    worktree = base / "port"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "port", str(worktree)], cwd=checkout.root, check=True)
    changed = apply_port(plan, worktree)
    assert set(changed) == {NATIVE_FUNCTIONS, HOST, KERNEL, "torch/testing/_internal/common_mps.py",
                            "torch/testing/_internal/common_methods_invocations.py"}  # xfail and decorator gone
    assert apply_port(plan, worktree) == ()  # a second apply changes nothing
    return checkout.root, worktree, plan


def _messages(ported: tuple[Path, Path, object]) -> list[str]:
    base, worktree, plan = ported
    return [f.message for f in check_contract(base, worktree, plan)]


def test_applied_spec_port_keeps_the_contract(ported: tuple[Path, Path, object]) -> None:
    _, worktree, plan = ported
    assert plan.kind == "custom-kernel" and plan.spec["op"] == "mode"
    assert "    MPS: mode_mps" in (worktree / NATIVE_FUNCTIONS).read_text().splitlines()
    assert _messages(ported) == []


BREAKAGES = [
    (HOST, "mtl_dispatch1DJob(encoder, pso, count);", "mtl_dispatch1DJob(encoder, pso, count * 2);",
     "[host] mode_mps differs from the host code its launch spec gives"),
    (KERNEL, "REGISTER_MODE_OP(bool);", '// "mode_float_float_int"',
     "[kernel-name] the spec's instantiation 'mode_bool_bool_long' is not registered"),
    (KERNEL, "", "", "[kernel-name] kernel 'mode_float_float_int' is registered but the spec does not list it"),
    (NATIVE_FUNCTIONS, "    MPS: mode_mps\n", "", "[rows] mode does not dispatch MPS to mode_mps"),
    (HOST, "} // namespace at::native", "std::tuple<Tensor, Tensor> mode_mps(const Tensor& self) {\n  return {};\n}\n"
                                        "} // namespace at::native", "[host] mode_mps is defined 2 times"),
]


def test_broken_spec_port_fails_each_named_check(ported: tuple[Path, Path, object]) -> None:
    # One contract run over five independent breakages (the checks report each on its own).
    originals = {rel: (ported[1] / rel).read_text() for rel, _, _, _ in BREAKAGES}
    try:
        for rel, old, new, _ in BREAKAGES:
            path = ported[1] / rel
            text = path.read_text()
            assert old in text
            path.write_text(text.replace(old, new, 1) if old else text)
        messages = _messages(ported)
    finally:
        for rel, text in originals.items():
            (ported[1] / rel).write_text(text)
    for _, _, _, expected in BREAKAGES:
        assert any(m.startswith(expected) for m in messages), (expected, messages)
    assert _messages(ported) == []
