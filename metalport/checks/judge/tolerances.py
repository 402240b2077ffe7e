"""Tolerances as test_mps.py's test_output_match sets them, and one comparison.

The defaults are `torch.testing.assert_close`'s per-dtype ones; the low-precision lists and
per-op cases are our summary of test_mps.py's `_compute_tolerances`; an OpInfo's own
`precisionOverride` / `toleranceOverride` for MPS raises the floor as `assertEqual` does.
`strict` is the small-magnitude judgement (Note [small magnitudes] in `cases`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

_DEFAULTS: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-5, 1e-3),
    torch.bfloat16: (1e-5, 1.6e-2),
    torch.float32: (1e-5, 1.3e-6),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-5, 1e-3),
    torch.complex64: (1e-5, 1.3e-6),
    torch.complex128: (1e-7, 1e-7),
}

# Ops test_mps judges at (2e-2, 1e-2) in float16 and (5e-2, 5e-2) in bfloat16 (ATen names).
_FP16_LOW_PRECISION = frozenset({
    "add", "sub", "div", "addcdiv", "addcmul", "true_divide", "ldexp", "lerp", "acosh", "asinh", "asin",
    "xlogy", "round", "nextafter", "mul", "var", "std", "sum", "prod", "norm", "softmax", "log_softmax",
    "cross", "kron", "outer", "huber_loss", "gelu", "glu", "nansum", "nanmean",
})
_FP32_LOW_PRECISION = frozenset({"conv2d", "conv_transpose2d", "matmul", "addbmm"})

_OVERRIDES: dict[tuple[str, torch.dtype], tuple[float, float]] = {
    ("pow", torch.float32): (1e-6, 4e-6),
}


@dataclass(frozen=True)
class Tolerance:
    """Absolute and relative tolerance; both zero means exact equality."""

    atol: float
    rtol: float


def tolerance_for(op: str, dtype: torch.dtype, info: Any | None = None) -> Tolerance:
    """The tolerance test_mps judges `op` (no `aten::` prefix needed) with at `dtype`.

    `info`: the op's OpInfo, whose MPS precision/tolerance overrides raise the floor."""
    name = op.removeprefix("aten::").split(".")[0]
    if (name, dtype) in _OVERRIDES:
        atol, rtol = _OVERRIDES[(name, dtype)]
    elif dtype in (torch.float32, torch.complex64) and name in _FP32_LOW_PRECISION:
        atol, rtol = 1e-4, 3e-5
    elif dtype == torch.float16 and name in _FP16_LOW_PRECISION:
        atol, rtol = 2e-2, 1e-2
    elif dtype == torch.bfloat16 and name in _FP16_LOW_PRECISION:
        atol, rtol = 5e-2, 5e-2
    else:
        atol, rtol = _DEFAULTS.get(dtype, (0.0, 0.0))
    if info is not None:
        from metalport.checks.cases.numerics import tolerance_overrides

        floor_atol, floor_rtol = tolerance_overrides(info, dtype)
        atol, rtol = max(atol, floor_atol), max(rtol, floor_rtol)
    return Tolerance(atol, rtol)


_STRICT_RTOL = 2.0 ** -5  # loose for approximations (igammac: 1%), tight for cancellation (>= 6% at |x| <= 1e-6)


def strict(tol: Tolerance, dtype: torch.dtype) -> Tolerance:
    """`tol` for small magnitudes: relative, atol down to the smallest normal of `dtype`.

    A cancellation at |x| loses about eps/|x| relatively, so at the tiny magnitudes judged this
    way it fails even at a relative tolerance far looser than test_mps's (Note [small magnitudes])."""
    real = dtype.to_real()
    if not real.is_floating_point:
        return tol
    return Tolerance(min(tol.atol, torch.finfo(real).smallest_normal), max(tol.rtol, _STRICT_RTOL))


def _widened(actual: torch.Tensor, expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if actual.dtype == torch.bool:
        return actual.contiguous().view(torch.uint8).to(torch.int64), expected.contiguous().view(torch.uint8).to(torch.int64)
    if not (actual.is_floating_point() or actual.is_complex()):
        return actual.to(torch.int64), expected.to(torch.int64)
    wide = torch.complex128 if actual.is_complex() else torch.float64
    return actual.to(wide), expected.to(wide)


def same_special(a: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """Per element: equal, or both NaN (a complex value is NaN when either part is)."""
    return (a == e) | (torch.isnan(a) & torch.isnan(e))


def mismatched(actual: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> torch.Tensor:
    """Per element of same-shaped tensors: True where `actual` is not within `tol` of `expected`.

    NaN matches NaN (a complex value is NaN when either part is); an infinity matches only itself.
    Booleans compare by their stored byte.
    """
    a, e = _widened(actual, expected)
    if not (a.is_floating_point() or a.is_complex()):
        return (a - e).abs() > tol.atol
    same = same_special(a, e)
    close = torch.isfinite(e) & ((a - e).abs() <= e.abs() * tol.rtol + tol.atol)
    return ~(same | close)


def errors(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Per-element absolute error (float64); `inf` where NaN or infinity placement differs."""
    a, e = _widened(actual, expected)
    if not (a.is_floating_point() or a.is_complex()):
        return (a - e).abs().to(torch.float64)
    same = same_special(a, e)
    diff = (a - e).abs().to(torch.float64)
    diff[~same & (diff.isnan() | ~torch.isfinite(e) | torch.isnan(a))] = float("inf")
    return diff.masked_fill_(same, 0.0)


def largest_error(actual: torch.Tensor, expected: torch.Tensor, *, finite: bool = False) -> float:
    """Largest absolute error (see `errors`); `inf` for a structural mismatch (shape, dtype, NaN or inf placement).
    `finite`: over the elements where both are finite only (0 where there are none or the shapes
    or dtypes differ), the error a report shows beside a verdict that judges the rest."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return 0.0 if finite else float("inf")
    if actual.numel() == 0:
        return 0.0
    each = errors(actual, expected)
    if finite:
        a, e = _widened(actual, expected)
        each = each[torch.isfinite(a) & torch.isfinite(e)]
    return float(each.max()) if each.numel() else 0.0
