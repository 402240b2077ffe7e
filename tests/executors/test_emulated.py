"""The emulated executor on the fixture port: compile diagnostics at the user's line, emulated
conformance pass and fail, and executor selection."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from metalport.port.plan.planner import PortPlan, apply_port, plan_port
from metalport.checkout import Checkout
from metalport.errors import EmulateError, UsageError
from metalport.executors import EmulatedExecutor, select_executor
from metalport.executors import emulated
from metalport.executors.emulated import baseline, build, edited_kernel_files
from tests.fixture_repo import make_fixture_checkout
from tests.recipes.porting import clone, read, write

KERNEL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
TYPES = ("float", "int")  # two dtypes keep the compile short


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    return make_fixture_checkout(tmp_path_factory.mktemp("emulated"))


@pytest.fixture(scope="module")
def plan(base: Checkout) -> PortPlan:
    full = plan_port(base, "heaviside")
    regs = tuple(r for r in full.registrations if any(f", {t}, " in r for t in TYPES))
    return dataclasses.replace(full, dtypes=TYPES, registrations=regs)


@pytest.fixture
def ported(base: Checkout, plan: PortPlan, tmp_path: Path) -> Path:
    wt = clone(base, tmp_path / "wt")
    apply_port(plan, wt)
    return wt


@pytest.fixture(scope="module")
def clean_port(base: Checkout, plan: PortPlan, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ported worktree shared by the passing tests (its compiled shader is cached)."""
    wt = clone(base, tmp_path_factory.mktemp("clean") / "wt")
    apply_port(plan, wt)
    return wt


def test_build_compiles_the_edited_kernel_file(plan: PortPlan, clean_port: Path) -> None:
    assert edited_kernel_files(clean_port, plan) == [KERNEL]
    assert build(clean_port, plan) == []


def test_compile_errors_point_at_the_users_line(plan: PortPlan, ported: Path) -> None:
    text = read(ported, KERNEL).replace("      return values;\n", "      return values\n", 1)
    write(ported, KERNEL, text)
    failures = build(ported, plan)
    assert failures and all(f.kind == "compile-error" for f in failures)
    line = text.splitlines().index("      return values") + 1
    first = failures[0]
    assert first.file == KERNEL and first.line in (line, line + 1)
    assert "expected" in first.message and ";" in first.message.translate({0x2018: "'", 0x2019: "'"})


def test_conformance_passes_for_the_recipe(plan: PortPlan, clean_port: Path) -> None:
    report, failures = emulated.test(clean_port, plan, held_out=True)
    assert (report.status, report.backend, failures) == ("pass", "emulated", [])
    assert {d.dtype for d in report.dtypes} == {"float32", "int32"}
    assert all(d.held_out_samples > 0 for d in report.dtypes)


def test_a_wrong_functor_fails_conformance_with_evidence(plan: PortPlan, ported: Path) -> None:
    text = read(ported, KERNEL).replace("return static_cast<T>(x > static_cast<T>(0));",
                                        "return static_cast<T>(x < static_cast<T>(0));")
    write(ported, KERNEL, text)
    report, failures = emulated.test(ported, plan, held_out=False)
    assert report.status == "fail" and failures
    assert {f.kind for f in failures} == {"conformance"} and failures[0].file == KERNEL


def test_the_build_instantiates_only_the_ops_kernels(plan: PortPlan, ported: Path) -> None:
    # A neighbour's functor that fails only when instantiated: the op's build never instantiates it.
    text = read(ported, KERNEL).replace("return static_cast<T>(::metal::precise::atan2(float(a), float(b)));",
                                        "return a.no_such_member;")
    write(ported, KERNEL, text)
    assert build(ported, plan) == []
    failures = baseline(ported, plan)  # the baseline type-checks every kernel of the file
    assert failures and failures[0].file == KERNEL
    assert failures[0].line == text.splitlines().index("    return a.no_such_member;") + 1


def test_baseline_of_an_untouched_base_is_clean(base: Checkout, plan: PortPlan) -> None:
    assert baseline(base.root, plan) == []
    missing = dataclasses.replace(plan, kernel_file="aten/src/ATen/native/mps/kernels/Nowhere.metal")
    assert baseline(base.root, missing) == []  # the port creates the file: nothing to check


def test_a_plan_without_kernels_fails_the_build(base: Checkout, plan: PortPlan, tmp_path: Path) -> None:
    wt = clone(base, tmp_path / "bare")
    missing = dataclasses.replace(plan, kernel_file="aten/src/ATen/native/mps/kernels/Nowhere.metal")
    failures = build(wt, missing)
    assert [f.message for f in failures] == ["no edited .metal file to compile for aten::heaviside"]


def test_select_executor_here_is_emulated(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(select_executor("auto"), EmulatedExecutor)
    assert select_executor("emulated").name == "emulated"
    with pytest.raises(UsageError) as err:
        select_executor("macos")
    assert str(err.value) == ("executor macos needs MPS, but torch.backends.mps.is_available() is False; "
                              "run on an Apple-silicon Mac, or use --executor emulated")
    with pytest.raises(UsageError, match="unknown executor 'emulted'; did you mean 'emulated'"):
        select_executor("emulted")
    monkeypatch.setenv("METALPORT_CXX", "/nonexistent/clang++")
    with pytest.raises(EmulateError, match="does not run or print a version"):
        select_executor("emulated")
