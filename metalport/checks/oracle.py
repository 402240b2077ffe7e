"""The one acceptance rule of conformance: an output is right because it is right.

Note [the oracle]
Every floating or complex output element is judged against two references: torch CPU at the
output dtype (`cpu`) and the truth, the same op evaluated by torch CPU in float64/complex128 on
the upcast inputs (`truth_calls`). An element is acceptable iff

  * it is within test_mps's tolerance of CPU (NaN matches NaN, an infinity only itself), or
  * it is within the dtype's tolerance of the truth, widened per element by the conditioning
    allowance `COND_SLACK * eps(dtype) * sum_i |x_i * df/dx_i|` (the change in the float64 result when
    each input moves by its own relative rounding; measured by a numeric derivative of the float64
    reference, never looked up by op name), so a kernel gets more room only where the function
    amplifies the rounding of its float inputs;

and, where the truth is a normal number of the dtype and the problem well-conditioned
(condition number <= 1/REL_BOUND), its relative error from the truth is at most REL_BOUND plus
the allowance: an absolute tolerance hides log(1+x) for log1p near 0, this does not. Where the
truth rounds to a finite value of the dtype, inf or NaN matches it only if CPU gives the same; where
the truth is NaN or +-inf the output must be too (or match CPU). A complex truth finite in
complex128 that overflows the dtype (some part rounds to inf) is a complex infinity, and so must
the output be: some part infinite, as C99 Annex G counts infinities (the other part of an
overflowed product is whatever inf - inf left, in CPU's result too). Nothing else passes: there are
no warnings that pass, and no rule keyed to an op's name.

The truth is float64 CPU for every op today. Not done yet: mpmath for the ops whose float64 CPU
kernels are known to lose accuracy (Hurwitz zeta / polygamma for large orders and near the poles,
lgamma/digamma within a few ulps of the negative poles, where the reflection goes through sin(pi*x));
those ops are the ones whose upstream functors the float64 truth now fails most (see the README).
Integer and bool outputs are exact: CPU is the truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from metalport.checks.tolerances import Tolerance, errors, mismatched, same_special

SLACK = 8.0  # rounding steps a float evaluation may take (intermediates, output), in eps of the result
COND_SLACK = 2.0  # input roundings the conditioning allowance grants, in eps of each input
REL_BOUND = 2.0 ** -5  # relative bound where the truth is a normal number and well-conditioned
_STEP = 2.0 ** -26  # relative step of the numeric derivative on the float64 reference


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
    one per floating operand with that operand scaled by (1 + _STEP)]."""
    values = [call._get(s) for s in call.slots]
    out = [call.with_operands([upcast(v) for v in values])]
    for k, v in enumerate(values):
        if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()):
            out.append(call.with_operands([upcast(w, 1.0 + _STEP if j == k else 1.0) for j, w in enumerate(values)]))
    return out


def conditioning(truth: torch.Tensor, perturbed: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per element sum_i |x_i df/dx_i| (float64) from the truth and its perturbed evaluations; inf
    where a perturbation crosses a pole or a jump (no derivative there: any finite value near is fine)."""
    total = torch.zeros(truth.shape, dtype=torch.float64)
    for p in perturbed:
        if p.shape != truth.shape:
            continue
        d = (p.to(truth.dtype) - truth).abs().to(torch.float64) / _STEP
        d = torch.where(torch.isnan(d) & torch.isfinite(truth.abs()), torch.full_like(d, float("inf")), d)
        total = total + torch.nan_to_num(d, nan=0.0)
    return total


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


def _eps(dtype: torch.dtype) -> float:
    real = dtype.to_real() if dtype.is_complex else dtype
    return torch.finfo(real).eps


def acceptable(output: torch.Tensor, cpu: torch.Tensor, truth: torch.Tensor | None, tol: Tolerance,
               cond: torch.Tensor | None = None) -> Verdict:
    """The rule of Note [the oracle], element by element. `truth` None: CPU alone judges (integer
    and bool outputs exactly); `cond` None: the conditioning is not measured, so no allowance and
    no relative bound (the launch-spec path's reductions and windows)."""
    dtype = output.dtype
    if not (dtype.is_floating_point or dtype.is_complex) or truth is None or truth.shape != output.shape:
        bad = mismatched(output, cpu, tol)  # test_mps's comparison with CPU (integers and bools exactly)
        if not (dtype.is_floating_point or dtype.is_complex):
            return Verdict(bad, 0.0, _max(errors(output, cpu)), _argmax(bad.to(torch.float64)))
        return Verdict(bad, float("nan"), 0.0, _argmax(bad.to(torch.float64)))
    wide = _wide(dtype)
    a, c, t = output.to(wide), cpu.to(wide), truth.to(wide)
    eps = _eps(dtype)
    measured = cond is not None
    cond = torch.zeros(t.shape, dtype=torch.float64) if cond is None else cond
    allowance = COND_SLACK * eps * cond
    cpu_ok = same_special(a, c) | (torch.isfinite(c) & torch.isfinite(a)
                                    & ((a - c).abs() <= c.abs() * tol.rtol + tol.atol))
    rounded = t.to(dtype).to(wide)  # the truth as the dtype can hold it (overflows to inf)
    finite_truth = torch.isfinite(rounded)
    diff = (a - t).abs().to(torch.float64)
    mag = t.abs().to(torch.float64)
    truth_close = finite_truth & torch.isfinite(a) & (diff <= mag * (tol.rtol + SLACK * eps) + tol.atol + allowance)
    # where the truth is not finite at the dtype (NaN, or overflowing it), a non-finite output is what
    # the dtype can say (for complex: some part inf or NaN, as the parts of an overflowed product differ)
    truth_ok = truth_close | same_special(a, rounded) | (~finite_truth & torch.isinf(cond)) \
        | (_complex_infinity(rounded) & _complex_infinity(a) & torch.isfinite(t))
    real = dtype.to_real() if dtype.is_complex else dtype
    normal = finite_truth & (mag >= torch.finfo(real).smallest_normal)
    # the relative bound needs the conditioning: without it (a reduction's, which no per-operand
    # perturbation measures) an element is judged by the two tolerances alone
    well = normal & (cond <= mag / REL_BOUND) & measured
    rel_ok = ~well | (torch.isfinite(a) & (diff <= mag * REL_BOUND + allowance + tol.atol * (mag >= 1).double()))
    # the relative bound applies where the kernel is not exactly CPU's value: CPU's own result
    # (its overflow to NaN in lerp at the largest floats, say) is always what test_mps accepts
    bad = ~((cpu_ok | truth_ok) & (rel_ok | same_special(a, c)))
    ulps_t = _ulps(a, t, eps)
    ulps_c = _ulps(a, c, eps)
    judged = well & ~same_special(a, c) & torch.isfinite(a)
    rel = (diff / (mag * REL_BOUND)).masked_fill(~judged, 0.0)
    return Verdict(bad, _max(ulps_t), _max(ulps_c), _argmax(ulps_t.masked_fill(~bad, -1.0) if bool(bad.any()) else ulps_t),
                   _max(rel))


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
    """One failing element: input, kernel output, CPU's and the truth's, and the worst ulps."""
    bad = verdict.bad.reshape(-1)
    idx = int(bad.nonzero()[0]) if bool(bad.any()) else verdict.worst_at
    inputs = []
    for op in operands:
        flat = op.reshape(-1) if op.numel() == output.numel() else (op.expand(output.shape).reshape(-1)
                                                                   if _broadcasts(op, output) else None)
        inputs.append(repr(flat[idx].item()) if flat is not None else "?")
    t = "n/a" if truth is None else repr(truth.reshape(-1)[idx].item())
    where = f"at input ({', '.join(inputs)})" if operands else f"at output element {idx}"
    return (f"{int(bad.sum())} of {bad.numel()} elements wrong; {where} kernel "
            f"{output.reshape(-1)[idx].item()!r}, CPU {cpu.reshape(-1)[idx].item()!r}, truth {t}; worst "
            f"{verdict.ulps_truth:.3g} ulp vs truth, {verdict.ulps_cpu:.3g} ulp vs CPU")


def _broadcasts(op: torch.Tensor, out: torch.Tensor) -> bool:
    try:
        torch.broadcast_shapes(op.shape, out.shape)
        return torch.broadcast_shapes(op.shape, out.shape) == out.shape
    except RuntimeError:
        return False


__all__ = ["COND_SLACK", "REL_BOUND", "SLACK", "Verdict", "acceptable", "conditioning", "describe", "truth_calls",
           "upcast"]
