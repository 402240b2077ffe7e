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
    normal number of the dtype and the problem well-conditioned (condition <= 1/REL_BOUND), within
    REL_BOUND relatively plus the allowance (rule `relative bound`: log(1+x) for log1p fails);
  * special values (rules `special-value (IEEE 754)` / `special-value (C99 Annex G)`): where the
    truth rounds to a finite value inf/NaN is wrong unless CPU gives it; where the truth is NaN or
    +-inf the output must be too (or CPU's); a complex truth that overflows the dtype is a complex
    infinity (some part infinite, as Annex G counts them), and so must the output be;
  * signed zero (rule `signed-zero`, Note [signed zeros]).

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

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from metalport.checks.tolerances import Tolerance, errors, mismatched, same_special

SLACK = 8.0  # rounding steps a float evaluation may take (intermediates, output), in eps of the result
COND_SLACK = 2.0  # input roundings the conditioning allowance grants, in eps of each input
EXACT_SHARE = 0.75  # share of a case's elements whose truth the dtype holds exactly for the op to be exact there
REL_BOUND = 2.0 ** -5  # relative bound where the truth is a normal number and well-conditioned
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


def truth_calls(call) -> list:
    """The calls whose float64 results give the truth and its conditioning: [the upcast call, then
    one per floating operand with that operand scaled by (1 + _STEP), then the same at (1 + _FINE)]
    (Note [discontinuities])."""
    values = [call._get(s) for s in call.slots]
    out = [call.with_operands([upcast(v) for v in values])]
    for step in (_STEP, _FINE):
        for k, v in enumerate(values):
            if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()):
                out.append(call.with_operands([upcast(w, 1.0 + step if j == k else 1.0)
                                               for j, w in enumerate(values)]))
    return out


def conditioning(truth: torch.Tensor, perturbed: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per element sum_i |x_i df/dx_i| (float64) from the truth and its perturbed evaluations
    (coarse steps, then fine ones, as `truth_calls` makes them). Inf where a perturbation crosses a
    pole; 0 for an operand at a jump (Note [discontinuities]: judged exactly there, not widened)."""
    total = torch.zeros(truth.shape, dtype=torch.float64)
    usable = [p for p in perturbed if p.shape == truth.shape]
    half = len(usable) // 2
    pairs = list(zip(usable[:half], usable[half:])) if usable and len(usable) % 2 == 0 else \
        [(p, None) for p in usable]
    mag = truth.abs().to(torch.float64)
    finite = torch.isfinite(mag)
    noise = mag * _NOISE
    for coarse, fine in pairs:
        big = (coarse.to(truth.dtype) - truth).abs().to(torch.float64)
        d = big / _STEP
        d = torch.where(torch.isnan(d) & finite, torch.full_like(d, float("inf")), d)
        if fine is not None:
            small = (fine.to(truth.dtype) - truth).abs().to(torch.float64)
            # the value moves as much for a step 2^14 times smaller: a jump at x, no derivative
            jump = (small > noise) & (small * 4 >= big) & torch.isfinite(small)
            d_fine = torch.where(torch.isnan(small) & finite, torch.full_like(small, float("inf")), small / _FINE)
            d = torch.where(jump, torch.zeros_like(d), torch.minimum(d, d_fine))
        total = total + torch.nan_to_num(d, nan=0.0)
    return total


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
_AMBIGUITIES = ("", SPECIAL_DISAGREE, ANNEX_G_NAN)
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
    real = dtype.to_real() if dtype.is_complex else dtype
    return torch.finfo(real).eps


def _parts(z: torch.Tensor) -> list[torch.Tensor]:
    return [z.real, z.imag] if z.is_complex() else [z]


def _signbit(z: torch.Tensor) -> list[torch.Tensor]:
    return [torch.signbit(p) for p in _parts(z)]


_FLUSHING = (torch.float32, torch.bfloat16, torch.complex64)  # Metal flushes float32 subnormals


def acceptable(output: torch.Tensor, cpu: torch.Tensor, truth: torch.Tensor | None, tol: Tolerance,
               cond: torch.Tensor | None = None, operands: Sequence[torch.Tensor] = ()) -> Verdict:
    """The rule of Note [the oracle], element by element. `truth` None: CPU alone judges (integer
    and bool outputs exactly); `cond` None: the conditioning is not measured, so no allowance and
    no relative bound (the launch-spec path's reductions and windows). `operands`: the case's
    inputs, broadcast to the output where they can be (an Annex G case leaves zero signs open)."""
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
    real = dtype.to_real() if dtype.is_complex else dtype
    tiny = torch.finfo(real).smallest_normal
    truth_close = finite_truth & torch.isfinite(a) & (diff <= mag * (tol.rtol + SLACK * eps) + tol.atol + allowance)
    # where the truth is not finite at the dtype (NaN, or overflowing it), a non-finite output is what
    # the dtype can say (for complex: some part inf or NaN, as the parts of an overflowed product differ)
    truth_ok = truth_close | same_special(a, rounded) | (~finite_truth & torch.isinf(cond)) \
        | (_complex_infinity(rounded) & _complex_infinity(a) & torch.isfinite(t))
    normal = finite_truth & (mag >= tiny)
    # the relative bound needs the conditioning: without it (a reduction's, which no per-operand
    # perturbation measures) an element is judged by the two tolerances alone
    well = normal & (cond <= mag / REL_BOUND) & measured
    rel_ok = ~well | (torch.isfinite(a) & (diff <= mag * REL_BOUND + allowance + tol.atol * (mag >= 1).double()))
    # exact where the op is exact on these inputs: the truth is a value of the dtype and CPU gives it
    # (step functions, integer results, signs, ties); then the output must be that value too. A
    # float32 subnormal may come out flushed to zero (Metal flushes float32 subnormals)
    # (only a truth of higher precision can say so: integer operands give CPU's own dtype as the truth)
    exact = torch.isfinite(t) & (rounded == t) & (c == t) & (truth.dtype in (torch.float64, torch.complex128))
    # ... on the case as a whole: most elements with a finite truth are exact (a rounded op's truth,
    # a sum's or a product's, is a value of the dtype only by coincidence, where another correct
    # order of roundings may miss it by an ulp)
    finite_count = int(torch.isfinite(t).sum())
    if finite_count == 0 or int(exact.sum()) < EXACT_SHARE * finite_count:
        exact = torch.zeros_like(exact)
    on_value = torch.ones(exact.shape, dtype=torch.bool)
    for pa, pr, pt in zip(_parts(a), _parts(rounded), _parts(t)):
        on_value &= (pa == pr) | ((pa == 0) & (pt.abs() < tiny) & (dtype in _FLUSHING))
    ok = torch.where(exact, on_value, (cpu_ok | truth_ok) & (rel_ok | same_cpu)) | same_cpu | on_value
    # signed zero: where CPU and the truth give a zero part of the same sign, so must the output;
    # an Annex G case (a complex operand with an infinite or NaN part) leaves zero signs open
    zero_sign = _wrong_zero_sign(a, c, rounded, t, operands) if not dtype.is_complex \
        else torch.zeros(ok.shape, dtype=torch.bool)
    bad = ~ok | zero_sign
    # ambiguous: the references disagree on a special value, or Annex G would make CPU's NaN an infinity
    disagree = (torch.isfinite(c) != finite_truth) | (torch.isnan(c) != torch.isnan(rounded))
    unclear = torch.zeros(ok.shape, dtype=torch.int8)
    # (only for a non-finite output: a finite one is judged against the finite reference's value)
    unclear = unclear.masked_fill(~ok & disagree & ~torch.isfinite(a), _AMBIGUITIES.index(SPECIAL_DISAGREE))
    if dtype.is_complex:
        g_nan = ~ok & torch.isnan(c) & torch.isnan(rounded) & _complex_infinity(a) \
            & _infinite_operand(operands, output.shape)
        unclear = unclear.masked_fill(g_nan & (unclear == 0), _AMBIGUITIES.index(ANNEX_G_NAN))
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
    special = ~torch.isfinite(a) | ~torch.isfinite(c) | ~torch.isfinite(rounded)
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


def _infinite_operand(operands: Sequence[torch.Tensor], shape: torch.Size) -> torch.Tensor:
    """Where some floating operand has an infinite part and none has a NaN part."""
    inf = torch.zeros(shape, dtype=torch.bool)
    nan = torch.zeros(shape, dtype=torch.bool)
    for op in _broadcast_operands(operands, shape):
        for part in _parts(op):
            inf |= torch.isinf(part)
            nan |= torch.isnan(part)
    return inf & ~nan


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
                                                                   if _broadcasts(op, output) else None)
        inputs.append(repr(flat[idx].item()) if flat is not None else "?")
    t = "n/a" if truth is None else repr(truth.reshape(-1)[idx].item())
    where = f"at input ({', '.join(inputs)})" if operands else f"at output element {idx}"
    return f"{where} kernel {output.reshape(-1)[idx].item()!r}, CPU {cpu.reshape(-1)[idx].item()!r}, truth {t}"


def _broadcasts(op: torch.Tensor, out: torch.Tensor) -> bool:
    try:
        torch.broadcast_shapes(op.shape, out.shape)
        return torch.broadcast_shapes(op.shape, out.shape) == out.shape
    except RuntimeError:
        return False


__all__ = ["AMBIGUOUS", "ANNEX_G_NAN", "COND_SLACK", "EXACT", "RELATIVE", "REL_BOUND", "SIGNED_ZERO", "SLACK", "SPECIAL_ANNEX_G",
           "SPECIAL_DISAGREE", "SPECIAL_IEEE", "TOLERANCE", "Verdict", "acceptable", "conditioning", "describe",
           "describe_ambiguous", "truth_calls", "upcast"]
