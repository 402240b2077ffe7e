"""Divergences of upstream Metal kernels from CPU that are known, named and checked exactly.

Each rule gives a second reference: what the upstream kernel computes by design where it differs
from torch on CPU. Beyond the OpInfo samples (which always gate), a case whose output misses the
CPU reference but matches a rule's reference is a warning naming the rule, never a silent pass;
a kernel that matches neither fails. So a bug in the same op (a wrong sign, trunc for floor, a
missing special case) still fails: it does not compute the rule's formula either.

Note [known upstream divergences]
- `more-accurate` (every op, OpInfo samples included): the kernel misses CPU's result but matches
  the op computed in float64 and rounded. CPU computes float32 in float32 with its own algorithm
  (trigamma near a pole is off in the fifth digit, and finite at the pole itself); a kernel closer
  to the exact value is not wrong, and no bug computes the exact value.
- `quotient-rounding` (fmod, remainder): c10::metal::fmod is Metal's fmod, which the Metal Shading
  Language specification defines as x - y * trunc(x / y), and c10::metal::remainder computes
  x - y * floor(x / y), both with x / y rounded to float. Where that quotient is large or lands
  next to an integer the result is off by multiples of y (C's fmod is exact). The reference is
  that formula evaluated from the float32 quotient (one rounding for the multiply-subtract).
- `scalar-at-opmath`: the scalar cast kernels (`*_dense_scalar_cast_*`, c10/metal indexing.h)
  read a wider 0-dim operand (a float32 scalar with a half tensor) straight into the compute type;
  CPU rounds it to the result dtype first. The reference computes from the unrounded operands.
- `polygamma-zeta` (OpInfo samples included): c10::metal::polygamma computes order n >= 1 as
  +-n! * zeta(n + 1, x); CPU does so for n >= 2 but takes trigamma's own path for n = 1, finite at
  the poles (negative integers, where zeta is inf) and 0 at +inf (zeta: NaN). The reference is
  that formula evaluated by CPU's zeta in float64.
- `zeta-overflow` (special_zeta): for a large order the Euler-Maclaurin terms of c10::metal::zeta
  overflow float while the power underflows, so inf * 0 = NaN where the value underflows to 0 or
  overflows to inf. The reference has NaN where CPU's result is 0 or infinite and the kernel wrote NaN.
- `ill-conditioned` (unary ops): the kernel's output lies in the range the op takes (in float64)
  over inputs within 2 float32 ulps of the element's input. Near a pole one ulp of input moves
  the value far beyond test_mps's tolerance (digamma at -7.0039: 0.03 per ulp), so an upstream
  float32 evaluation there differs from CPU's by chance of the seed; a wrong formula does not
  land in that range.
- `lgamma-inf`: c10::metal::log_gamma's asymptotic series evaluates (x - 0.5) * log(x) - x, which
  is inf - inf = NaN at x = +inf (CPU: +inf). The reference has NaN exactly there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from metalport.checks.runner import Prepared
from metalport.checks.samples import Call

QUOTIENT_ROUNDING = ("quotient-rounding: Metal's fmod is x - y*trunc(x/y) with x/y rounded to float (Metal "
                     "Shading Language specification; c10::metal::remainder uses floor(x/y) the same way), off "
                     "by multiples of y where the quotient is large or next to an integer")
SCALAR_AT_OPMATH = ("scalar-at-opmath: the scalar cast kernel reads the wider 0-dim operand at the compute "
                    "precision (c10/metal binary_dense_scalar_cast); CPU rounds it to the result dtype first")
LGAMMA_INF = ("lgamma-inf: c10::metal::log_gamma's asymptotic series computes (x - 0.5)*log(x) - x, "
              "NaN (inf - inf) at x = +inf")

MORE_ACCURATE = ("more-accurate: the kernel matches the op computed in float64 where CPU's own float computation "
                 "does not (polygamma near its poles, say); a bug matches neither")

POLYGAMMA_ZETA = ("polygamma-zeta: c10::metal::polygamma computes every order n >= 1 as +-n!*zeta(n+1, x), the "
                  "formula CPU uses for n >= 2 (CPU's n = 1 path is finite at the poles and 0 at +inf, zeta gives "
                  "inf and NaN)")
ZETA_OVERFLOW = ("zeta-overflow: where zeta underflows to 0 or overflows to inf, c10::metal::zeta multiplies a "
                  "term that underflowed by one that overflowed float (inf * 0), giving NaN")

ILL_CONDITIONED = ("ill-conditioned: the kernel's result is the op's value at an input within 2 float32 ulps "
                   "(near a pole a float32 evaluation cannot do better; digamma's tan(pi*x) with pi rounded to float)")
_ULPS = 2.0

Rule = Callable[[Sequence[torch.Tensor], torch.Tensor], torch.Tensor | None]


def _floating(t: torch.Tensor) -> bool:
    return t.is_floating_point() and t.dtype != torch.float64


def _quotient_formula(rounding: Callable[[torch.Tensor], torch.Tensor]) -> Rule:
    def rule(operands: Sequence[torch.Tensor], expected: torch.Tensor) -> torch.Tensor | None:
        if len(operands) != 2 or not _floating(expected):
            return None
        x, y = (torch.broadcast_to(t, expected.shape).to(torch.float32) for t in operands)
        quotient = rounding((x / y).to(torch.float64))  # x / y rounded to float, as the kernel divides
        return (x.double() - y.double() * quotient).to(expected.dtype)
    return rule


def _lgamma_inf(operands: Sequence[torch.Tensor], expected: torch.Tensor) -> torch.Tensor | None:
    if len(operands) != 1 or not _floating(expected):
        return None
    x = torch.broadcast_to(operands[0], expected.shape)
    return expected.masked_fill(x == float("inf"), float("nan"))


def conditioned_reference(operands: Sequence[torch.Tensor], expected: torch.Tensor, output: torch.Tensor,
                          call: Callable[[Sequence[torch.Tensor]], torch.Tensor]) -> torch.Tensor | None:
    """`output` clamped to the range the op takes (in float64) over inputs within _ULPS float32
    ulps of each element's input: equal to `output` where the kernel is that accurate (unary ops)."""
    if len(operands) != 1 or not _floating(expected) or not _floating(operands[0]) \
            or output.shape != expected.shape:
        return None
    x = torch.broadcast_to(operands[0], expected.shape).to(torch.float64)
    step = x.abs() * (_ULPS * 2.0 ** -23)
    try:
        values = [call([v]) for v in (x - step, x, x + step)]
    except (RuntimeError, ValueError, TypeError):
        return None
    if not all(isinstance(v, torch.Tensor) and v.shape == expected.shape and not v.is_complex() for v in values):
        return None
    stacked = torch.stack([v.to(torch.float64) for v in values])
    low, high = stacked.amin(0), stacked.amax(0)
    clamped = torch.clamp(output.to(torch.float64), min=low, max=high).to(expected.dtype)
    # No range where the input is not finite or the op has no number nearby: CPU's value stands.
    ranged = torch.isfinite(x) & ~low.isnan() & ~high.isnan()
    return torch.where(ranged, clamped, expected)


def float64_reference(operands: Sequence[torch.Tensor], expected: torch.Tensor,
                      call: Callable[[Sequence[torch.Tensor]], torch.Tensor]) -> torch.Tensor | None:
    """The op computed from float64 operands (integers too) and rounded to the result dtype, for a
    floating result; None when the op refuses float64 or the result is not floating."""
    if not (expected.is_floating_point() and expected.dtype != torch.float64):
        return None
    wide = [t.to(torch.float64) if t.dtype != torch.bool and not t.is_complex() else t for t in operands]
    try:
        reference = call(wide)
    except (RuntimeError, ValueError, TypeError):
        return None
    if not isinstance(reference, torch.Tensor) or reference.shape != expected.shape or reference.is_complex():
        return None
    return reference.to(expected.dtype)


def _polygamma_zeta(operands: Sequence[torch.Tensor], expected: torch.Tensor, order: object) -> torch.Tensor | None:
    if not isinstance(order, int) or isinstance(order, bool) or order < 1 or len(operands) != 1 \
            or not _floating(expected):
        return None
    x = torch.broadcast_to(operands[0], expected.shape).to(torch.float64)
    sign = 1.0 if order % 2 else -1.0
    return (sign * math.gamma(order + 1) * torch.special.zeta(torch.full_like(x, order + 1.0), x)).to(expected.dtype)


def _zeta_overflow(operands: Sequence[torch.Tensor], expected: torch.Tensor,
                   output: torch.Tensor | None) -> torch.Tensor | None:
    if len(operands) != 2 or not _floating(expected) or output is None or output.shape != expected.shape:
        return None
    return expected.masked_fill(output.isnan() & ((expected == 0) | expected.isinf()), float("nan"))


_RULES: dict[str, tuple[str, Rule]] = {
    "fmod": (QUOTIENT_ROUNDING, _quotient_formula(torch.trunc)),
    "remainder": (QUOTIENT_ROUNDING, _quotient_formula(torch.floor)),
    "lgamma": (LGAMMA_INF, _lgamma_inf),
}


def exact_references(op: str, operands: Sequence[torch.Tensor], expected: torch.Tensor,
                     alpha: object = None) -> list[tuple[str, torch.Tensor]]:
    """The rules that hold for every case, OpInfo samples included (`polygamma-zeta`)."""
    if op != "polygamma":
        return []
    reference = _polygamma_zeta(operands, expected, alpha)
    return [] if reference is None else [(POLYGAMMA_ZETA, reference)]


def known_references(op: str, kernel: str | None, operands: Sequence[torch.Tensor], expected: torch.Tensor,
                     call: Callable[[Sequence[torch.Tensor]], torch.Tensor] | None = None,
                     output: torch.Tensor | None = None) -> list[tuple[str, Any]]:
    """(rule, reference) pairs for one case of `op` run by `kernel` beyond the OpInfo samples; `call`
    reruns the op on other operands (for `scalar-at-opmath`); `output` is the kernel's output (for
    `zeta-overflow`). Empty when no rule applies."""
    out: list[tuple[str, Any]] = []  # a reference, or a function making it when needed
    if call is not None and output is not None:
        out.append((ILL_CONDITIONED, lambda: conditioned_reference(operands, expected, output, call)))
    if op == "special_zeta":  # NaN allowed only where the kernel wrote NaN (`output`, after the run)
        reference = _zeta_overflow(operands, expected, output)
        if reference is not None:
            out.append((ZETA_OVERFLOW, reference))
    if op in _RULES:
        reason, rule = _RULES[op]
        reference = rule(operands, expected)
        if reference is not None and reference.shape == expected.shape:
            out.append((reason, reference))
    if call is not None and kernel is not None and "_scalar_" in kernel and "_cast_" in kernel \
            and _floating(expected) and expected.dtype != torch.float32:
        wider = [t for t in operands if t.dim() == 0 and _floating(t) and t.dtype.itemsize > expected.dtype.itemsize]
        if wider:
            try:
                reference = call([t.to(torch.float32) if _floating(t) else t for t in operands])
            except (RuntimeError, ValueError, TypeError):
                reference = None
            if isinstance(reference, torch.Tensor) and reference.shape == expected.shape:
                out.append((SCALAR_AT_OPMATH, reference.to(expected.dtype)))
    return out


def case_references(base: str, item: Prepared, call: Call, beyond: bool) -> list[tuple[str, Any]]:
    """The rules that could explain one dispatched case's output (`judge_case`'s `known`): the
    exact ones for every case, the op's upstream divergences beyond the OpInfo samples."""

    def rerun(operands: Sequence[torch.Tensor]) -> torch.Tensor:
        values = [call._get(s) for s in call.slots]
        return call.with_operands([o if isinstance(v, torch.Tensor) else v for o, v in zip(operands, values)]).run()

    def in_float64() -> torch.Tensor | None:
        return float64_reference(call.operands(), item.expected, rerun)

    kernel = item.launch.kernel if item.launch is not None else None
    out: list[tuple[str, Any]] = [(MORE_ACCURATE, in_float64),
                                  *exact_references(base, call.operands(), item.expected, call.alpha)]
    return out + known_references(base, kernel, call.operands(), item.expected, rerun, item.output) if beyond else out


__all__ = ["ILL_CONDITIONED", "LGAMMA_INF", "MORE_ACCURATE", "POLYGAMMA_ZETA", "QUOTIENT_ROUNDING",
           "SCALAR_AT_OPMATH", "ZETA_OVERFLOW", "case_references", "conditioned_reference", "exact_references",
           "float64_reference", "known_references"]
