"""Tolerances in the style of test_mps.py's test_output_match, and one comparison.

The defaults are `torch.testing.assert_close`'s per-dtype ones; the override table is our own
summary of the per-op lists described in the notes (float16 low-precision ops, a few float32 ones).
"""

from __future__ import annotations

from dataclasses import dataclass

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

_FP16_LOW_PRECISION = frozenset({
    "add", "sub", "mul", "div", "addcdiv", "addcmul", "lerp", "acosh", "asinh", "asin", "xlogy",
    "round", "nextafter", "sum", "prod", "norm", "var", "std", "softmax", "log_softmax",
})

_OVERRIDES: dict[tuple[str, torch.dtype], tuple[float, float]] = {
    ("pow", torch.float32): (1e-6, 4e-6),
    ("log_sigmoid", torch.float16): (5e-3, 1e-3),
}


@dataclass(frozen=True)
class Tolerance:
    """Absolute and relative tolerance; both zero means exact equality."""

    atol: float
    rtol: float


def tolerance_for(op: str, dtype: torch.dtype) -> Tolerance:
    """The tolerance conformance uses for `op` (no `aten::` prefix needed) at `dtype`."""
    name = op.removeprefix("aten::").split(".")[0]
    if (name, dtype) in _OVERRIDES:
        return Tolerance(*_OVERRIDES[(name, dtype)])
    if dtype == torch.float16 and name in _FP16_LOW_PRECISION:
        return Tolerance(1e-2, 1e-2)
    return Tolerance(*_DEFAULTS.get(dtype, (0.0, 0.0)))


def mismatch(actual: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> float | None:
    """Worst error of `actual` against `expected`, or None when they match.

    Shapes and dtypes must agree, NaN positions must agree, infinities must agree exactly.
    A structural mismatch (shape, dtype, NaN or inf placement) is reported as `inf`.
    """
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return float("inf")
    if actual.numel() == 0:
        return None
    if not (actual.is_floating_point() or actual.is_complex()):
        diff = (actual.to(torch.int64) - expected.to(torch.int64)).abs()
        worst = float(diff.max())
        return worst if worst > tol.atol else None
    wide = torch.complex128 if actual.is_complex() else torch.float64
    a, e = actual.to(wide), expected.to(wide)
    nan = torch.isnan(e)
    if not torch.equal(torch.isnan(a), nan):
        return float("inf")
    finite = torch.isfinite(e)
    if not torch.equal(a[~finite & ~nan], e[~finite & ~nan]):
        return float("inf")
    err = (a[finite] - e[finite]).abs()
    if err.numel() == 0:
        return None
    allowed = tol.atol + tol.rtol * e[finite].abs()
    worst = float(err.max())
    return worst if bool((err > allowed).any()) else None


def worst_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """Largest absolute error over finite expected values; `inf` for a structural mismatch.

    Structural: shape or dtype differ, NaN positions differ, or an infinity differs.
    """
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return float("inf")
    if actual.numel() == 0:
        return 0.0
    if not (actual.is_floating_point() or actual.is_complex()):
        return float((actual.to(torch.int64) - expected.to(torch.int64)).abs().max())
    wide = torch.complex128 if actual.is_complex() else torch.float64
    a, e = actual.to(wide), expected.to(wide)
    nan = torch.isnan(e)
    if not torch.equal(torch.isnan(a), nan):
        return float("inf")
    finite = torch.isfinite(e)
    if not torch.equal(a[~finite & ~nan], e[~finite & ~nan]):
        return float("inf")
    if not bool(finite.any()):
        return 0.0
    return float((a[finite] - e[finite]).abs().max())
