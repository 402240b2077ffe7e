"""The acceptance rule (checks/judge/oracle.py, Note [the oracle]) on hand-made (output, CPU, truth) tensors.

Each test builds what a kernel, torch CPU and the float64 truth give for a few inputs and asserts the
verdict a reviewer sees: which elements fail and the rule each breaks, or that an element is
ambiguous (counted apart, never a pass and never a fail).
"""

from __future__ import annotations

import math

import torch

from metalport.checks.judge.outputs import judge_outputs
from metalport.checks.judge.oracle import (ANNEX_G_NAN, ANNEX_G_OPEN, EXACT, HELD_OUT_ACCURACY, NAN_RECOMMENDED,
                                           NAN_UNDEFINED, ZERO_CONVENTION, RELATIVE, SIGNED_ZERO, SPECIAL_DISAGREE,
                                           SPECIAL_IEEE, TOLERANCE, acceptable, conditioning, correctly_rounded, reach,
                                           truth_calls)
from metalport.checks.cases.samples import Call
from metalport.checks.judge.tolerances import tolerance_for

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


def test_exp_of_minus_inf_plus_inf_j_is_open_in_its_zero_signs_and_shown_apart_otherwise() -> None:
    z = torch.tensor([complex(-INF, INF), complex(-INF, -INF), complex(0.0, 0.0)], dtype=torch.complex64)
    cpu, truth = torch.exp(z), torch.exp(z.to(torch.complex128))
    tol = tolerance_for("exp", torch.complex64)
    for zero in (complex(0.0, 0.0), complex(-0.0, 0.0), complex(0.0, -0.0)):  # Annex G: +-0 +- i0
        out = torch.tensor([zero, zero, 1.0], dtype=torch.complex64)
        assert not acceptable(out, cpu, truth, tol, _zeros(z), (z,)).bad.any()
    # upstream's NaN there is not failed: Annex G binds no implementation that does not claim it
    # (Note [complex special values]); it is shown apart, never passed
    nan = torch.tensor([complex(NAN, NAN), 0j, 1.0], dtype=torch.complex64)
    verdict = acceptable(nan, cpu, truth, tol, _zeros(z), (z,))
    assert not verdict.bad.any() and verdict.ambiguous == 1 and verdict.ambiguity == ANNEX_G_OPEN


def test_a_complex_overflow_on_finite_inputs_still_fails() -> None:
    z = torch.tensor([complex(89.25, -11.256), 1 + 1j], dtype=torch.complex64)
    cpu, truth = torch.cosh(z), torch.cosh(z.to(torch.complex128))
    assert torch.isfinite(torch.view_as_real(cpu)).all()
    out = cpu.clone()
    out[0] = complex(INF, INF)  # exp(x) overflowed before the product with cos/sin
    verdict = acceptable(out, cpu, truth, tolerance_for("cosh", torch.complex64), _zeros(z), (z,))
    assert verdict.bad.tolist() == [True, False] and verdict.rule == TOLERANCE


def test_ieee_special_values_are_judged() -> None:
    a, b = torch.tensor([INF, 3.0, -INF]), torch.tensor([NAN, 4.0, 2.0])
    cpu, truth = torch.hypot(a, b), torch.hypot(a.double(), b.double())  # hypot(inf, NaN) is +inf
    out = torch.tensor([NAN, 5.0, NAN])
    verdict = acceptable(out, cpu, truth, F32, _zeros(cpu), (a, b))
    # hypot(-inf, 2) is inf: no NaN operand, so a NaN there is wrong
    assert verdict.bad.tolist() == [False, False, True] and verdict.rule == SPECIAL_IEEE
    # hypot(inf, NaN) = inf is IEEE 754's clause 9 recommendation; NaN, the default result, is shown apart
    assert verdict.ambiguous == 1 and verdict.ambiguity == NAN_RECOMMENDED
    # a finite number CPU and the truth agree on for a NaN operand is required (fmax, as PyTorch documents)
    x, y = torch.tensor([NAN, 2.0]), torch.tensor([1.0, 3.0])
    cpu = torch.fmax(x, y)
    verdict = acceptable(torch.tensor([NAN, 3.0]), cpu, torch.fmax(x.double(), y.double()), F32, _zeros(cpu), (x, y))
    assert verdict.bad.tolist() == [True, False] and verdict.ambiguous == 0


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


def _judged(fn, operands: tuple[torch.Tensor, ...], out: torch.Tensor):
    """The verdict on `out` for fn(*operands) with the truth, conditioning and reach `truth_calls` give."""
    call = Call(fn, operands, {}, tuple(range(len(operands))), None)
    results = [c.run() for c in truth_calls(call)]
    truth, rest = results[0], results[1:]
    cpu = fn(*operands)
    return acceptable(out, cpu, truth, tolerance_for("floor_divide", out.dtype), conditioning(truth, rest, torch.finfo(out.dtype.to_real()).eps),
                      operands, reach(truth, rest))


def test_a_quotient_no_float32_holds_may_floor_to_either_side() -> None:
    # the quotient is -14925109.6; float32 holds no fraction there, so upstream's floor(a / b) gives
    # -14925109 where CPU's fmod-based formula gives -14925110: both are the op one input ulp away
    a, b = torch.tensor([-1.054790699228647e-09]), torch.tensor([7.067222704138705e-17])
    assert not _judged(torch.floor_divide, (a, b), torch.tensor([-14925109.0])).bad.any()
    far = _judged(torch.floor_divide, (a, b), torch.tensor([-14925000.0]))
    assert far.bad.all() and far.rule == EXACT


def test_at_an_exact_multiple_or_a_tie_the_neighbours_excuse_nothing() -> None:
    a, b = torch.tensor([6.0, -9.0]), torch.tensor([3.0, 3.0])
    verdict = _judged(torch.floor_divide, (a, b), torch.tensor([1.0, -4.0]))
    assert verdict.bad.all() and verdict.rule == EXACT
    x = torch.tensor([2.5, -0.5, 3.5])
    tie = _judged(torch.round, (x,), _round_half_away(x))
    assert tie.bad.tolist() == [True, True, False] and tie.rule == EXACT


def test_a_tail_with_a_large_relative_condition_is_judged_by_the_tolerances() -> None:
    # upstream's erfc is 1 - erf(x): in the tail (relative condition 2x^2) it keeps no digits, and
    # test_mps's absolute tolerance accepts that; a log1p that is log(1 + x) (condition 1) still fails
    x = torch.tensor([3.611605167388916, 5.0])
    tail = _judged(torch.special.erfc, (x,), 1.0 - torch.erf(x))
    assert not tail.bad.any()
    small = torch.tensor([1e-7, 3e-6])
    naive = _judged(torch.log1p, (small,), torch.log(1.0 + small))
    assert naive.bad.any() and naive.rule == RELATIVE


def test_complex_special_values_only_annex_g_defines_are_shown_apart() -> None:
    z = torch.tensor([complex(-INF, INF), complex(INF, NAN), complex(1.0, 0.5)], dtype=torch.complex64)
    out = torch.exp(z)
    out[0] = complex(NAN, NAN)  # upstream's exp: exp(re) * (cos(im), sin(im))
    verdict = _judged(torch.exp, (z,), out)
    assert not verdict.bad.any()
    assert verdict.ambiguous == 1 and verdict.ambiguity == ANNEX_G_OPEN
    wrong = torch.exp(z)
    wrong[2] = complex(2.0, 1.0)  # a finite input with a finite truth is judged as any other
    assert _judged(torch.exp, (z,), wrong).bad.tolist() == [False, False, True]


def test_a_nan_for_a_nan_operand_fails_only_where_cpu_and_the_truth_define_a_number() -> None:
    a, b = torch.tensor([NAN, NAN]), torch.tensor([1.0, 2.5])
    fmax_cpu = torch.fmax(a, b)  # fmax(NaN, x) = x: CPU and the truth agree, so NaN is wrong
    verdict = acceptable(torch.tensor([NAN, NAN]), fmax_cpu, fmax_cpu.double(), F32, _zeros(a), (a, b))
    assert verdict.bad.all() and verdict.rule == SPECIAL_IEEE
    garbage_cpu = torch.tensor([-6.6e-36, 0.0])  # what CPU's chebyshev_polynomial_u(NaN, 2.5) reads
    truth = torch.tensor([5e-324, 3e-8], dtype=torch.float64)
    undefined = acceptable(torch.tensor([NAN, NAN]), garbage_cpu, truth, F32, _zeros(a), (a, b))
    assert not undefined.bad.any() and undefined.ambiguity == NAN_UNDEFINED and undefined.ambiguous == 2


def test_remainder_where_one_ulp_of_the_dividend_spans_divisors_is_judged_by_the_tolerances() -> None:
    # quotient 3.9e7: one float32 ulp of the dividend is 2.5 divisors, so the exact value is a matter of
    # its last bit; upstream's x - y * floor(x / y) is 9e-17 off, 5e-8 of the dividend
    a, b = torch.tensor([1.7270059826657302e-09, 7.5]), torch.tensor([-4.453520896523045e-17, 2.0])
    upstream = (a.double() - b.double() * torch.floor(a.double() / b.double()).float().double()).float()
    out = torch.tensor([upstream[0].item(), 1.5])
    assert not _judged(torch.remainder, (a, b), out).bad.any()
    # a well-conditioned element stays exact: one ulp off at remainder(7.5, 2) fails
    off = _judged(torch.remainder, (a, b), torch.tensor([upstream[0].item(), torch.nextafter(torch.tensor(1.5),
                                                                                           torch.tensor(2.0)).item()]))
    assert off.bad.tolist() == [False, True] and off.rule == EXACT


def _held(fn, operands: tuple[torch.Tensor, ...], out: torch.Tensor, held_out: bool):
    call = Call(fn, operands, {}, tuple(range(len(operands))), None)
    results = [c.run() for c in truth_calls(call)]
    truth, rest = results[0], results[1:]
    return acceptable(out, fn(*operands), truth, tolerance_for("hypot", out.dtype), conditioning(truth, rest, torch.finfo(out.dtype.to_real()).eps),
                      operands, reach(truth, rest), held_out=held_out)


def test_a_held_out_accuracy_difference_is_shown_apart_and_a_wrong_value_fails() -> None:
    # complex expm1 as exp(z) - 1 is ~300 ulps off at 16, where no PyTorch test feeds it: an accuracy
    # no standard fixes there; the same error elsewhere fails. An infinity for the finite log(1e20j)
    # (|z|^2 overflowed) keeps none of the truth's digits: wrong on any input (Note [held-out accuracy])
    gen = torch.Generator().manual_seed(0)
    z = torch.complex(torch.rand(63, generator=gen) * 9 + 0.5, torch.rand(63, generator=gen) * 9 - 4.5)
    z = torch.cat([torch.tensor([complex(16, 0), complex(1e-5, 1e20)], dtype=torch.complex64), z])
    out = torch.log(z)
    out[0] = out[0] * (1 + 3.3e-5)
    held = _held(torch.log, (z,), out, True)
    assert not held.bad.any() and held.ambiguous == 1 and held.ambiguity == HELD_OUT_ACCURACY
    regular = _held(torch.log, (z,), out, False)
    assert regular.bad.sum() == 1 and bool(regular.bad[0])
    out[1] = complex(INF, out[1].imag.item())
    held = _held(torch.log, (z,), out, True)
    assert held.bad.tolist()[:2] == [False, True] and held.bad.sum() == 1 and held.ambiguous == 1


def test_an_op_whose_cpu_is_correctly_rounded_everywhere_behaves_as_a_basic_operation() -> None:
    # 1/x (IEEE 754's division) and hypot (computed in double, then rounded) are correctly rounded by
    # CPU on every element: their held-out inputs stay judged; CPU's complex log is not
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(300, generator=gen) * 9 + 1
    assert correctly_rounded([torch.reciprocal(x)], [torch.reciprocal(x.double())])
    a, b = torch.rand(300, generator=gen) * 9, torch.rand(300, generator=gen) * 9
    assert correctly_rounded([torch.hypot(a, b)], [torch.hypot(a.double(), b.double())])
    z = torch.complex(torch.rand(300, generator=gen) * 9 + 0.5, torch.rand(300, generator=gen) * 9 - 4.5)
    assert not correctly_rounded([torch.log(z)], [torch.log(z.to(torch.complex128))])
    assert correctly_rounded([torch.log(z[:10])], [torch.log(z[:10].to(torch.complex128))])  # too few to say


def test_held_out_inputs_still_fail_exactness_signed_zeros_and_special_operands() -> None:
    x = torch.tensor([2.5, -0.0, NAN])
    out = torch.tensor([2.0, 0.0, 1.0])  # round half to even, but +0 for -0 and a number for NaN
    verdict = _held(torch.round, (x,), torch.tensor([3.0, -0.0, NAN]), True)
    assert verdict.bad.tolist() == [True, False, False] and verdict.rule == EXACT
    verdict = _held(torch.round, (x,), out, True)
    assert verdict.bad.tolist() == [False, True, True] and verdict.ambiguous == 0


def test_remainder_where_jumps_are_denser_than_the_dividends_ulp_is_judged_by_the_tolerances() -> None:
    # quotient 1.6e11: both neighbouring dividends land anywhere in (b, 0]; upstream's x - y * floor(x / y)
    # is 1.7e-14 off, 4e-8 of the dividend. At an exact multiple (6, 3) the value stays exact.
    a, b = torch.tensor([-4.1928893779186183e-07, 6.0]), torch.tensor([-2.6431309499358576e-18, 3.0])
    assert not _judged(torch.remainder, (a, b), torch.tensor([-1.734178664385133e-14, 0.0])).bad.any()
    # (seed 5's other one: quotient 1e11, 8.5e-15 for 4.2e-18; either neighbour of the dividend may move
    # the value less than its size, so only the slope between the jumps says how ill-conditioned it is)
    c, d = torch.tensor([9.254441692974069e-07]), torch.tensor([9.007051403262323e-18])
    for bits in range(4):  # the dividends next to it, whose values land anywhere in [0, d)
        e = c.view(torch.int32) + bits
        kernel = (e.view(torch.float32).double() - d.double() * torch.floor(e.view(torch.float32) / d).double()).float()
        assert not _judged(torch.remainder, (e.view(torch.float32), d), kernel).bad.any()
    verdict = _judged(torch.remainder, (a, b), torch.tensor([-1.734178664385133e-14, 4.7683716e-07]))
    assert verdict.bad.tolist() == [False, True] and verdict.rule == EXACT


def test_a_zero_at_a_jump_takes_either_sign_but_a_continuous_ops_does_not() -> None:
    # remainder(-0, 1): CPU -0 (the dividend's sign), the documented a - floor(a/b)*b gives +0; the op is
    # 1 just below -0. mul(-0, 3) is continuous there: +0 is wrong
    a, b = torch.tensor([-0.0, -0.0]), torch.tensor([1.0, 3.0])
    verdict = _judged(torch.remainder, (a, b), torch.tensor([0.0, 0.0]))
    assert not verdict.bad.any() and verdict.ambiguous == 2 and verdict.ambiguity == ZERO_CONVENTION
    product = _judged(torch.mul, (a, b), torch.tensor([0.0, 0.0]))
    assert product.bad.all() and product.rule == SIGNED_ZERO
    # remainder(-0, -0.001): CPU -0, the formula -0 - (-0) = +0 (upstream's kernel): the other sign
    negative = _judged(torch.remainder, (a[:1], torch.tensor([-0.001])), torch.tensor([0.0]))
    assert not negative.bad.any() and negative.ambiguity == ZERO_CONVENTION


def test_nextafter_is_exact_against_the_dtypes_neighbour() -> None:
    # float64's nextafter(1, 2) rounds back to 1 in float32; CPU's 1 + 2^-23 is the exact value there,
    # so two ulps instead of one fails while the float32 tolerances would pass it (Note [a step to a
    # neighbour]); a rounded op an ulp off its truth near an operand is no step
    gen = torch.Generator().manual_seed(3)
    a = torch.randn(64, generator=gen) * 10
    b = a + torch.where(torch.rand(64, generator=gen) < 0.5, -1.0, 1.0)
    cpu = torch.nextafter(a, b)
    assert not _judged(torch.nextafter, (a, b), cpu).bad.any()
    two = torch.nextafter(cpu, b)
    verdict = _judged(torch.nextafter, (a, b), two)
    assert verdict.bad.all() and verdict.rule == EXACT
    x = torch.rand(64, generator=gen) * 1e-4
    assert not _judged(torch.sin, (x,), x).bad.any()  # sin(x) = x to the last float32 bit


def test_a_rounded_op_whose_cpu_is_an_ulp_off_where_its_truth_is_float64s_neighbour_is_no_step() -> None:
    # atanh(x) = x + x^3/3 moves x = -3.07e-8 by one float64 ulp; torch CPU's vectorized float32 path
    # gives x's float32 neighbour there (a CI run's random case). A kernel giving the correctly rounded
    # x is right to the last bit: the case's other truths are far from any operand, so nothing here
    # is a step to a neighbour and the tolerances judge
    gen = torch.Generator().manual_seed(11)
    # magnitudes as the small-magnitude case draws them: most truths are x itself (exact elements)
    mags = 10.0 ** (-18 + 12 * torch.rand(256, generator=gen, dtype=torch.float64))
    x = torch.cat([torch.tensor([-3.0719530030864917e-08]), mags.float() * torch.sign(torch.randn(256, generator=gen))])
    correctly_rounded = torch.atanh(x.double()).float()
    assert correctly_rounded[0] == x[0]

    def vector_path_atanh(t: torch.Tensor) -> torch.Tensor:  # CPU's float32 value, whatever SIMD runs here
        y = torch.atanh(t)
        return y if t.dtype != torch.float32 else torch.cat([torch.nextafter(x[:1], torch.zeros(1)), y[1:]])

    assert not _judged(vector_path_atanh, (x,), correctly_rounded).bad.any()
