"""The params route under conformance (Note [params route], metalport/port/plan/params.py): the emulated
host passes every scalar of the call into the params struct at opmath float, so a kernel that
ignores one (softplus without `beta`) fails on OpInfo samples with non-default scalars."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from metalport.checks.conformance import ConformanceSession, run_conformance
from tests.checks.fixture_checkouts import FIXTURES, make_checkout

# Plausible bugs: the scalar read but not used, the threshold branch inverted.
MUTANTS = {
    "softplus": ("float(x) * p.beta;", "float(x);"),
    "softplus_backward": ("if (scaled > p.threshold) {", "if (scaled < p.threshold) {"),
}


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_checkout(tmp_path_factory.mktemp("params-good"),
                         {"ActivationKernel.metal": (FIXTURES / "params.metal").read_text()})


def _mutant(root: Path, op: str) -> Path:
    before, after = MUTANTS[op]
    text = (FIXTURES / "params.metal").read_text()
    assert text.count(before) >= 1
    if op == "softplus":  # only the forward functor loses beta
        head, _, tail = text.partition("struct softplus_backward_functor")
        text = head.replace(before, after, 1) + "struct softplus_backward_functor" + tail
    else:
        text = text.replace(before, after)
    return make_checkout(root, {"ActivationKernel.metal": text})


@pytest.mark.parametrize("op", sorted(MUTANTS))
def test_correct_params_kernels_pass(good: Path, session: ConformanceSession, op: str) -> None:
    report = run_conformance(good, f"aten::{op}", backend="emulated", seed=5, session=session)
    assert report.status == "pass", report.summary_for_model()
    assert sorted(d.dtype for d in report.dtypes) == ["bfloat16", "float16", "float32"]
    assert all(d.passed == d.samples and d.samples > 4 for d in report.dtypes)
    summary = report.summary_for_model()
    assert "alpha=(" in summary  # every scalar reached the struct


def test_softplus_runs_its_opinfo_samples_with_their_beta(good: Path, session: ConformanceSession) -> None:
    report = run_conformance(good, "aten::softplus", backend="emulated", seed=5, session=session,
                             dtypes=["float32"], include_held_out=False)
    summary = report.summary_for_model()
    assert re.search(r"float32: opinfo [1-9]\d*/[1-9]", summary), summary  # nn.functional.softplus's samples
    assert "alpha=(1.0, 20.0)" not in summary  # its worst case ran with non-default scalars


@pytest.mark.parametrize("op", sorted(MUTANTS))
def test_a_kernel_ignoring_a_scalar_fails(tmp_path: Path, session: ConformanceSession, op: str) -> None:
    root = _mutant(tmp_path / op, op)
    report = run_conformance(root, f"aten::{op}", backend="emulated", seed=5, session=session,
                             include_held_out=False)
    assert report.status == "fail"
    failure = next(f for d in report.dtypes for f in d.failures)
    assert failure.kind == "conformance" and f"{op}_dense_" in failure.message
    assert "SoftplusParams" in failure.message


GLU = """#include <c10/metal/indexing.h>
#include <metal_stdlib>
using namespace metal;
struct glu_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return static_cast<T>(float(a) / (1.0f + ::metal::exp(-float(b))));
  }
};
REGISTER_BINARY_OP(glu, float, float);
REGISTER_BINARY_OP(glu, half, half);
"""


@pytest.mark.parametrize(("source", "status"), [(GLU, "pass"), (GLU.replace("-float(b)", "float(b)"), "fail")])
def test_glu_runs_as_a_binary_call_on_the_halves(tmp_path: Path, session: ConformanceSession, source: str,
                                                 status: str) -> None:
    root = make_checkout(tmp_path / status, {"ActivationKernel.metal": source})
    report = run_conformance(root, "aten::glu", backend="emulated", seed=5, session=session, include_held_out=False)
    assert report.status == status, report.summary_for_model()
    assert all(d.samples > 4 for d in report.dtypes)
    assert "glu(float32[" in report.summary_for_model()  # judged as a call on two halves


def _dense_glu(source: str) -> str:
    """GLU with the contiguous kernel of Note [halves forward] (port/write/halves.py) registered too."""
    from metalport.port.write.halves import DENSE_KERNELS

    return (source.replace("struct glu_functor", f"{DENSE_KERNELS}\nstruct glu_functor")
            + "REGISTER_HALVES_DENSE_OP(glu, float);\nREGISTER_HALVES_DENSE_OP(glu, half);\n")


@pytest.mark.parametrize(("bug", "status"), [(None, "pass"), ("input[at + run - 1]", "fail")])
def test_glu_with_a_dense_kernel_runs_it_for_contiguous_inputs(tmp_path: Path, session: ConformanceSession,
                                                               bug: str | None, status: str) -> None:
    # Note [halves forward]: the host's contiguous path reads the second half `run` elements on; an
    # off-by-one there (the binary kernels still right) fails on the kernel the host launches
    source = _dense_glu(GLU)
    if bug is not None:
        assert "input[at + run]" in source
        source = source.replace("input[at + run]", bug)
    root = make_checkout(tmp_path / status, {"ActivationKernel.metal": source})
    report = run_conformance(root, "aten::glu", backend="emulated", seed=5, session=session, include_held_out=False)
    assert report.status == status, report.summary_for_model()
    assert all(d.samples > 4 for d in report.dtypes)
    if bug is not None:
        failure = next(f for d in report.dtypes for f in d.failures)
        assert "glu_dense_float" in failure.message or "glu_dense_half" in failure.message
