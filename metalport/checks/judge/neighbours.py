"""Whether torch CPU's value at an element is a function of that element's inputs at all.

Note [a value its neighbours wrote]: torch CPU's chebyshev_polynomial_u(NaN, 2.5) returns the
recurrence's result variable, which its loop never assigns when the first term is already NaN, so
the value is whatever the previous element left there: in float32 and float64 alike,
chebyshev_polynomial_u([0.3, NaN], [3, 2.5]) gives -0.984 twice, and the same NaN after 0.7 gives
-0.056. Such a number is no reference, and its float64 twin is no truth: both can even agree (0.0 in
a fresh process), which the NaN-operand rule of the oracle (CPU and the truth give different numbers:
NAN_UNDEFINED) cannot tell from a defined value such as fmax(NaN, 1) = 1.

So an element with a NaN operand where torch CPU gives a number is evaluated again, alone with one
element of the same case before it, twice, with two elements whose finite values differ (`probe_calls`,
in the case's dtype and in float64). A value that changes with the element before it is not defined
by its inputs: the truth there is NaN, IEEE 754's default result for a NaN operand (6.2), and an
output is held to that (or to CPU's value, as everywhere). A defined number (fmax(NaN, 1),
nan_to_num(NaN), pow(1, NaN), hypot(inf, NaN)) does not move and stays required. Only elementwise
cases are probed (every tensor operand broadcasts to the output, which has their shape), at most
_MAX_PROBED elements a case; a case with fewer than two elements of distinct finite values to put
before one is not probed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from metalport.checks.cases.samples import Call
from metalport.checks.judge.oracle import upcast

_MAX_PROBED = 64  # elements probed in one case (the first ones)


@dataclass(frozen=True)
class Probe:
    """The calls that put each probed element (flat `positions` of the output) after a context element:
    per call, the results at odd places are the probed elements' values."""

    positions: torch.Tensor  # int64 flat indices into the output
    calls: tuple[Call, ...]  # per context element: in the case's dtype, then in float64


def _nan_part(t: torch.Tensor) -> torch.Tensor:
    return torch.isnan(torch.view_as_real(t)).any(-1) if t.is_complex() else torch.isnan(t)


def _finite(t: torch.Tensor) -> torch.Tensor:
    return torch.isfinite(torch.view_as_real(t)).all(-1) if t.is_complex() else torch.isfinite(t)


def probe_calls(call: Call, expected: torch.Tensor) -> Probe | None:
    """The probe of `call`'s elements with a NaN operand and a number from torch CPU (`expected`), or
    None when there is none or the case is not elementwise (Note [a value its neighbours wrote])."""
    if not call.slots or not (expected.is_floating_point() or expected.is_complex()) or expected.dim() == 0:
        return None
    values = [call._get(s) for s in call.slots]
    slotted = {id(v) for v in values}
    others = [*call.args, *call.kwargs.values()]
    if any(isinstance(v, torch.Tensor) and id(v) not in slotted for v in others):
        return None  # a tensor argument that is not an operand (a weight, an out=): not elementwise
    shape = expected.shape
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if not tensors or not all(_broadcasts(v.shape, shape) for v in tensors) \
            or tuple(torch.broadcast_shapes(*(v.shape for v in tensors))) != tuple(shape):
        return None  # an operand the output does not lay element by element (glu's halves, a reduction)
    flat = [v.broadcast_to(shape).reshape(-1) if v.dim() else v for v in values if isinstance(v, torch.Tensor)]
    floating = [f for f in flat if f.dim() and (f.is_floating_point() or f.is_complex())]
    if not floating:
        return None
    nan_operand = torch.stack([_nan_part(f) for f in floating]).any(0)
    out = expected.reshape(-1)
    suspects = (nan_operand & ~_nan_part(out)).nonzero().reshape(-1)[:_MAX_PROBED]
    if not suspects.numel():
        return None
    finite = torch.stack([_finite(f) for f in floating]).all(0) & _finite(out)
    contexts = _two_distinct(out, finite.nonzero().reshape(-1))
    if contexts is None:
        return None
    calls = []
    for ctx in contexts:
        order = torch.stack([ctx.expand(suspects.numel()), suspects], 1).reshape(-1)
        laid = [(v.broadcast_to(shape).reshape(-1)[order].clone() if v.dim() else v.clone())
                if isinstance(v, torch.Tensor) else v for v in values]
        calls.append(call.with_operands(laid))
        calls.append(call.with_operands([upcast(v) for v in laid]))
    return Probe(suspects, tuple(calls))


def _broadcasts(have: torch.Size, shape: torch.Size) -> bool:
    """`have` broadcasts to `shape`."""
    try:
        return torch.broadcast_shapes(have, shape) == shape
    except RuntimeError:
        return False


def _two_distinct(out: torch.Tensor, candidates: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Two of `candidates` (flat indices) whose values in `out` differ, None when there are not two."""
    if not candidates.numel():
        return None
    first = candidates[0]
    for k in candidates[1:]:
        if not bool(out[k] == out[first]):
            return first, k
    return None


def undefined_by_neighbours(probe: Probe, expected: torch.Tensor, truth: torch.Tensor,
                            results: Sequence[object]) -> torch.Tensor:
    """Per output element (flat, bool): torch CPU's value or its float64 truth changed with the element
    before it (`results`: the outcomes of `probe.calls`, in order). An outcome that is no tensor of
    the probe's length (torch refused, the child crashed) proves nothing."""
    moved = torch.zeros(expected.numel(), dtype=torch.bool)
    width = 2 * probe.positions.numel()
    for n, result in enumerate(results):
        base = (expected if n % 2 == 0 else truth).reshape(-1)[probe.positions]
        if not isinstance(result, torch.Tensor) or result.numel() != width or result.dtype != base.dtype:
            continue
        again = result.reshape(-1)[1::2]
        same = (again == base) | (_nan_part(again) & _nan_part(base))
        moved[probe.positions] |= ~same
    return moved


__all__ = ["Probe", "probe_calls", "undefined_by_neighbours"]
