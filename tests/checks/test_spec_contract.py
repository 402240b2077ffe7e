"""The contract of a spec-recipe port on the wheel workspace: the applied port keeps it; a
hand-edited launch, a second definition, a missing instantiation, an unlisted one and a missing
MPS row each fail with their check named."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from metalport.checks.contract.rules import check_contract
from metalport.port.plan.model import NATIVE_FUNCTIONS
from metalport.port.plan.planner import apply_port, plan_port

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


LEGACY = "aten/src/ATen/native/mps/operations/ModeGraph.mm"
LEGACY_SOURCE = """\
// Our stand-in for an MPSGraph implementation of mode (the shape of an upstream legacy file).
#include <ATen/native/mps/OperationUtils.h>
#include <ATen/ops/mode_native.h>

namespace at::native {

std::tuple<Tensor, Tensor> mode_mps_graph(const Tensor& self, int64_t dim, bool keepdim) {
  MPSGraph* graph = make_mps_graph();
  return std::make_tuple(self, self);
}

} // namespace at::native
"""


def test_spec_port_of_an_mpsgraph_op_replaces_its_row_and_removes_the_legacy_code(tmp_path: Path) -> None:
    from metalport.checkout import init_workspace

    checkout = init_workspace(tmp_path / "workspace")
    root = checkout.root
    registry = root / NATIVE_FUNCTIONS
    registry.write_text(registry.read_text().replace("    CPU, CUDA: mode\n", "    CPU, CUDA: mode\n    MPS: mode_mps_graph\n", 1))
    (root / LEGACY).write_text(LEGACY_SOURCE)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qam", "mode on MPSGraph"],
                   cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "add", LEGACY], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "legacy"],
                   cwd=root, check=True)
    plan = plan_port(checkout, "aten::mode")
    assert plan.migrate and plan.legacy == (LEGACY, "mode_mps_graph")
    assert [(r.before.strip(), r.after.strip()) for r in plan.rows] == [("MPS: mode_mps_graph", "MPS: mode_mps")]
    worktree = tmp_path / "port"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "port", str(worktree)], cwd=root, check=True)
    apply_port(plan, worktree)
    assert "mode_mps_graph" not in (worktree / NATIVE_FUNCTIONS).read_text()
    assert "mode_mps_graph" not in (worktree / LEGACY).read_text()
    assert [f.message for f in check_contract(root, worktree, plan)] == []
    (worktree / LEGACY).write_text(LEGACY_SOURCE)  # the legacy code put back
    messages = [f.message for f in check_contract(root, worktree, plan)]
    assert "[legacy] legacy implementation mode_mps_graph is still defined" in messages


def test_ctc_port_shares_the_tensor_lengths_entry_and_drops_its_decorator_with_its_comment(tmp_path: Path) -> None:
    from metalport.checkout import init_workspace

    checkout = init_workspace(tmp_path / "workspace")
    plan = plan_port(checkout, "aten::_ctc_loss")
    worktree = tmp_path / "port"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "port", str(worktree)], cwd=checkout.root, check=True)
    apply_port(plan, worktree)
    registry = (worktree / NATIVE_FUNCTIONS).read_text()
    assert "    MPS: ctc_loss_mps\n" in registry and "    CPU, CUDA, MPS: ctc_loss_tensor\n" in registry
    assert [f.message for f in check_contract(checkout.root, worktree, plan)] == []
    # Its xfail (keyed by the OpInfo's name, not the op's) and its decorator go, the comment saying
    # why the decorator was there with it.
    common = (worktree / "torch/testing/_internal/common_mps.py").read_text()
    assert '"nn.functional.ctc_loss": None' not in common
    # Its backward stays off MPS: the OpInfo's gradient checks become expected failures, once.
    grad = '"nn.functional.ctc_loss": [torch.float32],  # `_ctc_loss_backward` is not implemented for MPS'
    assert common.count(grad) == 1 and common.index("XFAILLIST_GRAD = {") < common.index(grad)
    assert apply_port(plan, worktree) == ()
    diff = subprocess.run(["git", "diff", "-U0", "--", "torch/testing/_internal/common_methods_invocations.py"],
                          cwd=worktree, capture_output=True, text=True, check=True).stdout
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert len(removed) == 2 and "MPS device" in removed[0] and "expectedFailure" in removed[1]
    (worktree / "torch/testing/_internal/common_mps.py").write_text(common.replace(grad + "\n", ""))
    assert [f.message for f in check_contract(checkout.root, worktree, plan)] == [
        "[xfail] XFAILLIST_GRAD lacks entry 'nn.functional.ctc_loss', which the plan adds (its backward stays off MPS)"]
    (worktree / "torch/testing/_internal/common_mps.py").write_text(common)
    # The `.Tensor` entry left on CPU/CUDA only breaks the contract.
    (worktree / NATIVE_FUNCTIONS).write_text(registry.replace("    CPU, CUDA, MPS: ctc_loss_tensor\n",
                                                              "    CPU, CUDA: ctc_loss_tensor\n"))
    assert [f.message for f in check_contract(checkout.root, worktree, plan)] == [
        "[rows] _ctc_loss.Tensor should share its CPU/CUDA function with MPS (`CPU, CUDA, MPS: ctc_loss_tensor`)"]


POWSUM_HOST = "aten/src/ATen/native/mps/operations/PowSum.mm"
POWSUM_REGISTER = "REGISTER_DISPATCH(powsum_stub, &powsum_kernel_mps)"


@pytest.mark.parametrize(("registered", "expected"), [
    ("REGISTER_DISPATCH(powsum_stub, &powsum_other_mps)",
     "[stub] powsum_stub is registered to powsum_other_mps, the spec says powsum_kernel_mps"),
    (POWSUM_REGISTER + "\n" + POWSUM_REGISTER, "[stub] powsum_stub must be registered for MPS exactly once, found 2"),
    ("", "[stub] powsum_stub must be registered for MPS exactly once, found 0"),
])
def test_stub_of_a_reduction_spec_port_is_registered_once_to_its_host_function(
        tmp_path: Path, registered: str, expected: str) -> None:
    # A reduction-stub spec port serves its op through the stub the CPU/CUDA kernel calls: the
    # same registered-once check as an elementwise port's stubs, plus the spec's host function.
    from metalport.checkout import init_workspace

    checkout = init_workspace(tmp_path / "workspace")
    plan = plan_port(checkout, "aten::linalg__powsum")
    worktree = tmp_path / "port"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "port", str(worktree)], cwd=checkout.root, check=True)
    apply_port(plan, worktree)
    assert [f.message for f in check_contract(checkout.root, worktree, plan)] == []
    host = worktree / POWSUM_HOST
    assert POWSUM_REGISTER in host.read_text()
    host.write_text(host.read_text().replace(POWSUM_REGISTER, registered))
    messages = [f.message for f in check_contract(checkout.root, worktree, plan)]
    assert any(m.startswith(expected) for m in messages), messages
