"""The acceptance rule (checks/oracle.py, Note [the oracle]) on hand-made (output, CPU, truth) tensors.

Each test builds what a kernel, torch CPU and the float64 truth give for a few inputs and asserts the
verdict a reviewer sees: which elements fail and the rule each breaks, or that an element is
ambiguous (counted apart, never a pass and never a fail).
"""

from __future__ import annotations

import math

import torch

from metalport.checks.judge import judge_outputs
from metalport.checks.oracle import (ANNEX_G_NAN, EXACT, RELATIVE, SIGNED_ZERO, SPECIAL_ANNEX_G, SPECIAL_DISAGREE,
                                     SPECIAL_IEEE, acceptable, conditioning, truth_calls)
from metalport.checks.samples import Call
from metalport.checks.tolerances import Tolerance, tolerance_for

INF, NAN = math.inf, math.nan
F32 = tolerance_for("round", torch.float32)


def _zeros(t: torch.Tensor) -> torch.Tensor:
    return torch.zeros(t.shape, dtype=torch.float64)


def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def test_a_tie_breaking_bug_in_a_step_function_fails_as_exact() -> None:
    x = torch.tensor([0.5, 1.5, 2.5, -2.5, 3.7, 1e6 + 0.5])
    cpu, truth = torch.round(x), torch.round(x.double())
    verdict = acceptable(_round_half_away(x), cpu, truth, F32, _zeros(x), (x,))
    assert verdict.bad.tolist() == [True, False, True, True, False, True]
    assert verdict.rule == EXACT
    assert not acceptable(cpu.clone(), cpu, truth, F32, _zeros(x), (x,)).bad.any()


def test_a_tie_bug_fails_in_half_although_test_mps_lists_round_as_low_precision() -> None:
    x = torch.tensor([2.5, 0.5, -4.5], dtype=torch.float16)
    tol = tolerance_for("round", torch.float16)
    assert tol.atol >= 1e-2  # the low-precision list would hide a 1-off at small magnitudes
    verdict = acceptable(_round_half_away(x), torch.round(x), torch.round(x.double()), tol, _zeros(x), (x,))
    assert verdict.bad.all() and verdict.rule == EXACT


def test_an_exact_op_one_ulp_off_fails() -> None:
    x = torch.tensor([3.0, 4.0, -7.0, 1.0e7])
    cpu = torch.floor(x)
    off = torch.nextafter(cpu, torch.full_like(cpu, INF))  # within test_mps's rtol, still wrong
    verdict = acceptable(off, cpu, torch.floor(x.double()), F32, _zeros(x), (x,))
    assert verdict.bad.all() and verdict.rule == EXACT


def test_a_rounded_result_is_not_held_exact() -> None:
    x = torch.tensor([0.3, 1.7, 2.9])
    cpu, truth = torch.exp(x), torch.exp(x.double())
    one_ulp = torch.nextafter(cpu, torch.full_like(cpu, INF))
    assert not acceptable(one_ulp, cpu, truth, F32, _zeros(x), (x,)).bad.any()


def test_a_float32_subnormal_result_may_come_out_flushed() -> None:
    x = torch.tensor([1e-39, 3.0])
    cpu, truth = x * 1.0, x.double()
    assert not acceptable(torch.tensor([0.0, 3.0]), cpu, truth, F32, _zeros(x), (x,)).bad.any()
    half = x.to(torch.float16)  # the GPU keeps half subnormals: no flushing there
    tiny = torch.tensor([6e-8, 3.0], dtype=torch.float16)
    verdict = acceptable(torch.tensor([0.0, 3.0], dtype=torch.float16), tiny, tiny.double(),
                         tolerance_for("neg", torch.float16), _zeros(tiny), (half,))
    assert verdict.bad.tolist() == [True, False]


def test_the_sign_of_a_zero_is_compared_where_cpu_and_the_truth_agree() -> None:
    x = torch.tensor([-0.0, 0.0, -0.4, 2.0])
    cpu, truth = torch.round(x), torch.round(x.double())  # round(-0.4) is -0
    verdict = acceptable(_round_half_away(x) + 0.0, cpu, truth, F32, _zeros(x), (x,))  # + 0.0 loses -0
    assert verdict.bad.tolist() == [True, False, True, False]
    assert verdict.rule == SIGNED_ZERO


def test_the_sign_of_a_selected_or_cancelled_zero_is_left_open() -> None:
    a, b = torch.tensor([0.0, 1.5]), torch.tensor([-0.0, 1.5])
    cpu = torch.tensor([-0.0, 0.0])  # maximum(+0, -0) picks -0 on CPU; x - x is +0
    out = torch.tensor([0.0, -0.0])
    assert not acceptable(out, cpu, cpu.double(), F32, _zeros(cpu), (a, b)).bad.any()


def test_a_correct_kernel_passes_at_exp_of_minus_inf_plus_inf_j_per_annex_g() -> None:
    z = torch.tensor([complex(-INF, INF), complex(-INF, -INF), complex(0.0, 0.0)], dtype=torch.complex64)
    cpu, truth = torch.exp(z), torch.exp(z.to(torch.complex128))
    tol = tolerance_for("exp", torch.complex64)
    for zero in (complex(0.0, 0.0), complex(-0.0, 0.0), complex(0.0, -0.0)):  # Annex G: +-0 +- i0
        out = torch.tensor([zero, zero, 1.0], dtype=torch.complex64)
        assert not acceptable(out, cpu, truth, tol, _zeros(z), (z,)).bad.any()
    nan = torch.tensor([complex(NAN, NAN), 0j, 1.0], dtype=torch.complex64)
    verdict = acceptable(nan, cpu, truth, tol, _zeros(z), (z,))
    assert verdict.bad.tolist() == [True, False, False] and verdict.rule == SPECIAL_ANNEX_G


def test_ieee_special_values_are_judged() -> None:
    a, b = torch.tensor([INF, 3.0, -INF]), torch.tensor([NAN, 4.0, 2.0])
    cpu, truth = torch.hypot(a, b), torch.hypot(a.double(), b.double())  # hypot(inf, NaN) is +inf
    out = torch.tensor([NAN, 5.0, INF])
    verdict = acceptable(out, cpu, truth, F32, _zeros(cpu), (a, b))
    assert verdict.bad.tolist() == [True, False, False] and verdict.rule == SPECIAL_IEEE


def test_an_ambiguous_element_is_counted_apart_not_failed() -> None:
    z = torch.tensor([complex(INF, INF), 1 + 1j], dtype=torch.complex64)
    cpu = torch.tensor([complex(NAN, NAN), 2 + 2j], dtype=torch.complex64)  # a + alpha * b: inf * 0 in alpha * b
    out = torch.tensor([complex(INF, INF), 2 + 2j], dtype=torch.complex64)
    verdict = acceptable(out, cpu, cpu.to(torch.complex128), tolerance_for("add", torch.complex64), _zeros(z), (z, z))
    assert not verdict.bad.any() and verdict.ambiguous == 1 and verdict.ambiguity == ANNEX_G_NAN
    judged = judge_outputs([out], [cpu], [tolerance_for("add", torch.complex64)], "add_k", truths=(cpu.to(torch.complex128),),
                           conds=(_zeros(z),), operands=(z, z))
    assert judged.problem is None and judged.rule is None
    assert judged.ambiguous is not None and "(inf+infj)" in judged.ambiguous and "CPU (nan+nanj)" in judged.ambiguous


def test_references_disagreeing_on_a_special_value_make_an_ambiguous_element() -> None:
    x = torch.tensor([1e38, 2.0])
    cpu = torch.tensor([NAN, 4.0])  # CPU's intermediate overflowed, the float64 truth did not
    truth = torch.tensor([3e38, 4.0], dtype=torch.float64)
    verdict = acceptable(torch.tensor([INF, 4.0]), cpu, truth, F32, _zeros(x), (x,))
    assert not verdict.bad.any() and verdict.ambiguity == SPECIAL_DISAGREE
    wrong = acceptable(torch.tensor([3e38, 5.0]), cpu, truth, F32, _zeros(x), (x,))
    assert wrong.bad.tolist() == [False, True]  # a finite disagreement with both is still a fail


def test_a_failure_names_its_input_the_three_values_and_the_rule() -> None:
    x = torch.tensor([2.5])
    judged = judge_outputs([_round_half_away(x)], [torch.round(x)], [F32], "round_k",
                           truths=(torch.round(x.double()),), conds=(_zeros(x),), operands=(x,))
    assert judged.rule == EXACT
    assert "at input (2.5) kernel 3.0, CPU 2.0, truth 2.0" in judged.problem and "rule: exact" in judged.problem


def test_cancellation_fails_the_relative_bound() -> None:
    x = torch.tensor([1e-7, 3e-6])
    cpu, truth = torch.log1p(x), torch.log1p(x.double())
    naive = torch.log(1.0 + x)  # within test_mps's atol of CPU
    cond = torch.ones(2, dtype=torch.float64) * x.double()  # |x d/dx log1p(x)| ~ x
    verdict = acceptable(naive, cpu, truth, F32, cond, (x,))
    assert verdict.bad.any() and verdict.rule == RELATIVE


def _floor_divide_cond(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    call = Call(torch.ops.aten.floor_divide.default, (a, b), {}, (0, 1), None)
    results = [c.run() for c in truth_calls(call)]
    return conditioning(results[0], results[1:])


def test_at_a_jump_the_allowance_is_zero_so_the_exact_value_judges() -> None:
    a, b = torch.tensor([6.0, -6.0, 7.0]), torch.tensor([3.0, 3.0, 3.0])
    cond = _floor_divide_cond(a, b)
    assert cond.tolist() == [0.0, 0.0, 0.0]  # an exact multiple: a jump, not an infinite slope
    cpu, truth = torch.floor_divide(a, b), torch.floor_divide(a.double(), b.double())
    off = torch.tensor([1.0, -3.0, 2.0])  # floor of an exact multiple taken one too low / high
    verdict = acceptable(off, cpu, truth, F32, cond, (a, b))
    assert verdict.bad.tolist() == [True, True, False] and verdict.rule == EXACT


def test_a_steep_smooth_function_keeps_its_allowance() -> None:
    x = torch.tensor([1.5707963])  # tan near pi/2: the slope is huge, not a jump
    call = Call(torch.ops.aten.tan.default, (x,), {}, (0,), None)
    results = [c.run() for c in truth_calls(call)]
    cond = conditioning(results[0], results[1:])
    assert float(cond[0]) > 1e6 and math.isfinite(float(cond[0]))


def test_a_sum_exact_only_by_coincidence_keeps_its_tolerance() -> None:
    rows = torch.rand(64, 9, generator=torch.Generator().manual_seed(3))
    cpu, truth = rows.sum(1), rows.double().sum(1)
    coincident = torch.nonzero(truth.to(torch.float32).double() == truth).reshape(-1)
    out = cpu.clone()
    out[0] = torch.nextafter(cpu[0], torch.tensor(INF))  # another order of additions, one ulp away
    out[coincident] = torch.nextafter(cpu[coincident], torch.full_like(cpu[coincident], INF))
    assert not acceptable(out, cpu, truth, F32, None).bad.any()
