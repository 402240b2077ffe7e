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


def compare(actual: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> tuple[float, bool]:
    """(worst absolute error, within tolerance) of `actual` against `expected`, in one pass.

    Shapes and dtypes must agree, NaN positions must agree, infinities must agree exactly; a
    structural mismatch (shape, dtype, NaN or inf placement) is an `inf` error. Booleans compare
    by their stored byte, so a byte that is neither 0 nor 1 is an error.
    """
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return float("inf"), False
    if actual.numel() == 0:
        return 0.0, True
    if actual.dtype == torch.bool:
        actual, expected = actual.contiguous().view(torch.uint8), expected.contiguous().view(torch.uint8)
    if not (actual.is_floating_point() or actual.is_complex()):
        if torch.equal(actual, expected):
            return 0.0, True
        worst = float((actual.to(torch.int64) - expected.to(torch.int64)).abs().max())
        return worst, worst <= tol.atol
    if actual.is_complex():
        wide = torch.complex128
    else:
        wide = torch.float32 if actual.element_size() < 4 else torch.float64
    a, e = actual.to(wide), expected.to(wide)
    nan_e = torch.isnan(e)
    if not torch.equal(torch.isnan(a), nan_e):
        return float("inf"), False
    diff = (a - e).abs()
    diff.masked_fill_(nan_e | (a == e), 0)
    if not bool(diff.any()):
        return 0.0, True
    finite = torch.isfinite(e)
    if bool((diff.isnan() | (diff.isinf() & finite) | (~finite & (diff != 0))).any()):
        return float("inf"), False
    allowed = e.abs().mul_(tol.rtol).add_(tol.atol)
    return float(diff.max()), not bool((diff > allowed).any())


def mismatch(actual: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> float | None:
    """Worst error of `actual` against `expected`, or None when they match (see `compare`)."""
    worst, ok = compare(actual, expected, tol)
    return None if ok else worst


def worst_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """Largest absolute error; `inf` for a structural mismatch (see `compare`)."""
    return compare(actual, expected, Tolerance(0.0, 0.0))[0]
