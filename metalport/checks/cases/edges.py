"""Held-out edge cases that no OpInfo value set aims at.

Note [edge cases]
OpInfo's small / large / extremal sets and uniform draws over [-9, 9] miss where real kernels
break. These sets aim at those places, for every op alike (never by its name), and the oracle
judges them like any other case:

  * a dense sweep: 4096 evenly spaced values over the drawing range, so a formula wrong on one
    sub-interval (a polynomial's segment, a switch between two branches) is met at every seed;
  * moderate and wide magnitudes (1 to 500, then 500 to 1e6 as far as the dtype goes, log-uniform,
    both signs): range reduction and asymptotic branches;
  * every quadrant with signed zeros: sign handling, atan2-like quadrant choices, branch cuts;
  * the neighbourhoods of the integers in [-6, 6] and of the multiples of pi/2 (where the poles of
    gamma-, tan- and log-like functions lie), at distances 0.1 down to 1e-5 and the centre itself;
  * the overflow threshold of the truth: along each ray (each operand alone, all together, every
    sign), the magnitude where the op evaluated in float64 stops being finite at the dtype, found by
    two rounds of a 2048-way section on the reference, then probed a few ulps either side: an
    intermediate that overflows before the result does (exp(x) in sinh, x*x in hypot) fails there;
  * integers past 2^24 (and 2^53 for int64): an integer op computed through float32 (or float64)
    loses their low bits.

Values past 500 in magnitude fall in the scope of OpInfo's large-value test (its skips and xfails on
a device put them out of scope); the rest in that of its normal-value test.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch

from metalport.checks.cases.numerics import Numerics, as_dtype
from metalport.checks.cases.samples import Call

SWEEP = 4096
_SECTION = 2048
_QUADRANT = (-2.5, -0.75, -0.0, 0.0, 0.75, 2.5)
_POLE_OFFSETS = (0.1, 1e-2, 1e-3, 1e-4, 1e-5)
_TYPICAL = (0.5, 1.5, 2.5, 4.0)  # the other operands' values near one operand's pole
_ULP_STEPS = (-4096, -256, -16, -2, -1, 1, 16)

EdgeSet = tuple[str, list[torch.Tensor], str]  # label, one tensor per operand, "normal" or "large" scope


def edge_sets(template: Call, dtypes: Sequence[torch.dtype], numerics: Numerics, gen: torch.Generator
              ) -> list[EdgeSet]:
    """The edge cases of Note [edge cases] for an op whose operands have `dtypes`."""
    out: list[EdgeSet] = []
    floating = all(d.is_floating_point for d in dtypes)
    complex_ = all(d.is_complex for d in dtypes)
    if floating or complex_:
        out.append(("dense sweep of the domain", _sweep(dtypes, numerics, gen), "normal"))
        out.append(("moderate magnitudes", _magnitudes(dtypes, gen, 1.0, 500.0), "normal"))
        wide = _magnitudes(dtypes, gen, 500.0, 1e6)
        if wide is not None:
            out.append(("wide magnitudes", wide, "large"))
    if floating or complex_ or all(_signed_int(d) for d in dtypes):
        out.append(("every quadrant and signed zero", _quadrants(dtypes), "normal"))
    if floating:
        out.append(("near integers and multiples of pi/2", _near_poles(dtypes), "normal"))
        threshold = _overflow_probes(template, dtypes, numerics)
        if threshold is not None:
            out.append(("at the truth's overflow threshold", threshold, "large"))
    if all(d in (torch.int32, torch.int64) for d in dtypes):
        out.append(("integers past 2^24", _past_float_integers(dtypes), "normal"))
    return out


def _signed_int(dtype: torch.dtype) -> bool:
    return dtype in (torch.int8, torch.int16, torch.int32, torch.int64)


def _sweep(dtypes: Sequence[torch.dtype], numerics: Numerics, gen: torch.Generator) -> list[torch.Tensor]:
    """Operand 0 evenly spaced over its drawing range; the others the same points shuffled."""
    out = []
    for k, dtype in enumerate(dtypes):
        low, high = numerics.bounds(k, dtype.to_real())
        lo = -9.0 if low is None else max(low, -9.0)
        hi = 9.0 if high is None else min(high, 9.0)
        if hi <= lo:
            lo, hi = (lo, lo + 1.0) if low is not None else (hi - 1.0, hi)
        line = torch.linspace(lo, hi, SWEEP, dtype=torch.float64)
        first = line if k == 0 else line[torch.randperm(SWEEP, generator=gen)]
        out.append(as_dtype(first, line[torch.randperm(SWEEP, generator=gen)], dtype))
    return out


def _magnitudes(dtypes: Sequence[torch.dtype], gen: torch.Generator, low: float, high: float
                ) -> list[torch.Tensor] | None:
    """Log-uniform magnitudes in [low, high) (capped at the dtype's largest finite), random signs."""
    top = min(high, min(torch.finfo(d.to_real()).max for d in dtypes))
    if top <= low:
        return None

    def signed() -> torch.Tensor:
        e = torch.empty(1024, dtype=torch.float64).uniform_(math.log(low), math.log(top), generator=gen)
        return e.exp() * torch.where(torch.rand(1024, generator=gen) < 0.5, -1.0, 1.0).double()

    return [as_dtype(signed(), signed() if d.is_complex else None, d) for d in dtypes]


def _quadrants(dtypes: Sequence[torch.dtype]) -> list[torch.Tensor]:
    """Every sign combination of every operand (complex: of both parts), zeros of both signs."""
    if all(_signed_int(d) for d in dtypes):
        per = [[-3, -1, 0, 1, 3] for _ in dtypes]
    elif all(d.is_complex for d in dtypes):
        per = [[complex(a, b) for a in _QUADRANT for b in _QUADRANT] for _ in dtypes]
    else:
        per = [list(_QUADRANT) for _ in dtypes]
    if len(dtypes) > 2 and dtypes[0].is_complex:  # 36^3 combinations: pair them up instead
        return [torch.tensor(per[k][k:] + per[k][:k], dtype=d) for k, d in enumerate(dtypes)]
    combos = list(itertools.product(*per))
    return [_signed_tensor([c[k] for c in combos], d) for k, d in enumerate(dtypes)]


def _signed_tensor(values: list, dtype: torch.dtype) -> torch.Tensor:
    """A tensor of `values` keeping the sign of every zero (complex parts included)."""
    if dtype.is_complex:
        real = torch.tensor([complex(v).real for v in values], dtype=torch.float64)
        imag = torch.tensor([complex(v).imag for v in values], dtype=torch.float64)
        return torch.complex(real, imag).to(dtype)
    return torch.tensor(values, dtype=torch.float64 if dtype.is_floating_point else dtype).to(dtype)


def _near_poles(dtypes: Sequence[torch.dtype]) -> list[torch.Tensor]:
    """Each operand in turn near the integers in [-6, 6] and the multiples of pi/2 in [-2pi, 2pi],
    the others at typical values."""
    centres = [float(c) for c in range(-6, 7)] + [k * math.pi / 2 for k in range(-4, 5) if k]
    near = [v for c in centres for v in (c, *(c + s * d for d in _POLE_OFFSETS for s in (-1.0, 1.0)))]
    cols: list[list[float]] = [[] for _ in dtypes]
    for k in range(len(dtypes)):
        for j in range(len(dtypes)):
            cols[j] += near if j == k else [_TYPICAL[i % len(_TYPICAL)] for i in range(len(near))]
    return [torch.tensor(col, dtype=torch.float64).to(d) for col, d in zip(cols, dtypes)]


def _past_float_integers(dtypes: Sequence[torch.dtype]) -> list[torch.Tensor]:
    """Integers float32 (and, for int64, float64) cannot hold, beside small ones, every combination."""
    def values(dtype: torch.dtype) -> list[int]:
        big = [2 ** 24 + 1, -(2 ** 24 + 1), 2 ** 24 + 3, 123456789, -987654321]
        if dtype == torch.int64:
            big += [2 ** 53 + 1, -(2 ** 53 + 1), 2 ** 62 + 1]
        return big + [0, 1, -1, 3]
    per = [values(d) for d in dtypes]
    if len(dtypes) > 2:
        per = [v[:6] for v in per]
    combos = list(itertools.product(*per))
    return [torch.tensor([c[k] for c in combos], dtype=d) for k, d in enumerate(dtypes)]


def _rays(n: int) -> list[tuple[float | None, ...]]:
    """Directions: each operand alone (+-, the others 1) and all together in every sign pattern."""
    alone: list[tuple[float | None, ...]] = [tuple(s if j == k else None for j in range(n))
                                            for k in range(n) for s in (1.0, -1.0)]
    return alone + (list(itertools.product((1.0, -1.0), repeat=n)) if n > 1 else [])


def _overflow_probes(template: Call, dtypes: Sequence[torch.dtype], numerics: Numerics
                     ) -> list[torch.Tensor] | None:
    """Inputs a few ulps either side of each ray's overflow threshold of the float64 truth."""
    rows: list[list[torch.Tensor]] = [[] for _ in dtypes]
    top = math.log(min(torch.finfo(d).max for d in dtypes))
    steps = torch.tensor([1.0 + k * torch.finfo(dtypes[0]).eps for k in _ULP_STEPS], dtype=torch.float64)
    for ray in _rays(len(dtypes)):
        m = _threshold(template, dtypes, numerics, ray, top)
        if m is not None:
            for j, v in enumerate(_along(ray, steps * m)):
                rows[j].append(v)
    if not rows[0]:
        return None
    return [torch.cat(r).to(d) for r, d in zip(rows, dtypes)]


def _threshold(template: Call, dtypes: Sequence[torch.dtype], numerics: Numerics,
               ray: tuple[float | None, ...], top: float) -> float | None:
    """The smallest magnitude along `ray` where the truth rounded to the dtype stops being finite
    (having been finite just below), or None when it never does in [1, largest finite]."""
    lo, hi = 0.0, top  # in log-magnitude
    found = None
    for _ in range(2):
        mags = torch.linspace(lo, hi, _SECTION, dtype=torch.float64).exp()
        finite = _finite_along(template, dtypes, numerics, ray, mags)
        if finite is None:
            return None
        flips = (finite[:-1] & ~finite[1:]).nonzero()
        if not len(flips):
            return found
        i = int(flips[0])
        lo, hi = float(mags[i].log()), float(mags[i + 1].log())
        found = float(mags[i + 1])
    return found


def _finite_along(template: Call, dtypes: Sequence[torch.dtype], numerics: Numerics,
                  ray: tuple[float | None, ...], mags: torch.Tensor) -> torch.Tensor | None:
    ops = [numerics.restrict(v, j) for j, v in enumerate(_along(ray, mags))]
    try:
        truth = template.with_operands(ops).run()
    except (RuntimeError, TypeError, ValueError, IndexError):
        return None
    if not isinstance(truth, torch.Tensor) or truth.shape != mags.shape or not truth.is_floating_point():
        return None
    return torch.isfinite(truth.to(dtypes[0]))


def _along(ray: tuple[float | None, ...], mags: torch.Tensor) -> list[torch.Tensor]:
    """Each operand's values at magnitudes `mags` along `ray` (1 where the ray leaves it out)."""
    return [mags * r if r is not None else torch.ones_like(mags) for r in ray]


__all__ = ["SWEEP", "edge_sets"]
