"""A finer truth where float64 CPU is itself inaccurate: mpmath, at the elements in doubt.

Note [precise truth]
The truth of Note [the oracle] is torch CPU in float64. For a few ops that float64 result is known
to lose digits in places a float32 kernel can be judged on:

  * digamma, polygamma near the negative poles: CPU reflects through pi / tan(pi x), and pi x is
    rounded before tan sees it, so at x = -n + d the relative error grows like n eps / d (at
    d = 1e-10 it is worse than float32's precision);
  * lgamma near its negative poles and near the zeros of log|Gamma| past x = -2, where a result
    close to 0 comes out of a cancellation;
  * special_zeta (Hurwitz zeta), whose Euler-Maclaurin sum is good to about 1e-15 relative only
    away from x = 1 and for moderate q;
  * glu_backward's second half, `(1 - s) * s * a * grad` with s = sigmoid(b) rounded within an ulp of
    1 once b is past ~30 (its output is both halves, Note [grad over halves] in port/write/halves.py).

Only where the float64 truth finds a kernel element wrong, with every operand within 1e4 in
magnitude, is that element recomputed with mpmath at 40 significant digits (the rest stands, up
to 512 elements a case), and the case judged again with the same rule: a kernel
passes there because it is right, and fails against both references otherwise. Outside the
functions' analytic domain CPU's float64 convention stands (zeta for x <= 1 or q <= 0, digamma at
its poles), except at the poles of lgamma (+inf) and of the polygamma functions of order n >= 1
(+inf for odd n, NaN for even n), where CPU's float64 result is a huge finite number that depends on
how pi x rounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

MAX_ELEMENTS = 512  # elements recomputed per case at most (mpmath runs per element)
_REACH = 1e4  # past this magnitude float64 CPU is in its asymptotic regime (accurate) and mpmath slow
_DPS = 40


def _pole(x: float) -> bool:
    """A non-positive integer: a pole of Gamma and of every polygamma function."""
    return x <= 0.0 and x == math.floor(x)


def _lgamma(mp: Any, x: float, *_: float) -> Any:
    if _pole(x):
        return math.inf  # log|Gamma| at a pole, as CPU's lgamma says
    return mp.loggamma(x).real if abs(x) <= _REACH else None


def _digamma(mp: Any, x: float, *_: float) -> Any:
    if _pole(x) or abs(x) > _REACH:
        return None  # CPU's conventions at the poles (-inf at 0, NaN below) stand
    return mp.digamma(x)


def _polygamma(mp: Any, x: float, n: Any) -> Any:
    if int(n) == 0:
        return _digamma(mp, x)
    if _pole(x):
        # sum over k of 1 / (x + k)^(n + 1): +inf either side for odd n; no limit (NaN) for even n
        return math.inf if int(n) % 2 else math.nan
    return mp.psi(int(n), x) if abs(x) <= _REACH else None


def _zeta(mp: Any, x: float, q: float, *_: float) -> Any:
    if not x > 1.0 or not q > 0.0 or max(abs(x), abs(q)) > _REACH:
        return None  # CPU's float64 conventions (inf at x = 1, NaN below, poles at q <= 0) stand
    return mp.zeta(x, q)


def _glu_backward(mp: Any, a: float, b: float, g: float) -> Any:
    """(gradient of the first half, of the second) at one position of the halved shape: CPU's float64
    `(1 - s) * s * a * g` loses digits once s = sigmoid(b) is within an ulp of 1 (b past ~30; at
    b = 35.9 it is 13% off); here s * (1 - s) is e^-b / (1 + e^-b)^2, without the cancellation."""
    e = mp.exp(-mp.mpf(b))
    return (g / (1 + e), e / (1 + e) ** 2 * g * a)


# op base name -> (function of the operand values, whether its first argument is an integer order,
# whether its output is the two halves of a backward over halves, Note [grad over halves] in
# port/write/halves.py: the function returns both halves' values at one position of the operands' shape)
_PRECISE: dict[str, tuple[Callable[..., Any], bool] | tuple[Callable[..., Any], bool, bool]] = {
    "lgamma": (_lgamma, False),
    "digamma": (_digamma, False),
    "special_digamma": (_digamma, False),
    "special_psi": (_digamma, False),
    "polygamma": (_polygamma, True),
    "special_polygamma": (_polygamma, True),
    "special_zeta": (_zeta, False),
    "glu_backward": (_glu_backward, False, True),
}


def has_precise_truth(op: str) -> bool:
    """Whether `op` (an aten base name) has a truth finer than float64 CPU (Note [precise truth])."""
    return op in _PRECISE


def refine(op: str, operands: Sequence[torch.Tensor], order: Any, truth: torch.Tensor,
           doubt: torch.Tensor) -> torch.Tensor | None:
    """`truth` with the elements in `doubt` recomputed by mpmath, or None when `op` has no precise
    truth or nothing changed. `order`: polygamma's integer order (the call's first argument)."""
    entry = _PRECISE.get(op)
    if entry is None or truth.is_complex() or not bool(doubt.any()):
        return None
    import mpmath

    if len(entry) == 3:
        return _refine_halves(mpmath, entry[0], operands, truth, doubt)
    fn, takes_order = entry[0], entry[1]
    flat_doubt = doubt.reshape(-1).nonzero().reshape(-1)[:MAX_ELEMENTS]
    columns = [torch.broadcast_to(o, truth.shape).reshape(-1).double() for o in operands]
    refined = truth.reshape(-1).double().clone()
    changed = False
    with mpmath.workdps(_DPS):
        for i in flat_doubt.tolist():
            values = [float(c[i]) for c in columns]
            if any(v != v or abs(v) == math.inf for v in values):  # NaN or infinite: float64 stands
                continue
            try:
                value = fn(mpmath, *values, order) if takes_order else fn(mpmath, *values)
            except (ValueError, ZeroDivisionError, ArithmeticError):
                continue  # a pole: CPU's float64 value stands
            if value is None:
                continue
            refined[i] = float(value)
            changed = True
    return refined.reshape(truth.shape).to(truth.dtype) if changed else None


def _refine_halves(mpmath: Any, fn: Callable[..., Any], operands: Sequence[torch.Tensor], truth: torch.Tensor,
                   doubt: torch.Tensor) -> torch.Tensor | None:
    """`refine` of a backward over halves (Note [grad over halves]): the truth is the two halves of the
    operands' shape joined along the one dim where it is twice theirs; each doubtful element is
    recomputed from the operands at its position in its half."""
    shape = tuple(operands[0].shape) if operands else ()
    dims = [d for d in range(truth.dim()) if len(shape) == truth.dim() and truth.shape[d] == 2 * shape[d]]
    if len(dims) != 1 or any(truth.shape[d] != shape[d] for d in range(truth.dim()) if d != dims[0]):
        return None
    refined = truth.double().clone()
    columns = [o.double() for o in operands]
    changed, left = False, MAX_ELEMENTS
    with mpmath.workdps(_DPS):
        for half, (part, bad) in enumerate(zip(refined.chunk(2, dims[0]), doubt.chunk(2, dims[0]))):
            for at in bad.nonzero().tolist()[:left]:
                left -= 1
                values = [float(c[tuple(at)]) for c in columns]
                if any(v != v or abs(v) == math.inf or abs(v) > _REACH for v in values):
                    continue  # NaN, infinite or huge: float64 stands
                part[tuple(at)] = float(fn(mpmath, *values)[half])
                changed = True
    return refined.to(truth.dtype) if changed else None


__all__ = ["MAX_ELEMENTS", "has_precise_truth", "refine"]
