"""The one acceptance rule of conformance: an output is right because it is right.

Note [the oracle]
Every floating or complex output element is judged against two references: torch CPU at the
output dtype (`cpu`) and the truth, the same op evaluated by torch CPU in float64/complex128 on
the upcast inputs (`truth_calls`; mpmath where float64 is itself inexact, Note [precise truth]).
Integer and bool outputs are exact: CPU is the truth. A floating element is, in this order:

  * right when it is CPU's value (NaN where CPU's is NaN) or the truth correctly rounded to the dtype;
  * exact (rule `exact`) where the truth is a value of the dtype and CPU gives it (step functions,
    ties, exact multiples, integer results, signs), on a case where that holds for at least
    EXACT_SHARE of the elements with a finite truth (elsewhere the truth of a rounded op, a sum's,
    is a value of the dtype only by coincidence): then it must be that value, whatever test_mps's
    tolerance (its low-precision lists included). A float32/bfloat16 subnormal may come out as zero
    (Apple GPUs flush float32 subnormals; half keeps them). Decided from values, never op names;
  * otherwise within test_mps's tolerance of CPU, or within the dtype's tolerance of the truth
    widened by the conditioning allowance `COND_SLACK * eps * sum_i |x_i df/dx_i|` (a numeric
    derivative of the float64 truth), rule `tolerance vs CPU and truth`; and, where the truth is a
    normal number of the dtype and the problem well-conditioned (relative condition <=
    WELL_CONDITIONED), within REL_BOUND relatively plus the allowance (rule `relative bound`:
    log(1+x) for log1p fails; Note [relative bound]);
  * special values (rules `special-value (IEEE 754)` / `special-value (C99 Annex G)`): where the
    truth rounds to a finite value inf/NaN is wrong unless CPU gives it; where the truth is NaN or
    +-inf the output must be too (or CPU's); a complex truth that overflows the dtype is a complex
    infinity (some part infinite, as Annex G counts them), and so must the output be;
  * signed zero (rule `signed-zero`, Note [signed zeros]).

Note [relative bound]: the bound asks for the digits a correct evaluation keeps where the problem
is about as well-conditioned as a basic operation (relative condition at most WELL_CONDITIONED: a
quotient's is 2, log1p's, sinh's and a reciprocal's near 1). There losing them is a formula's fault
(log(1+x) for log1p, (e^x - e^-x)/2 for sinh, 1/x flushed to zero). Where the relative condition
is larger (erfc(x) has 2x^2 in its tail, where 1 - erf(x) is upstream's formula) the tolerances
against CPU and the truth judge, as test_mps's do: its absolute tolerance accepts erfc(5) = 0, and
a bound no PyTorch test asks for is no standard. Until this note, the bound applied up to a
condition of 32, and erfc's upstream functor failed at 3.6 (2.98e-7 for 3.26e-7). Nor does the bound
ask more than torch CPU achieves: an element may be off the truth by twice CPU's own error
(igammac(1e-7, 0.5): CPU 4.49e-8, the kernel 5.41e-8, the truth 5.60e-8).

Note [a jump between neighbours]: a step function's value at x is exact, but a jump may lie between x
and the next value of its dtype: floor_divide(-1.0548e-9, 7.0672e-17) in float32 has the quotient
-14925109.6, which no float32 holds, so any evaluation that rounds it (CPU's own float32 division
would) lands on either side. The truth is also taken at each operand's neighbouring values of its
dtype (`reach`); where the op is constant over a finer step either side of x (the jump is not at x
itself) the output may be any value between the op's values there (a float32 ulp of the dividend
moves that quotient by 1.57, so its neighbours' floors are -14925111 and -14925108). At a tie or an exact multiple the jump is at
x (round(2.5), floor_divide(6, 3)): the finer step moves the value there, and the exact value alone
is right.

Note [discontinuities]: at a jump the numeric derivative says nothing. The truth is also taken at a
step 2^14 times finer; an operand whose fine step moves the value as much as the coarse one sits on
a jump and adds no allowance (it used to add an infinite one, which switched the bound off): the
element is judged against the exact value there. A steep but smooth slope keeps its allowance.

Note [signed zeros]: where a real output is a zero, CPU and the truth give a zero of one sign, and
IEEE 754 fixes that sign, the output's must match. IEEE fixes it for an exact zero reached through at
most one nonzero operand (the sign rules of the basic operations, roundToIntegral, odd functions at
+-0). A zero the output dtype underflows a nonzero truth to (mish_backward's 1.6e-36 in half) is
judged by the tolerances, not by its sign: a composite function's error there exceeds the value, so
either zero is within it. IEEE leaves open a zero cancelled out of several nonzero
operands (x - x is +0 by one formula, -0 by another; torch CPU's scalar and vector lerp differ) and
a zero selected among zero operands (IEEE 754-2008 maxNum). Complex zero signs are not compared:
Annex G defines them as branch-cut sides, but CPU's own come from its formulas (neg(0j) is +0j).

Note [a zero at a jump]: where the op jumps right next to x, a zero there takes a side's sign by
convention. remainder(-0, 1): torch CPU gives -0 (the sign of the zero dividend, as IEEE 754's
remainder and C's fmod do), while PyTorch documents remainder as a - floor(a / b) * b with the
divisor's sign, which gives +0 (upstream's kernel); the op is 1 at the dividend's neighbour below.
remainder(-0, -0.001) the other way round: CPU -0 (the dividend's), the formula +0 (-0 - (-0)).
Where one operand is a zero and another is not and an operand's neighbouring value moves the op to
a value of the operands' size (more than eps of the largest), the element is ambiguous
(ZERO_CONVENTION), whichever sign the output's zero has. A continuous op keeps its zero sign judged:
mul(-0, 3) = -0 (its neighbours give 4e-45), floor(-0) = -0 (one operand).

Note [complex special values]: where a complex operand or the complex truth has an infinite or NaN
part, only C99 Annex G defines the result (exp(-inf+infj) = +-0 +- 0i, clog(-0+0i) = -inf+i*pi,
cabs(inf+NaN i) = inf), and Annex G binds only an implementation that defines
__STDC_IEC_559_COMPLEX__ (informative in C99, conditional since C11). Metal has no complex type at
all, torch claims no Annex G (its CPU and CUDA kernels differ there), and test_mps feeds complex ops
finite random samples. A port differing from CPU and the truth there is shown in the ambiguous
column with its input, never passed and never failed: upstream's own exp, sin, tan, tanh, log and
abs functors differ there. Finite complex inputs with a finite truth are judged as every other
value: a kernel overflowing an intermediate (cosh(89-11j) = inf+infj) fails.

A NaN operand: a NaN output is IEEE 754's default result (6.2). A number is required there only
where torch CPU and the float64 truth give the same one (fmax(NaN, 1) = 1, hypot(inf, NaN) = inf,
xlogy(0, NaN) = NaN is the other way round); where they differ, neither defines it
(CPU in float32 gives a number its float64 twin does not) and the element is ambiguous (NAN_UNDEFINED).
Where CPU's number is memory its loop never wrote (chebyshev_polynomial_u(NaN, 2.5) repeats the
previous element's value, in float32 and float64 alike, so both can agree) the caller's truth is
already NaN there (Note [a value its neighbours wrote] in `neighbours`). Where both give an
infinity (hypot(inf, NaN) = inf), that is a recommendation of IEEE 754's clause 9, which a NaN (the
default result) does not break: ambiguous too (NAN_RECOMMENDED). A finite number both give
(fmax(NaN, 1) = 1, which PyTorch documents) is required.

Note [held-out accuracy]: a held-out case feeds values no PyTorch test does (the extremes of the value
sets, subnormals, the largest finite values). There a finite output that misses a finite truth on finite
operands by less than half the dtype's digits (|out - truth| <= sqrt(eps) |truth|) is shown in the
ambiguous column with its input, never passed and never failed: IEEE 754 requires correct rounding of
its basic operations alone (its functions of clause 9 are recommendations), Metal documents ulp bounds
only for its own library calls, and test_mps judges accuracy on its samples only. Upstream's complex
expm1 is 280 ulps off at 16 there. A value that keeps fewer digits is wrong, not inaccurate, and fails
wherever it is found: an infinity for a finite truth (upstream's complex log overflows at 1e20j, sin at
|im| 89: true upstream bugs the bench lists), a careless range reduction, a store of the wrong operand.
Except where the op behaves as a basic operation: where torch CPU gives the correctly rounded truth on
every element of every case of the dtype row (`correctly_rounded`, ROUNDED_ROW of them at least; fewer
count so too; a half or bfloat16 row takes the float32 row's answer, as CPU computes those in float32),
the value is one IEEE 754 defines and is judged as on any case (the caller passes `held_out` False) (1/x
flushed to zero past 1e30 fails; so does hypot as sqrt(a*a + b*b) at 1e20, as CPU's hypot is correctly
rounded, and IEEE 754 defines hypot). The same difference on an OpInfo or random case fails, and on
held-out inputs every part of the standard that a value does not leave open still fails: exactness
(floor_divide of a quotient that underflows), signed zeros, and the special values of NaN/inf operands.

Note [a step to a neighbour]: nextafter(1, 2) in float32 is 1 + 2^-23; the float64 truth on the same
inputs is 1 + 2^-52, which rounds back to 1. Where the wider truth moves an operand by less than the
dtype resolves (it rounds back to that operand) and torch CPU gives the operand's neighbour in the
dtype, the op's value is one of the dtype's own, and CPU's value is the exact one the output must
be (two ulps instead of one fails), on a case where such steps and exact elements are most of it
(EXACT_SHARE) and every finite truth of the case is an operand or float64's neighbour of one: a
rounded op whose CPU value is an ulp off its correctly rounded truth is no step (atanh at -3.07e-8,
where x^3/3 is one float64 ulp and CPU's vectorized float32 path gives x's neighbour).

Note [exact and ill-conditioned]: exactness is asked only where the inputs' own rounding cannot move
the exact value by its whole size. remainder(1.727e-9, -4.454e-17) in float32 has a quotient of
3.9e7: one ulp of the dividend (1.1e-16) is 2.5 divisors, so the exact value -3.5e-17 is a matter of
the dividend's last bit, and upstream's x - y * floor(x / y) lands 9e-17 away, an error of 5e-8 of
the dividend. Where the conditioning allowance reaches the truth's magnitude, the tolerances and
the allowance judge (a quotient's step function is still exact: Note [discontinuities] gives it no
allowance).

Ambiguous elements (Verdict.unclear): where the references themselves disagree and the standards
leave the value open the output is neither passed nor failed, but counted apart with its input:
CPU and the truth dispute a special value and the output is another special value; or a complex
CPU/truth NaN from infinite operands (no NaN part) where the output is a complex infinity (Annex G
counts any value with an infinite part an infinity; CPU's NaN is its formula's inf * 0, as add's
a + alpha * b). A case with an ambiguous element and no wrong one is counted `AMBIGUOUS`.

Each failing element carries the rule it broke (`Verdict.rule`, `Judgement.rule`, `CaseResult.rule`,
and `rule: ...` at the end of the failure message). Nothing else passes: no warning passes, and no
rule is keyed to an op's name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from metalport.checks.judge.tolerances import Tolerance, errors, mismatched, same_special

SLACK = 8.0  # rounding steps a float evaluation may take (intermediates, output), in eps of the result
COND_SLACK = 2.0  # input roundings the conditioning allowance grants, in eps of each input
EXACT_SHARE = 0.75  # share of a case's elements whose truth the dtype holds exactly for the op to be exact there
REL_BOUND = 2.0 ** -5  # relative bound where the truth is a normal number and well-conditioned
# well-conditioned, for the relative bound: a relative condition sum_i |x_i df/dx_i| / |f| of at most
# this (a product's or a quotient's is 2); Note [relative bound]
WELL_CONDITIONED = 4.0
# a dtype row on which torch CPU is correctly rounded everywhere is judged as a basic operation's
# (Note [held-out accuracy]) when it has at least this many finite elements (or fewer: judged so too)
ROUNDED_ROW = 256
_STEP = 2.0 ** -26  # relative step of the numeric derivative on the float64 reference
_FINE = 2.0 ** -40  # the finer step that tells a jump from a steep slope (Note [discontinuities])
_NOISE = 2.0 ** -46  # relative change of a float64 result below which a step moved nothing


def _wide(dtype: torch.dtype) -> torch.dtype:
    return torch.complex128 if dtype.is_complex else torch.float64


def upcast(value: object, scale: float = 1.0) -> object:
    """A floating or complex tensor (or each of a list of them) in float64/complex128, times `scale`
    (a copy); anything else as it is. The truth's inputs (Note [the oracle])."""
    if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()):
        wide = value.to(_wide(value.dtype))
        # no multiply at scale 1: complex * 1.0 turns a -0 imaginary part into +0, the other side of a branch cut
        return wide.clone() if scale == 1.0 else wide * scale
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return [upcast(v, scale) for v in value]
    return value


def _neighbour(value: torch.Tensor, direction: float) -> torch.Tensor:
    """Each element's adjacent value of its own dtype towards `direction` (+-inf), upcast; a complex
    operand as it is (no order to step along)."""
    if value.is_complex():
        return upcast(value)
    return upcast(torch.nextafter(value, torch.full_like(value, direction)))


def truth_calls(call) -> list:
    """The calls whose float64 results give the truth, its conditioning and its reach: [the upcast
    call, then per floating operand (that operand alone moved) the groups: scaled by (1 + _STEP),
    by (1 + _FINE), by (1 - _FINE), stepped to its dtype's next value up, then down]
    (Note [discontinuities], Note [a jump between neighbours])."""
    values = [call._get(s) for s in call.slots]
    floating = [k for k, v in enumerate(values)
                if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex())]

    def moved(k: int, change) -> object:
        return call.with_operands([change(w) if j == k else upcast(w) for j, w in enumerate(values)])

    out = [call.with_operands([upcast(v) for v in values])]
    for scale in (1.0 + _STEP, 1.0 + _FINE, 1.0 - _FINE):
        out += [moved(k, lambda w, s=scale: upcast(w, s)) for k in floating]
    for direction in (math.inf, -math.inf):
        out += [moved(k, lambda w, d=direction: _neighbour(w, d)) for k in floating]
    return out


_GROUPS = 5  # coarse, fine up, fine down, next value up, next value down (truth_calls)


def _groups(truth: torch.Tensor, perturbed: Sequence[torch.Tensor]) -> list[list[torch.Tensor | None]]:
    """The perturbed evaluations of `truth_calls` in its five groups (one entry per operand; None
    where torch gave no tensor of the truth's shape); [] when they do not come in those groups."""
    if not perturbed or len(perturbed) % _GROUPS:
        return []
    n = len(perturbed) // _GROUPS
    usable = [p if isinstance(p, torch.Tensor) and p.shape == truth.shape else None for p in perturbed]
    return [usable[g * n:(g + 1) * n] for g in range(_GROUPS)]


def conditioning(truth: torch.Tensor, perturbed: Sequence[torch.Tensor | None], eps: float | None = None
                 ) -> torch.Tensor:
    """Per element sum_i |x_i df/dx_i| (float64) from the truth and its perturbed evaluations (as
    `truth_calls` makes them). Inf where a perturbation crosses a pole; 0 for an operand at a jump
    (Note [discontinuities]: judged exactly there, not widened)."""
    total = torch.zeros(truth.shape, dtype=torch.float64)
    groups = _groups(truth, perturbed)
    if not groups:
        return total
    mag = truth.abs().to(torch.float64)
    finite = torch.isfinite(mag)
    noise = mag * _NOISE
    for coarse, fine, fine_down in zip(*groups[:3]):
        if coarse is None:
            continue
        big = (coarse.to(truth.dtype) - truth).abs().to(torch.float64)
        d = big / _STEP
        d = torch.where(torch.isnan(d) & finite, torch.full_like(d, float("inf")), d)
        if fine is not None:
            small = (fine.to(truth.dtype) - truth).abs().to(torch.float64)
            # the value moves as much for a step 2^14 times smaller: a jump at x, no derivative
            jump = (small > noise) & (small * 4 >= big) & torch.isfinite(small)
            if fine_down is not None:  # a jump just below x (floor at an exact integer) as well
                below = (fine_down.to(truth.dtype) - truth).abs().to(torch.float64)
                jump |= (below > noise) & (below * 4 >= big) & torch.isfinite(below)
            d_fine = torch.where(torch.isnan(small) & finite, torch.full_like(small, float("inf")), small / _FINE)
            d = torch.where(jump, torch.zeros_like(d), torch.minimum(d, d_fine))
            if fine_down is not None and eps is not None:
                # Note [exact and ill-conditioned]: jumps denser than the coarse step (a sawtooth at a
                # quotient no float holds) make the coarse step say anything, but the finer step either
                # side keeps the slope between them; where one rounding of the operand (`eps`) moves
                # the value along that slope by its whole size, the slope is its conditioning (a jump
                # at x has no slope on one side)
                slope = torch.minimum(small, below) / _FINE
                dense = torch.isfinite(slope) & (slope * eps >= mag) & (mag > 0) & finite
                d = torch.where(dense, slope, d)
        total = total + torch.nan_to_num(d, nan=0.0)
    return total


def reach(truth: torch.Tensor, perturbed: Sequence[torch.Tensor | None]) -> torch.Tensor | None:
    """The op's values at the inputs next to x (one operand stepped to its dtype's adjacent value,
    up or down), stacked, where the op is constant over a finer step either side of x; NaN where it
    is not (Note [a jump between neighbours]). None without the perturbed evaluations."""
    groups = _groups(truth, perturbed)
    if not groups:
        return None
    steady = torch.ones(truth.shape, dtype=torch.bool)
    for evaluated in (*groups[1], *groups[2]):
        steady &= torch.zeros_like(steady) if evaluated is None else same_special(evaluated.to(truth.dtype), truth)
    values = [v for v in (*groups[3], *groups[4]) if v is not None]
    if not values:
        return None
    stacked = torch.stack([v.to(truth.dtype) for v in values])
    return stacked.masked_fill(~steady.unsqueeze(0), float("nan"))


# Rules an element can break (Verdict.rule, the failure record's `rule`): the part of the standard
# of Note [the oracle] that judged it.
EXACT = "exact"
SIGNED_ZERO = "signed-zero"
SPECIAL_IEEE = "special-value (IEEE 754)"
SPECIAL_ANNEX_G = "special-value (C99 Annex G)"
TOLERANCE = "tolerance vs CPU and truth"
RELATIVE = "relative bound"
_RULES = ("", EXACT, SIGNED_ZERO, SPECIAL_IEEE, SPECIAL_ANNEX_G, TOLERANCE, RELATIVE)

# Why an element is ambiguous (Verdict.ambiguous): the references disagree, the standard leaves it open.
SPECIAL_DISAGREE = ("torch CPU and the float64 truth disagree on a special value (inf/NaN); the output is "
                    "another special value")
ANNEX_G_NAN = ("torch CPU and the truth give NaN for infinite complex operands where C99 Annex G counts the "
               "result an infinity; the output is a complex infinity")
ANNEX_G_OPEN = ("a complex special value (an operand or the truth has an infinite or NaN part): C99 Annex G "
                "binds only an implementation that claims it (__STDC_IEC_559_COMPLEX__), which neither Metal nor "
                "torch does, and test_mps feeds complex ops finite samples (Note [complex special values])")
NAN_UNDEFINED = ("a NaN operand: the output is NaN (IEEE 754's default result, 6.2) where torch CPU and the "
                 "float64 truth give different numbers, so neither defines a value there")
NAN_RECOMMENDED = ("a NaN operand: the output is NaN (IEEE 754's default result, 6.2) where torch CPU and the "
                   "truth give an infinity, as IEEE 754's clause 9 recommends for some functions (hypot(inf, NaN)); "
                   "a recommendation, not a requirement")
HELD_OUT_ACCURACY = ("a finite input no PyTorch test feeds (a held-out value set) where the output misses the "
                     "finite truth but keeps half its digits: IEEE 754 requires correct rounding of its basic operations alone, and test_mps "
                     "judges accuracy only on its own samples (Note [held-out accuracy])")
ZERO_CONVENTION = ("a zero where the op jumps (an operand's neighbouring value gives a value of the operands' "
                   "size): the sign of the other operand or of the zero one is a convention there, and torch CPU "
                   "and PyTorch's documented formula differ (Note [a zero at a jump])")
_AMBIGUITIES = ("", SPECIAL_DISAGREE, ANNEX_G_NAN, ANNEX_G_OPEN, NAN_UNDEFINED, NAN_RECOMMENDED, HELD_OUT_ACCURACY,
                ZERO_CONVENTION)
# how a case with an ambiguous element (and no wrong one) is counted: apart, never a pass
AMBIGUOUS = "ambiguous: the references disagree where the standards leave the value open (Note [the oracle])"


@dataclass(frozen=True)
class Verdict:
    """Per-element judgement of one output: `bad` mask and the worst ulps vs truth and vs CPU."""

    bad: torch.Tensor
    ulps_truth: float
    ulps_cpu: float
    worst_at: int
    # the worst relative error from the truth where the relative bound applies, over REL_BOUND
    # (the margin: a correct kernel stays well below 1); 0 where the bound applies nowhere
    rel_used: float = 0.0
    # per element: index into _RULES of the rule a bad element broke (0 where it is not bad)
    codes: torch.Tensor | None = None
    # per element: index into _AMBIGUITIES where the references disagree and the output is neither
    # (never bad, never a pass: counted apart); None when nothing is ambiguous
    unclear: torch.Tensor | None = None

    @property
    def rule(self) -> str | None:
        """The rule the first bad element broke (the one `describe` shows), None when none is bad."""
        idx = _first(self.bad)
        if idx is None:
            return None
        return _RULES[int(self.codes.reshape(-1)[idx])] if self.codes is not None else TOLERANCE

    @property
    def ambiguous(self) -> int:
        """How many elements are ambiguous (Verdict.unclear)."""
        return 0 if self.unclear is None else int((self.unclear > 0).sum())

    @property
    def ambiguity(self) -> str | None:
        """Why the first ambiguous element is, None when none is."""
        if self.unclear is None:
            return None
        idx = _first(self.unclear > 0)
        return None if idx is None else _AMBIGUITIES[int(self.unclear.reshape(-1)[idx])]


def _first(mask: torch.Tensor) -> int | None:
    flat = mask.reshape(-1)
    return int(flat.nonzero()[0]) if bool(flat.any()) else None


def _eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype.to_real()).eps


def _parts(z: torch.Tensor) -> list[torch.Tensor]:
    return [z.real, z.imag] if z.is_complex() else [z]


_FLUSHING = (torch.float32, torch.bfloat16, torch.complex64)  # Metal flushes float32 subnormals


def acceptable(output: torch.Tensor, cpu: torch.Tensor, truth: torch.Tensor | None, tol: Tolerance,
               cond: torch.Tensor | None = None, operands: Sequence[torch.Tensor] = (),
               reached: torch.Tensor | None = None, held_out: bool = False) -> Verdict:
    """The rule of Note [the oracle], element by element. `truth` None: CPU alone judges (integer
    and bool outputs exactly); `cond` None: the conditioning is not measured, so no allowance and
    no relative bound (the launch-spec path's reductions and windows). `operands`: the case's
    inputs, broadcast to the output where they can be (an Annex G case leaves zero signs open);
    `reached`: the op's values at the neighbouring inputs (`reach`, Note [a jump between neighbours]);
    `held_out`: the case's inputs are ones no PyTorch test feeds (Note [held-out accuracy])."""
    dtype = output.dtype
    if not (dtype.is_floating_point or dtype.is_complex) or truth is None or truth.shape != output.shape:
        bad = mismatched(output, cpu, tol)  # test_mps's comparison with CPU (integers and bools exactly)
        codes = bad.to(torch.int8) * _RULES.index(EXACT if not (dtype.is_floating_point or dtype.is_complex)
                                                  else TOLERANCE)
        if not (dtype.is_floating_point or dtype.is_complex):
            return Verdict(bad, 0.0, _max(errors(output, cpu)), _argmax(bad.to(torch.float64)), codes=codes)
        return Verdict(bad, float("nan"), 0.0, _argmax(bad.to(torch.float64)), codes=codes)
    wide = _wide(dtype)
    a, c, t = output.to(wide), cpu.to(wide), truth.to(wide)
    eps = _eps(dtype)
    measured = cond is not None
    cond = torch.zeros(t.shape, dtype=torch.float64) if cond is None else cond
    allowance = COND_SLACK * eps * cond
    same_cpu = same_special(a, c)
    cpu_ok = same_cpu | (torch.isfinite(c) & torch.isfinite(a) & ((a - c).abs() <= c.abs() * tol.rtol + tol.atol))
    rounded = t.to(dtype).to(wide)  # the truth as the dtype can hold it (overflows to inf)
    finite_truth = torch.isfinite(rounded)
    diff = (a - t).abs().to(torch.float64)
    mag = t.abs().to(torch.float64)
    tiny = torch.finfo(dtype.to_real()).smallest_normal
    truth_close = finite_truth & torch.isfinite(a) & (diff <= mag * (tol.rtol + SLACK * eps) + tol.atol + allowance)
    # where the truth is not finite at the dtype (NaN, or overflowing it), a non-finite output is what
    # the dtype can say (for complex: some part inf or NaN, as the parts of an overflowed product differ)
    truth_ok = truth_close | same_special(a, rounded) | (~finite_truth & torch.isinf(cond)) \
        | (_complex_infinity(rounded) & _complex_infinity(a) & torch.isfinite(t))
    normal = finite_truth & (mag >= tiny)
    # the relative bound needs the conditioning: without it (a reduction's, which no per-operand
    # perturbation measures) an element is judged by the two tolerances alone
    well = normal & (cond <= mag * WELL_CONDITIONED) & measured
    # ... never asking more than torch CPU itself achieves there (twice its own error from the truth)
    cpu_err = torch.nan_to_num((c - t).abs().to(torch.float64), nan=0.0, posinf=0.0)
    rel_ok = ~well | (torch.isfinite(a) & (diff <= torch.maximum(mag * REL_BOUND, 2 * cpu_err) + allowance
                                           + tol.atol * (mag >= 1).double()))
    # exact where the op is exact on these inputs: the truth is a value of the dtype and CPU gives it
    # (step functions, integer results, signs, ties); then the output must be that value too. A
    # float32 subnormal may come out flushed to zero (Metal flushes float32 subnormals)
    # (only a truth of higher precision can say so: integer operands give CPU's own dtype as the truth)
    exact = torch.isfinite(t) & (rounded == t) & (c == t) & (truth.dtype in (torch.float64, torch.complex128))
    # Note [a step to a neighbour]: where the wider truth moves an operand by less than the dtype
    # resolves and CPU gives that operand's neighbour in the dtype, the value is the dtype's own
    # (nextafter): CPU's value is exact there
    step = _dtype_step(c, t, rounded, operands, dtype) if not dtype.is_complex \
        else torch.zeros(t.shape, dtype=torch.bool)
    exact = exact | step
    # ... on the case as a whole: most elements with a finite truth are exact (a rounded op's truth,
    # a sum's or a product's, is a value of the dtype only by coincidence, where another correct
    # order of roundings may miss it by an ulp)
    finite_count = int(torch.isfinite(t).sum())
    if finite_count == 0 or int(exact.sum()) < EXACT_SHARE * finite_count:
        exact = torch.zeros_like(exact)
    # ... but not where one rounding of the inputs moves the exact value by more than its own size
    # (Note [exact and ill-conditioned]: remainder at a quotient no float32 holds)
    exact = exact & ~((allowance > 0) & (allowance >= mag))
    on_value = torch.ones(exact.shape, dtype=torch.bool)
    for pa, pr, pt in zip(_parts(a), _parts(torch.where(step, c, rounded)), _parts(t)):
        on_value &= (pa == pr) | ((pa == 0) & (pt.abs() < tiny) & (dtype in _FLUSHING))
    if reached is not None and reached.shape[1:] == t.shape:
        # Note [a jump between neighbours]: the value of the op at an adjacent input, where the jump
        # lies between x and that input (the op is constant over a finer step either side of x)
        near = torch.cat([reached.to(dtype).to(wide), rounded.unsqueeze(0)])
        if dtype.is_complex:
            neighbour = (a.unsqueeze(0) == near).any(0)
        else:  # a step function takes every step between its values at the two neighbours
            lo, hi = near.nan_to_num(nan=math.inf).amin(0), near.nan_to_num(nan=-math.inf).amax(0)
            neighbour = (a >= lo) & (a <= hi) & ~torch.isnan(near).any(0)
        on_value = on_value | (exact & neighbour & torch.isfinite(a))
    ok = torch.where(exact, on_value, (cpu_ok | truth_ok) & (rel_ok | same_cpu)) | same_cpu | on_value
    # signed zero: where CPU and the truth give a zero part of the same sign, so must the output;
    # an Annex G case (a complex operand with an infinite or NaN part) leaves zero signs open
    zero_sign = _wrong_zero_sign(a, c, rounded, t, operands) if not dtype.is_complex \
        else torch.zeros(ok.shape, dtype=torch.bool)
    bad = ~ok | zero_sign
    # Note [a zero at a jump]: which side's sign a zero takes where the op jumps is a convention
    convention = zero_sign & ok & _zero_at_jump(a, operands, reached, eps)
    # ambiguous: the references disagree on a special value, or Annex G would make CPU's NaN an infinity
    disagree = (torch.isfinite(c) != finite_truth) | (torch.isnan(c) != torch.isnan(rounded))
    unclear = torch.zeros(ok.shape, dtype=torch.int8)
    # (only for a non-finite output: a finite one is judged against the finite reference's value)
    unclear = unclear.masked_fill(~ok & disagree & ~torch.isfinite(a), _AMBIGUITIES.index(SPECIAL_DISAGREE))
    if dtype.is_complex:
        g_nan = ~ok & torch.isnan(c) & torch.isnan(rounded) & _complex_infinity(a) \
            & _infinite_operand(operands, output.shape)
        unclear = unclear.masked_fill(g_nan & (unclear == 0), _AMBIGUITIES.index(ANNEX_G_NAN))
    # Note [complex special values]: open where C99 Annex G alone would define them
    open_g = ~ok & _complex_special(operands, output.shape, t if dtype.is_complex else None)
    unclear = unclear.masked_fill(open_g & (unclear == 0), _AMBIGUITIES.index(ANNEX_G_OPEN))
    # a NaN for a NaN operand where CPU's number is not the truth's: no definition to hold it to
    nan_operand = _operand_part(operands, output.shape, torch.isnan)
    undefined = ~ok & torch.isnan(a) & ~torch.isnan(c) & (c != rounded) & nan_operand
    unclear = unclear.masked_fill(undefined & (unclear == 0), _AMBIGUITIES.index(NAN_UNDEFINED))
    # ... or where the number both give is infinite: a recommendation of IEEE 754's clause 9 (hypot(inf, NaN))
    recommended = ~ok & torch.isnan(a) & torch.isinf(c) & (c == rounded) & nan_operand
    unclear = unclear.masked_fill(recommended & (unclear == 0), _AMBIGUITIES.index(NAN_RECOMMENDED))
    unclear = unclear.masked_fill(convention & (unclear == 0), _AMBIGUITIES.index(ZERO_CONVENTION))
    if held_out:
        # Note [held-out accuracy]: a finite input's accuracy, where no standard fixes it
        # ... an accuracy, not a wrong value: the output keeps at least half the dtype's digits
        accuracy = ~ok & ~exact & ~zero_sign & finite_truth & _finite_operands(operands, output.shape) \
            & torch.isfinite(a) & (diff <= mag * math.sqrt(eps))
        unclear = unclear.masked_fill(accuracy & (unclear == 0), _AMBIGUITIES.index(HELD_OUT_ACCURACY))
    bad = bad & (unclear == 0)
    codes = _codes(bad, exact, zero_sign, ok, a, c, rounded, rel_ok, cpu_ok | truth_ok, dtype.is_complex)
    ulps_t = _ulps(a, t, eps)
    ulps_c = _ulps(a, c, eps)
    judged = well & ~same_cpu & ~on_value & torch.isfinite(a)
    rel = (diff / (mag * REL_BOUND)).masked_fill(~judged, 0.0)
    return Verdict(bad, _max(ulps_t), _max(ulps_c), _argmax(ulps_t.masked_fill(~bad, -1.0) if bool(bad.any()) else ulps_t),
                   _max(rel), codes, unclear if bool((unclear > 0).any()) else None)


def _codes(bad: torch.Tensor, exact: torch.Tensor, zero_sign: torch.Tensor, ok: torch.Tensor, a: torch.Tensor,
           c: torch.Tensor, rounded: torch.Tensor, rel_ok: torch.Tensor, close: torch.Tensor,
           complex_: bool) -> torch.Tensor:
    """Per bad element, the index in _RULES of the rule it broke (Verdict.codes)."""
    # a NaN output or a special value of the references (an output overflowing to an infinity where
    # both are finite broke the tolerances: cosh(89-11j) = inf+infj)
    special = torch.isnan(a) | ~torch.isfinite(c) | ~torch.isfinite(rounded)
    code = torch.full(bad.shape, _RULES.index(TOLERANCE), dtype=torch.int8)
    code = code.masked_fill(close & ~rel_ok, _RULES.index(RELATIVE))
    code = code.masked_fill(special, _RULES.index(SPECIAL_ANNEX_G if complex_ else SPECIAL_IEEE))
    code = code.masked_fill(exact & ~special, _RULES.index(EXACT))
    code = code.masked_fill(zero_sign & ok, _RULES.index(SIGNED_ZERO))
    return code.masked_fill(~bad, 0)


def _broadcast_operands(operands: Sequence[torch.Tensor], shape: torch.Size) -> list[torch.Tensor]:
    out = []
    for op in operands:
        if isinstance(op, torch.Tensor) and (op.is_floating_point() or op.is_complex()) and _fits(op, shape):
            out.append(op.expand(shape))
    return out


def _wrong_zero_sign(a: torch.Tensor, c: torch.Tensor, rounded: torch.Tensor, t: torch.Tensor,
                     operands: Sequence[torch.Tensor]) -> torch.Tensor:
    """Where a real output's zero has the other sign than the zero CPU and the truth agree on, and
    IEEE 754 fixes that sign (Note [signed zeros])."""
    judged = (a == 0) & (c == 0) & (t == 0) & (torch.signbit(c) == torch.signbit(rounded)) \
        & (torch.signbit(a) != torch.signbit(c))
    tensors = [op.expand(a.shape) for op in operands if isinstance(op, torch.Tensor) and _fits(op, a.shape)]
    if len(tensors) < 2:
        return judged
    nonzero = sum((op != 0).to(torch.int64) for op in tensors)
    selected = torch.zeros(a.shape, dtype=torch.bool)
    for op in tensors:
        if op.is_floating_point():
            selected |= (op == 0) & (torch.signbit(op) == torch.signbit(a))
    return judged & ~(nonzero > 1) & ~selected  # `judged` holds only exact zeros of the truth


def _dtype_step(c: torch.Tensor, t: torch.Tensor, rounded: torch.Tensor, operands: Sequence[torch.Tensor],
                dtype: torch.dtype) -> torch.Tensor:
    """Where the truth rounds back to a (real, finite) operand it differs from, and CPU gives that
    operand's neighbour in `dtype` (Note [a step to a neighbour])."""
    out = torch.zeros(t.shape, dtype=torch.bool)
    # on the case as a whole, every finite truth is an operand or the wider dtype's neighbour of one:
    # the op moves operands by steps. atanh(x) at x near 3e-8 moves x by one float64 ulp too (x^3/3),
    # where torch CPU's vectorized float32 path is an ulp off; its other elements show it is no step
    near_operand = ~torch.isfinite(t)
    for op in _broadcast_operands(operands, t.shape):
        if op.is_complex() or op.dtype != dtype:
            continue
        wide = op.to(t.dtype)
        up, down = torch.nextafter(op, torch.full_like(op, math.inf)), torch.nextafter(op, torch.full_like(op, -math.inf))
        neighbour = (c == up.to(c.dtype)) | (c == down.to(c.dtype))
        # ... and the truth is itself the wider dtype's neighbour of the operand (atanh(1e-5) moves it by x^3/3)
        wide_step = (t == torch.nextafter(wide, torch.full_like(wide, math.inf))) \
            | (t == torch.nextafter(wide, torch.full_like(wide, -math.inf)))
        near_operand |= (t == wide) | wide_step
        out |= torch.isfinite(wide) & (rounded == wide) & wide_step & neighbour
    return out if bool(near_operand.all()) else torch.zeros_like(out)


def _zero_at_jump(a: torch.Tensor, operands: Sequence[torch.Tensor], reached: torch.Tensor | None,
                  eps: float) -> torch.Tensor:
    """Where the output is a zero, one operand is a zero and another is not, and the op at an operand's
    neighbouring value is of the operands' size (it jumps next to x: remainder(-0, 1) next to
    remainder(-1e-45, 1) = 1) (Note [a zero at a jump])."""
    out = torch.zeros(a.shape, dtype=torch.bool)
    # a zero's sign is judged only for real outputs; a complex operand (polar's output) has no sign
    tensors = [op for op in _broadcast_operands(operands, a.shape) if not op.is_complex()]
    if a.is_complex() or reached is None or reached.shape[1:] != a.shape or len(tensors) < 2:
        return out
    zero_op = torch.zeros(a.shape, dtype=torch.bool)
    nonzero_op = torch.zeros(a.shape, dtype=torch.bool)
    size = torch.zeros(a.shape, dtype=torch.float64)
    for op in tensors:
        zero_op |= op == 0
        nonzero_op |= op != 0
        size = torch.maximum(size, op.abs().to(torch.float64).nan_to_num(posinf=0.0))
    far = (reached.abs().to(torch.float64) > size * eps).any(0)  # NaN compares False
    return (a == 0) & zero_op & nonzero_op & far


def _operand_part(operands: Sequence[torch.Tensor], shape: torch.Size, test, *, complex_only: bool = False
                  ) -> torch.Tensor:
    """Where some floating operand (only complex ones with `complex_only`), broadcast to `shape`, has a
    part for which `test` (torch.isnan, torch.isinf, ...) holds."""
    out = torch.zeros(shape, dtype=torch.bool)
    for op in _broadcast_operands(operands, shape):
        if op.is_complex() or not complex_only:
            for part in _parts(op):
                out |= test(part)
    return out


def correctly_rounded(cpus: Sequence[torch.Tensor], truths: Sequence[torch.Tensor]) -> bool:
    """Whether torch CPU gives the correctly rounded truth on every element with a finite truth of a
    dtype row's cases (`cpus`, `truths` pairwise), when there are at least ROUNDED_ROW of them; True
    (judged as a basic operation, strictly) when fewer say nothing (Note [held-out accuracy])."""
    count, rounded_everywhere = 0, True
    for cpu, truth in zip(cpus, truths):
        if cpu.shape != truth.shape or not (cpu.is_floating_point() or cpu.is_complex()):
            continue
        finite = torch.isfinite(truth) if not truth.is_complex() \
            else torch.isfinite(truth.real) & torch.isfinite(truth.imag)
        count += int(finite.sum())
        rounded_everywhere = rounded_everywhere and bool(((cpu == truth.to(cpu.dtype)) | ~finite).all())
    return rounded_everywhere or count < ROUNDED_ROW


def _finite_operands(operands: Sequence[torch.Tensor], shape: torch.Size) -> torch.Tensor:
    """Where every floating operand part is finite (integer operands always are; no operand given:
    nowhere known, so all False)."""
    if not operands:
        return torch.zeros(shape, dtype=torch.bool)
    return ~_operand_part(operands, shape, lambda part: ~torch.isfinite(part))


def _infinite_operand(operands: Sequence[torch.Tensor], shape: torch.Size) -> torch.Tensor:
    """Where some floating operand has an infinite part and none has a NaN part."""
    return _operand_part(operands, shape, torch.isinf) & ~_operand_part(operands, shape, torch.isnan)


def _complex_special(operands: Sequence[torch.Tensor], shape: torch.Size,
                     truth: torch.Tensor | None) -> torch.Tensor:
    """Where a complex operand, or the complex truth, has an infinite or NaN part."""
    out = _operand_part(operands, shape, lambda part: ~torch.isfinite(part), complex_only=True)
    if truth is not None and truth.is_complex():
        out |= ~torch.isfinite(truth.real) | ~torch.isfinite(truth.imag)
    return out


def _fits(op: torch.Tensor, shape: torch.Size) -> bool:
    try:
        return torch.broadcast_shapes(op.shape, shape) == shape
    except RuntimeError:
        return False


def _complex_infinity(z: torch.Tensor) -> torch.Tensor:
    """Where a complex value is an infinity in C99's sense (Annex G: some part infinite, the other
    part anything, NaN included); all False for real tensors, whose overflow is judged by sign."""
    if not z.is_complex():
        return torch.zeros(z.shape, dtype=torch.bool)
    return torch.isinf(z.real) | torch.isinf(z.imag)


def _ulps(a: torch.Tensor, e: torch.Tensor, eps: float) -> torch.Tensor:
    """|a - e| in units of eps * max(|e|, 1e-30), 0 where both are the same special value, inf where one is."""
    same = same_special(a, e)
    d = (a - e).abs().to(torch.float64) / (e.abs().to(torch.float64).clamp_min(1e-30) * eps)
    d = torch.where(torch.isnan(d), torch.full_like(d, float("inf")), d)
    return d.masked_fill(same, 0.0)


def _max(t: torch.Tensor) -> float:
    return float(t.max()) if t.numel() else 0.0


def _argmax(t: torch.Tensor) -> int:
    return int(t.reshape(-1).argmax()) if t.numel() else 0


def describe(output: torch.Tensor, cpu: torch.Tensor, truth: torch.Tensor | None, verdict: Verdict,
             operands: Sequence[torch.Tensor] = ()) -> str:
    """One failing element: input, kernel output, CPU's and the truth's, the worst ulps and the rule broken."""
    bad = verdict.bad.reshape(-1)
    idx = int(bad.nonzero()[0]) if bool(bad.any()) else verdict.worst_at
    return (f"{int(bad.sum())} of {bad.numel()} elements wrong; {_element(output, cpu, truth, idx, operands)}; "
            f"worst {verdict.ulps_truth:.3g} ulp vs truth, {verdict.ulps_cpu:.3g} ulp vs CPU; "
            f"rule: {verdict.rule or TOLERANCE}")


def describe_ambiguous(output: torch.Tensor, cpu: torch.Tensor, truth: torch.Tensor | None, verdict: Verdict,
                       operands: Sequence[torch.Tensor] = ()) -> str | None:
    """The first ambiguous element (Verdict.unclear) with its input and why, None when there is none."""
    if verdict.unclear is None:
        return None
    flat = (verdict.unclear > 0).reshape(-1)
    idx = int(flat.nonzero()[0])
    return (f"{int(flat.sum())} of {flat.numel()} elements ambiguous; "
            f"{_element(output, cpu, truth, idx, operands)}; {verdict.ambiguity}")


def _element(output: torch.Tensor, cpu: torch.Tensor, truth: torch.Tensor | None, idx: int,
             operands: Sequence[torch.Tensor]) -> str:
    inputs = []
    for op in operands:
        flat = op.reshape(-1) if op.numel() == output.numel() else (op.expand(output.shape).reshape(-1)
                                                                   if _fits(op, output.shape) else None)
        inputs.append(repr(flat[idx].item()) if flat is not None else "?")
    t = "n/a" if truth is None else repr(truth.reshape(-1)[idx].item())
    where = f"at input ({', '.join(inputs)})" if operands else f"at output element {idx}"
    return f"{where} kernel {output.reshape(-1)[idx].item()!r}, CPU {cpu.reshape(-1)[idx].item()!r}, truth {t}"


__all__ = ["AMBIGUOUS", "ANNEX_G_NAN", "ANNEX_G_OPEN", "NAN_UNDEFINED", "COND_SLACK", "WELL_CONDITIONED", "EXACT", "RELATIVE", "REL_BOUND", "SIGNED_ZERO", "SLACK", "SPECIAL_ANNEX_G",
           "SPECIAL_DISAGREE", "SPECIAL_IEEE", "TOLERANCE", "Verdict", "acceptable", "conditioning", "describe",
           "describe_ambiguous", "reach", "truth_calls", "upcast"]
