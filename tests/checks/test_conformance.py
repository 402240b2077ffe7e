"""run_conformance on our own kernels: correct ones pass, each mutant fails, held-out stays hidden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.checks.conformance import ConformanceSession, run_conformance
from metalport.checks.report import NO_HOST_MODEL
from tests.checks.fixture_checkouts import FIXTURES, make_checkout

# op -> the dtypes its functor is registered for in fixtures/pointwise.metal
REGISTERED = {
    "neg": ["float32", "float16", "bfloat16", "int8", "int32", "int64"],
    "abs": ["float32", "float16", "int16", "int32"],
    "sign": ["float32", "float16", "uint8", "int32"],
    "sigmoid": ["float32", "float16", "int32"],
    "exp2": ["float32", "bfloat16", "int64"],
    "hardshrink": ["float32", "float16"],
    "heaviside": ["float32", "float16", "int32"],
    "atan2": ["float32", "float16", "int32"],
    "copysign": ["float32", "bfloat16"],
    "maximum": ["float32", "float16", "bool", "int64"],
    "logical_and": ["float32", "bool", "int32"],
    "add": ["float32", "float16", "int32"],
    "sub": ["float32", "int64"],
    "lerp": ["float32", "float16"],
    "where": ["float32", "int32"],
}

# op -> where its mutant must show: in the regular samples, or only in the held-out edge cases
MUTANTS = {
    "neg": "samples",        # integer branch returns x
    "abs": "samples",        # negatives keep their sign
    "sign": "held-out",      # NaN passed through
    "sigmoid": "samples",    # wrong sign of the exponent
    "exp2": "samples",       # integer branch computes exp
    "hardshrink": "samples",  # negative side dropped
    "heaviside": "samples",  # ignores `values` at zero
    "atan2": "samples",      # arguments swapped
    "copysign": "held-out",  # sign of -0.0 lost
    "maximum": "held-out",   # NaN propagation dropped
    "logical_and": "samples",  # computes or
    "add": "samples",        # alpha ignored
    "sub": "samples",        # wrong sign for integers
    "lerp": "samples",       # wrong upper branch
    "where": "samples",      # branches swapped
}


@pytest.mark.parametrize("op", sorted(REGISTERED))
def test_correct_kernels_pass_against_torch(good_checkout: Path, session: ConformanceSession, op: str) -> None:
    report = run_conformance(good_checkout, f"aten::{op}", backend="emulated", seed=7, session=session)
    assert report.status == "pass", report.summary_for_model()
    assert report.ok() and report.backend == "emulated" and report.seed == 7
    assert sorted(d.dtype for d in report.dtypes) == sorted(REGISTERED[op])
    for d in report.dtypes:
        assert d.samples > 4 and d.passed == d.samples
        assert d.held_out_samples >= 12 and d.held_out_passed == d.held_out_samples
        assert d.failures == ()


@pytest.mark.parametrize("op", sorted(MUTANTS))
def test_each_mutant_is_caught(mutant_checkout: Path, session: ConformanceSession, op: str) -> None:
    where = MUTANTS[op]
    report = run_conformance(mutant_checkout, f"aten::{op}", backend="emulated", seed=11,
                             include_held_out=where == "held-out", session=session)
    assert report.status == "fail" and not report.ok()
    failing = [d for d in report.dtypes if not d.ok]
    assert failing
    if where == "samples":
        assert any(d.passed < d.samples for d in failing)
        failure = next(f for d in failing for f in d.failures)
        assert failure.kind == "conformance" and failure.file.endswith("PointwiseKernel.metal")
        assert failure.line is not None and "REGISTER" in (mutant_checkout / failure.file).read_text().splitlines()[
            failure.line - 1]
    else:
        assert any(d.held_out_passed < d.held_out_samples for d in failing)
        assert any(f.kind == "held-out" for d in failing for f in d.failures)


def test_held_out_inputs_never_reach_the_model(mutant_checkout: Path) -> None:
    report = run_conformance(mutant_checkout, "aten::maximum", backend="emulated", seed=3, dtypes=["float32"])
    verdict = report.dtypes[0]
    assert verdict.held_out_inputs, "the NaN mutant must fail some held-out case"
    summary = report.summary_for_model()
    plain = json.dumps(report.to_dict())
    for leaked in verdict.held_out_inputs:
        assert leaked not in summary and leaked not in plain
    for marker in ("inputs:", "special values", "nan,", "-inf", "3.4028234663852886e+38"):
        assert marker not in summary and marker not in plain
    assert "held-out 1" in summary or "held-out" in summary
    assert "held_out_inputs" not in report.to_dict()["dtypes"][0]
    full = report.to_dict(include_held_out_inputs=True)["dtypes"][0]["held_out_inputs"]
    assert full == list(verdict.held_out_inputs) and any("nan" in s for s in full)


def test_broken_indexing_header_is_caught(broken_header_checkout: Path) -> None:
    neg = run_conformance(broken_header_checkout, "aten::neg", backend="emulated", seed=5)
    assert neg.status == "fail"
    messages = [f.message for d in neg.dtypes for f in d.failures]
    assert any("never written" in m for m in messages) or neg.dtypes[0].held_out_passed < neg.dtypes[0].held_out_samples
    atan2 = run_conformance(broken_header_checkout, "aten::atan2", backend="emulated", seed=5,
                                include_held_out=False)
    assert atan2.status == "fail"
    assert any("atan2_dense_float_float" in f.message for d in atan2.dtypes for f in d.failures)


def test_unmodelled_kernel_gets_no_host_model_verdict(reduction_checkout: Path) -> None:
    report = run_conformance(reduction_checkout, "aten::logsumexp", backend="emulated", seed=1)
    assert report.status == "no-host-model" and not report.ok()
    assert NO_HOST_MODEL in (report.reason or "")
    assert report.dtypes == ()


def test_same_seed_same_report(good_checkout: Path) -> None:
    first = run_conformance(good_checkout, "aten::atan2", backend="emulated", seed=42, dtypes=["half"],
                            include_held_out=False)
    second = run_conformance(good_checkout, "aten::atan2", backend="emulated", seed=42, dtypes=["float16"],
                             include_held_out=False)
    assert first.to_dict() == second.to_dict() and first.dtypes[0].dtype == "float16"


def _host_file(body: str) -> str:
    return ("#include <ATen/native/mps/OperationUtils.h>\n\nnamespace at::native {\n"
            "static void atan2_mps_kernel(TensorIteratorBase& iter) {\n" + body + "}\n\n"
            "REGISTER_DISPATCH(atan2_stub, &atan2_mps_kernel);\n} // namespace at::native\n")


def test_host_code_names_the_kernel(tmp_path: Path) -> None:
    small = (FIXTURES / "small.metal").read_text()
    small = small.replace("struct atan2_functor", "struct my_atan2_functor").replace(
        "REGISTER_BINARY_OP(atan2,", "REGISTER_BINARY_OP(my_atan2,")
    root = make_checkout(tmp_path / "co", {"Small.metal": small})
    (root / "aten/src/ATen/native/mps/operations").mkdir(parents=True)
    (root / "aten/src/ATen/native/mps/operations/BinaryKernel.mm").write_text(
        _host_file('  lib.exec_binary_kernel(iter, "my_atan2");\n'))
    report = run_conformance(root, "aten::atan2", backend="emulated", seed=2, include_held_out=False)
    assert report.status == "pass", report.summary_for_model()
    assert report.dtypes[0].dtype == "float32" and report.dtypes[0].samples > 4


def test_host_code_outside_the_helpers_gets_no_host_model(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "co", {"Small.metal": (FIXTURES / "small.metal").read_text()})
    (root / "aten/src/ATen/native/mps/operations").mkdir(parents=True)
    (root / "aten/src/ATen/native/mps/operations/BinaryKernel.mm").write_text(
        _host_file("  auto pso = lib.getPipelineStateForFunc(\"atan2_custom\");\n  mtl_setArgs(enc, iter);\n"))
    report = run_conformance(root, "aten::atan2", backend="emulated", seed=2)
    assert report.status == "no-host-model" and report.dtypes == ()
    assert report.reason == ("atan2_mps_kernel (aten/src/ATen/native/mps/operations/BinaryKernel.mm:4) calls no "
                             "exec_unary/binary/ternary_kernel; no emulated host model; verify on macOS")
