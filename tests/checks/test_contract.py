"""check_contract: a clean port passes; each fixture below breaks exactly one check and only that
check reports (tags in brackets), with the file and line where there is one."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from metalport.port.plan.planner import PortPlan, apply_port, plan_port
from metalport.checkout import Checkout
from metalport.checks.contract.rules import check_contract
from metalport.failure import Failure
from tests.fixture_repo import make_fixture_checkout
from tests.recipes.porting import clone, read, write

YAML = "aten/src/ATen/native/native_functions.yaml"
KERNEL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
HOST = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
LEGACY = "aten/src/ATen/native/mps/operations/BinaryOps.mm"
COMMON = "torch/testing/_internal/common_mps.py"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    return make_fixture_checkout(tmp_path_factory.mktemp("contract"))


@pytest.fixture(scope="module")
def plan(base: Checkout) -> PortPlan:
    return plan_port(base, "heaviside")


@pytest.fixture
def ported(base: Checkout, plan: PortPlan, tmp_path: Path) -> Path:
    wt = clone(base, tmp_path / "wt")
    apply_port(plan, wt)
    return wt


def _tags(failures: list[Failure]) -> set[str]:
    assert all(f.kind == "contract" for f in failures)
    return {re.match(r"\[([\w-]+)\]", f.message).group(1) for f in failures}  # type: ignore[union-attr]


def _edit(root: Path, rel: str, change: Callable[[str], str]) -> None:
    before = read(root, rel)
    after = change(before)
    assert after != before, f"the fixture edit did not change {rel}"
    write(root, rel, after)


def test_clean_port_passes(base: Checkout, plan: PortPlan, ported: Path) -> None:
    assert check_contract(base.root, ported, plan) == []


def test_unported_tree_fails_rows_stub_and_legacy(base: Checkout, plan: PortPlan, tmp_path: Path) -> None:
    failures = check_contract(base.root, clone(base, tmp_path / "wt"), plan)
    assert _tags(failures) == {"rows", "stub", "legacy", "xfail"}


def test_torchgen_rejection_is_a_registry_failure(base: Checkout, plan: PortPlan, ported: Path) -> None:
    _edit(ported, YAML, lambda t: t.replace("    CPU, CUDA, MPS: heaviside_out", "    CPU, CUDA, MSP: heaviside_out"))
    failures = check_contract(base.root, ported, plan)
    assert _tags(failures) == {"registry"}
    assert failures[0].file == YAML and failures[0].line == 8 and "'MSP'" in failures[0].message


def test_a_row_left_on_the_mps_kernel_fails_rows(base: Checkout, plan: PortPlan, ported: Path) -> None:
    _edit(ported, YAML, lambda t: t.replace("    CPU, CUDA, MPS: heaviside_out\n",
                                            "    CPU, CUDA: heaviside_out\n    MPS: heaviside_out_mps\n"))
    failures = check_contract(base.root, ported, plan)
    assert _tags(failures) == {"rows"}
    assert (failures[0].file, failures[0].line) == (YAML, 9)
    assert failures[0].message == ("[rows] heaviside.out still dispatches MPS to heaviside_out_mps; "
                                   "route it to the shared kernel")


def test_a_second_registration_fails_stub(base: Checkout, plan: PortPlan, ported: Path) -> None:
    _edit(ported, HOST, lambda t: t.replace("} // namespace at::native",
                                            "REGISTER_DISPATCH(heaviside_stub, &heaviside_mps_kernel);\n"
                                            "} // namespace at::native"))
    failures = check_contract(base.root, ported, plan)
    assert _tags(failures) == {"stub"}
    assert "must be registered for MPS exactly once, found 2" in failures[0].message


def test_an_undeclared_stub_fails_stub(base: Checkout, plan: PortPlan, ported: Path) -> None:
    _edit(ported, HOST, lambda t: t.replace("REGISTER_DISPATCH(heaviside_stub", "REGISTER_DISPATCH(wobble_stub"))
    failures = check_contract(base.root, ported, dataclasses.replace(plan, stub="wobble_stub", stubs=("wobble_stub",)))
    assert [f.message for f in failures] == [
        "[stub] wobble_stub is not declared (no DECLARE_DISPATCH in the tree or the wheel's headers)"]


def test_a_host_kernel_name_without_functors_fails_kernel_name(base: Checkout, plan: PortPlan, ported: Path) -> None:
    _edit(ported, HOST, lambda t: t.replace('(iter, "heaviside")', '(iter, "heavyside")'))
    failures = check_contract(base.root, ported, plan)
    assert _tags(failures) == {"kernel-name"}
    assert failures[0].message == ('[kernel-name] heaviside_mps_kernel runs kernel "heavyside" but no .metal '
                                   'file registers it')
    assert failures[0].file == HOST


def test_a_planned_dtype_left_unregistered_fails_kernel_name(base: Checkout, plan: PortPlan, ported: Path) -> None:
    _edit(ported, KERNEL, lambda t: t.replace("REGISTER_BINARY_OP(heaviside, bool, bool);\n", ""))
    failures = check_contract(base.root, ported, plan)
    assert [f.message for f in failures] == [
        '[kernel-name] kernel "heaviside" is not registered for planned dtype(s) bool']


def test_legacy_code_left_behind_fails_legacy(base: Checkout, plan: PortPlan, ported: Path) -> None:
    write(ported, LEGACY, read(base.root, LEGACY))
    failures = check_contract(base.root, ported, plan)
    assert _tags(failures) == {"legacy"}
    assert [(f.file, f.line) for f in failures] == [(LEGACY, 8), (LEGACY, 3)]


@pytest.mark.parametrize("change, message", [
    (lambda t: t.replace('        UNIMPLEMENTED_XFAILLIST: dict[str, list | None] = {\n',
                         '        UNIMPLEMENTED_XFAILLIST: dict[str, list | None] = {\n'
                         '            "heaviside": None,\n'),
     "still has entry 'heaviside'"),
    (lambda t: t.replace('            "hypot": [torch.float16, torch.bfloat16],\n', ""),
     "lost entry 'hypot', which the plan does not remove"),
    (lambda t: t.replace('"hypot": [torch.float16, torch.bfloat16]', '"hypot": [torch.float16]'),
     "UNIMPLEMENTED_XFAILLIST['hypot'] changed"),
    (lambda t: t.replace('            "logaddexp": [torch.bfloat16],\n',
                         '            "logaddexp": [torch.bfloat16],\n            "atan2": None,\n'),
     "SKIPLIST gained entry 'atan2'"),
    (lambda t: t.replace("    return ops\n", "    ops = list(ops)\n    return ops\n"),
     "common_mps.py changed outside its xfail/skip lists"),
])
def test_test_list_edits_beyond_the_plan_fail_xfail(base: Checkout, plan: PortPlan, ported: Path,
                                                     change: Callable[[str], str], message: str) -> None:
    _edit(ported, COMMON, change)
    failures = check_contract(base.root, ported, plan)
    assert _tags(failures) == {"xfail"}
    assert message in failures[0].message and failures[0].file == COMMON


def test_paths_off_the_allow_list_fail_allow_list(base: Checkout, plan: PortPlan, ported: Path) -> None:
    write(ported, "aten/src/ATen/native/mps/operations/Extra.mm", "// nothing to see\n")
    _edit(ported, "aten/src/ATen/native/BinaryOps.h", lambda t: t + "// touched\n")
    failures = check_contract(base.root, ported, plan)
    assert _tags(failures) == {"allow-list"}
    assert sorted(f.file for f in failures) == ["aten/src/ATen/native/BinaryOps.h",
                                                "aten/src/ATen/native/mps/operations/Extra.mm"]


@pytest.mark.parametrize("line, what", [
    ("  auto copy = iter.output(0).cpu();", "CPU fallback"),
    ('  auto other = iter.input(0).to("cpu");', "CPU fallback"),
    ("  TORCH_CHECK(iter.device().type() != at::kCPU);", "CPU fallback"),
    ("  MPSGraph* graph = nil;", "MPSGraph"),
    ("  const float atol = 1e-3f;", "tolerance edit"),
])
def test_cheats_in_new_code_fail_anti_cheat(base: Checkout, plan: PortPlan, ported: Path, line: str,
                                            what: str) -> None:
    _edit(ported, HOST, lambda t: t.replace('  lib.exec_binary_kernel(iter, "heaviside");\n',
                                            f'{line}\n  lib.exec_binary_kernel(iter, "heaviside");\n'))
    failures = check_contract(base.root, ported, plan)
    assert _tags(failures) == {"anti-cheat"}
    at = read(ported, HOST).splitlines().index(line) + 1
    assert (failures[0].file, failures[0].line) == (HOST, at)
    assert failures[0].message.startswith(f"[anti-cheat] {what} in new code: ")


def test_comments_are_not_cheats(base: Checkout, plan: PortPlan, ported: Path) -> None:
    _edit(ported, HOST, lambda t: t.replace('  lib.exec_binary_kernel(iter, "heaviside");\n',
                                            '  // unlike the old MPSGraph code, no .cpu() round trip\n'
                                            '  lib.exec_binary_kernel(iter, "heaviside");\n'))
    assert check_contract(base.root, ported, plan) == []


def test_test_file_edits_fail_anti_cheat(base: Checkout, plan: PortPlan, ported: Path) -> None:
    write(ported, "test/test_mps.py", "# loosened\n")
    failures = check_contract(base.root, ported, plan)
    assert [f.message for f in failures] == ["[anti-cheat] test file test/test_mps.py changed: a port does not "
                                             "edit tests"]


def test_wheel_workspace_port_passes(wheel_workspace: Checkout, tmp_path: Path) -> None:
    wheel_plan = plan_port(wheel_workspace, "heaviside")
    wt = clone(wheel_workspace, tmp_path / "wt")
    apply_port(wheel_plan, wt)
    assert check_contract(wheel_workspace.root, wt, wheel_plan) == []


def test_a_narrowed_xfail_left_wide_fails_xfail(base: Checkout, tmp_path: Path) -> None:
    from tests.recipes.porting import commit_all

    repo = clone(base, tmp_path / "repo")
    wide = '"heaviside": [torch.float16, torch.complex64],'
    write(repo, COMMON, read(repo, COMMON).replace('"heaviside": None,', wide))
    commit_all(repo, "heaviside fails for half and complex64 only")
    partial = plan_port(Checkout(repo), "heaviside")
    wt = clone(Checkout(repo), tmp_path / "wt")
    apply_port(partial, wt)
    assert check_contract(repo, wt, partial) == []
    _edit(wt, COMMON, lambda t: t.replace('"heaviside": [torch.complex64],', wide))
    assert [f.message for f in check_contract(repo, wt, partial)] == [
        "[xfail] UNIMPLEMENTED_XFAILLIST['heaviside'] should list exactly the dtypes the port leaves failing: "
        "complex64"]
