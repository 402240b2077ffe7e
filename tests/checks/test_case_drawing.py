"""Cases that find bugs for every operand (Note [special pairings], Note [special values in spec cases])
and the verdict of a port whose OpInfo samples all go unjudged (Note [not judged])."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from metalport.checks.cases.case import build_cases
from metalport.checks.cases.elementwise import ElementwiseCases
from metalport.checks.conformance import case_generator, run_conformance
from metalport.checks.cases.samples import ExecConvention
from metalport.checks.cases.specials import salt_specials, special_rows
from metalport.cli import main
from tests.checks.fixture_checkouts import make_checkout

SOFTPLUS = """#include <c10/metal/indexing.h>
#include <metal_stdlib>
using namespace metal;
using namespace c10::metal;
// a port that ignores softplus's beta and threshold
struct softplus_functor {
  template <typename T>
  inline T operator()(const T x) {
    return static_cast<T>(::metal::precise::log(1.0f + ::metal::precise::exp(static_cast<float>(x))));
  }
};
REGISTER_UNARY_OP(softplus, float, float);
"""


def _held_out(op: str, family: ExecConvention, dtype: torch.dtype, seed: int = 3) -> dict[str, list[torch.Tensor]]:
    packet = getattr(torch.ops.aten, op)
    cases, _ = build_cases(ElementwiseCases(family, op, packet, dtype, case_generator(seed, dtype)), True)
    return {c.label: list(c.operands()) for c in cases if c.kind == "held-out"}


def _pairs(a: torch.Tensor, b: torch.Tensor) -> set[tuple[str, str]]:
    def kind(v: float) -> str:
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "-0" if math.copysign(1.0, v) < 0 else "0"
        return "finite"
    if a.shape != b.shape:
        return set()
    return {(kind(x), kind(y)) for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())}


def test_a_zero_of_either_sign_meets_nan_and_inf_in_every_operand() -> None:
    sets = _held_out("atan2", ExecConvention.BINARY, torch.float32)
    pairs = set()
    for operands in sets.values():
        pairs |= _pairs(*operands)
    for zero in ("0", "-0"):
        for special in ("nan", "inf", "-inf"):
            assert (zero, special) in pairs and (special, zero) in pairs, (zero, special)


def test_every_extremal_sample_of_opinfo_is_drawn_the_nan_propagation_one_too() -> None:
    labels = _held_out("atan2", ExecConvention.BINARY, torch.float32)
    assert "held-out extremal values" in labels and "held-out extremal values (sample 1)" in labels
    lhs, rhs = labels["held-out extremal values (sample 1)"]
    assert lhs.isnan().any() and rhs.isnan().any() and lhs.isfinite().any()  # NaN among numbers


def test_ties_and_exact_multiples_are_drawn() -> None:
    sets = _held_out("floor_divide", ExecConvention.BINARY, torch.float32)
    a, b = sets["held-out ties and exact multiples"]
    quotient = a.double() / b.double()
    assert (quotient == quotient.round()).sum() > 20 and (quotient - quotient.floor() == 0.5).sum() > 20
    x, = _held_out("round", ExecConvention.UNARY, torch.float32)["held-out ties and exact multiples"]
    assert {2.5, -0.5, 3.5} <= set(x.tolist())
    assert any(v != round(v) and abs(v - 2.5) < 1e-6 for v in x.tolist())  # a tie's one-ulp neighbours


def test_integer_exact_multiples_of_both_signs() -> None:
    a, b = _held_out("remainder", ExecConvention.BINARY, torch.int32)["held-out exact multiples"]
    exact = (a % b == 0) & (a != 0)
    assert bool((exact & ((a < 0) != (b < 0))).any()) and bool((exact & ((a < 0) == (b < 0))).any())


def test_huge_meets_tiny_across_operands() -> None:
    a, b = _held_out("atan2", ExecConvention.BINARY, torch.float32)["held-out every magnitude, huge against tiny"]
    assert bool(((a.abs() > 1e30) & (b.abs() < 1e-30)).any()) and bool(((b.abs() > 1e30) & (a.abs() < 1e-30)).any())


def test_spec_inputs_meet_special_values() -> None:
    gen = torch.Generator().manual_seed(1)
    rows = special_rows(torch.float32, gen)
    assert bool(rows.isnan().any(dim=1).sum() >= 1) and bool((rows.isinf().sum(dim=1) >= 2).any())
    assert bool(((rows == 0).all(dim=1)).any()) and bool(torch.signbit(rows[rows == 0]).any())
    salted = salt_specials(torch.randn(4000, generator=gen), gen)
    assert bool(salted.isinf().any()) and bool((salted == 0).any()) and not bool(salted.isnan().any())
    t = torch.randn(5, 7, generator=gen).t()
    assert salt_specials(t, gen).stride() == t.stride()


def test_a_port_whose_opinfo_samples_all_go_unjudged_fails(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = make_checkout(tmp_path / "c", {"Softplus.metal": SOFTPLUS})
    report = run_conformance(root, "softplus", backend="emulated", seed=3)
    verdict = report.dtypes[0]
    assert report.status == "fail" and verdict.tally("opinfo").samples == 0 and verdict.opinfo_unjudged > 0
    assert any("0 of" in str(f) and "OpInfo samples judged" in str(f) and "beta" in str(f) for f in verdict.failures)
    assert main(["conformance", "aten::softplus", "--repo", str(root), "--backend", "emulated", "--seed", "3"]) == 1
    assert "OpInfo samples judged" in capsys.readouterr().out
