"""Value sets that find bugs in every operand: special values paired across operands, ties and
exact multiples, every magnitude, and special values salted into a launch spec's inputs.

Note [special pairings]
OpInfo's extremal set pairs inf and NaN only with each other, and its small set pairs the zeros
only with finite values: no set gives one operand an exact zero (of either sign) while another is
NaN or inf, where `0 * inf`, `pow(0, -inf)`, `atan2(-0, -inf)`, `copysign(nan, -0)` and a lost NaN
in max/min/clamp show. These sets are drawn for every op alike (never by its name):

  * every pairing across operands of zeros of both signs, +-inf, NaN, +-1 and a few finite values
    (judged where the OpInfo judges its extremal set: an MPS skip of that test puts it out of scope);
  * every pairing of zeros of both signs with ties (x.5), subnormals, the smallest normal and tiny
    values (judged as normal values);
  * ties and exact multiples: x.5 and integers with their one-ulp neighbours for operand 0, and for
    several operands a = k * b and a = (k + 1/2) * b, where step functions (round, floor_divide,
    remainder, fmod) and their tie-breaking and sign rules break;
  * every magnitude: powers of two across the dtype's whole exponent range, both signs, each
    operand against every other's (huge against tiny: where a branch for huge magnitudes is wrong).

Note [special values in spec cases]
A launch spec's inputs are drawn from normal floats, where a reduction never meets a zero, an
infinity or a NaN. For floating inputs one random case in four and a held-out case have about a
tenth of their elements replaced by zeros of both signs, +-inf, ties (x.5 and repeated values),
subnormals and huge values (`salt_specials`), and a held-out case gives each slice one kind of
special value (`special_rows`: one NaN, inf with -inf, only signed zeros, ...), so a sum of inf and
-inf, a max dropping a NaN or a mean overflowing in half precision is met. NaN goes only into a
slice of its own: a sort-based CPU kernel (mode) has no defined result for a slice mixing NaN with
repeated values (its sort then has no strict weak order), and the standard never fails a kernel on
a value CPU leaves undefined.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch

from metalport.checks.cases.numerics import as_dtype

_FINITE = (1.0, -1.0, 2.5, -0.5)
_TIES = (0.5, -0.5, 1.5, -2.5, 3.5)
_MULTIPLIERS = (-4, -3, -2, -1, 0, 1, 2, 3, 5)
_DIVISORS = (0.1, -0.3, 0.7, 1.5, -2.0, 3.0, 0.25, -7.0)
_SALT = 0.1  # share of a spec input's elements replaced by special values

SpecialSet = tuple[str, list[torch.Tensor], str]  # label, one tensor per operand, OpInfo value-set scope


def _pairings(per: Sequence[Sequence[float]], dtypes: Sequence[torch.dtype]) -> list[torch.Tensor]:
    """Every combination of the per-operand values (a ternary op pairs each value with a shift of the
    others rather than the whole cube), keeping the sign of every zero."""
    if len(per) > 2:
        n = max(len(p) for p in per)
        combos = [tuple(per[k][(i + k * (k + 1)) % len(per[k])] for k in range(len(per))) for i in range(n * n)]
    else:
        combos = list(itertools.product(*per))
    cols = [torch.tensor([c[k] for c in combos], dtype=torch.float64) for k in range(len(dtypes))]
    return [as_dtype(col, col.flip(0), dtype) for col, dtype in zip(cols, dtypes)]


def special_sets(dtypes: Sequence[torch.dtype]) -> list[SpecialSet]:
    """The value sets of Note [special pairings] for an op whose operands have `dtypes`."""
    if not all(d.is_floating_point or d.is_complex for d in dtypes):
        return _integer_sets(dtypes)
    fi = torch.finfo(dtypes[0].to_real())
    extremal = [0.0, -0.0, math.inf, -math.inf, math.nan, *_FINITE]
    # subnormal inputs (which the GPU reads as zero, as the reference then does) and tiny normals whose
    # products with the ties stay normal (a subnormal result is the acceptance rule's question, not this set's)
    zeros = [0.0, -0.0, *_TIES, fi.smallest_normal / 4, -fi.smallest_normal / 2, 1e-20, 1e-7]
    return [
        ("NaN and inf paired with zeros and finite values", _pairings([extremal] * len(dtypes), dtypes),
         "extremal"),
        ("signed zeros paired with ties, subnormals and tiny values", _pairings([zeros] * len(dtypes), dtypes),
         "normal"),
        ("ties and exact multiples", _ties(dtypes), "normal"),
        ("every magnitude, huge against tiny", _every_magnitude(dtypes), "large"),
    ]


def _ties(dtypes: Sequence[torch.dtype]) -> list[torch.Tensor]:
    """x.5 and integers with their one-ulp neighbours (operand 0), a = k*b and a = (k + 1/2)*b."""
    dtype = dtypes[0].to_real()
    centres = torch.tensor([k / 2 for k in range(-17, 18)], dtype=torch.float64).to(dtype)
    up = torch.nextafter(centres, torch.full_like(centres, math.inf))
    down = torch.nextafter(centres, torch.full_like(centres, -math.inf))
    first = torch.cat([centres, up, down]).double()
    if len(dtypes) == 1:
        return [first.to(dtypes[0])]
    rows: list[list[float]] = [[] for _ in dtypes]
    for b in _DIVISORS:
        b_d = float(torch.tensor(b, dtype=torch.float64).to(dtype))  # the divisor as the dtype holds it
        for k in _MULTIPLIERS:
            for a in (k * b_d, (k + 0.5) * b_d):
                rows[0].append(a)
                rows[1].append(b_d)
                for j in range(2, len(dtypes)):
                    rows[j].append(_TIES[(k + j) % len(_TIES)])
    # operand 0 alone at the ties too, the others at 1 (the exact quotient is then the tie itself)
    for v in first.tolist():
        rows[0].append(v)
        for j in range(1, len(dtypes)):
            rows[j].append(1.0)
    return [_tensor(r, d) for r, d in zip(rows, dtypes)]


def _tensor(values: list[float], dtype: torch.dtype) -> torch.Tensor:
    return as_dtype(torch.tensor(values, dtype=torch.float64), None, dtype)


def _every_magnitude(dtypes: Sequence[torch.dtype]) -> list[torch.Tensor]:
    """Powers of two across the exponent range of every operand's dtype (both signs), paired in both
    orders so each operand meets huge and tiny partners."""
    fi = torch.finfo(dtypes[0].to_real())
    low, high = math.floor(math.log2(fi.smallest_normal)), math.floor(math.log2(fi.max))
    step = max(1, (high - low) // 24)
    mags = [2.0 ** e for e in range(low, high + 1, step)] + [fi.max]
    signed = [m * s for m in mags for s in (1.0, -1.0)]
    per = [signed, list(reversed(signed)), signed[1::2] + signed[::2]]
    cols = [signed + signed, signed + per[1]] if len(dtypes) == 2 else [per[k % 3] for k in range(len(dtypes))]
    return [_tensor(c, d) for c, d in zip(cols, dtypes)]


def _integer_sets(dtypes: Sequence[torch.dtype]) -> list[SpecialSet]:
    """Signed and unsigned integers: exact multiples a = k*b (floor/trunc division and remainder
    signs), zero and the extremes paired across operands."""
    if len(dtypes) == 1 or any(d == torch.bool or d.is_floating_point or d.is_complex for d in dtypes):
        return []
    signed = all(torch.iinfo(d).min < 0 for d in dtypes)
    divisors = (1, 2, 3, 7, -1, -2, -3, -7) if signed else (1, 2, 3, 7)
    multipliers = range(-4, 5) if signed else range(0, 5)
    rows: list[list[int]] = [[] for _ in dtypes]
    info = torch.iinfo(dtypes[0])
    for b in divisors:
        for k in multipliers:
            for a in (k * b, k * b + 1, k * b - 1):
                if not info.min <= a <= info.max:
                    continue
                rows[0].append(a)
                rows[1].append(b)
                for j in range(2, len(dtypes)):
                    rows[j].append(divisors[(k + j) % len(divisors)])
    return [("exact multiples", [torch.tensor(r, dtype=d) for r, d in zip(rows, dtypes)], "normal")]


def special_rows(dtype: torch.dtype, gen: torch.Generator, length: int = 37) -> torch.Tensor:
    """Slices each holding one kind of special value among normal draws (Note [special values in
    spec cases]): signed zeros only, one NaN, +inf, +inf with -inf, a repeated tie, subnormals, huge
    values whose sum overflows, -0 with +0 and negatives, and one salted at random."""
    real = dtype.to_real()
    fi = torch.finfo(real)
    rows = torch.randn((9, length), generator=gen, dtype=torch.float64)
    rows[0] = torch.tensor([0.0, -0.0] * length, dtype=torch.float64)[:length]
    rows[1, length // 2] = math.nan
    rows[2, 3] = math.inf
    rows[3, 1], rows[3, length - 2] = math.inf, -math.inf
    rows[4] = torch.tensor([2.5, -1.5, 2.5, 0.5] * length, dtype=torch.float64)[:length]
    rows[5] = fi.smallest_normal / 4 * torch.sign(rows[5])
    rows[6] = fi.max / 4
    rows[7] = torch.tensor([-0.0, 0.0, -3.0] * length, dtype=torch.float64)[:length]
    out = rows.to(real)
    out[8] = salt_specials(out[8], gen)
    return out if not dtype.is_complex else torch.complex(out.float(), out.flip(1).float()).to(dtype)


def salt_specials(t: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """`t` (floating or complex) with about a tenth of its elements replaced by special values
    (Note [special values in spec cases]); other dtypes unchanged."""
    if not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
        return t
    fi = torch.finfo(t.dtype.to_real())
    # no NaN here: `special_rows` gives NaN slices of its own (Note [special values in spec cases])
    values = torch.tensor([0.0, -0.0, math.inf, -math.inf, 0.5, -2.5, 1.0, 1.0,
                           fi.smallest_normal / 4, fi.max / 2, -fi.max / 2], dtype=torch.float64)
    flat = t.detach().clone().reshape(-1)
    mask = torch.rand(flat.shape, generator=gen) < _SALT
    picks = values[torch.randint(0, len(values), flat.shape, generator=gen)]
    if t.is_complex():
        picks = torch.complex(picks, picks.flip(0) if picks.dim() else picks)
    out = t.clone()  # keeps the layout (a transposed input stays transposed)
    out.copy_(torch.where(mask, picks.to(t.dtype), flat).reshape(t.shape))
    return out


__all__ = ["SpecialSet", "salt_specials", "special_rows", "special_sets"]
