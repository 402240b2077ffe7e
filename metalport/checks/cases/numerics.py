"""What OpInfo knows about an op's numerics: its domain, filter, value sets and accepted divergences.

Random and held-out conformance inputs come from here rather than from a home-made grid: values
are drawn inside the op's `domain` (never its `reference_numerics_filter`, which is about NumPy) (or a binary op's
`lhs/rhs_make_tensor_kwargs`), and the small / large / extremal value sets are the ones
test_unary_ufuncs and test_binary_ufuncs use. `accepted()` names the OpInfo decorator that skips or
xfails a value set's reference-numerics test on a CUDA or MPS device (Note [accepted divergences]).

Note [accepted divergences]
A value set is out of scope only where the op's OpInfo skips or xfails its reference-numerics test
on a non-CPU device at that dtype, or declares the op does not handle it
(`handles_complex_extremal_values=False`, `handles_large_floats=False`: the test leaves those
values out on every device): PyTorch does not judge a device there. A skip on CPU or on every device
is not one: it says NumPy's reference differs from torch's own definition (sign(NaN) is 0 in torch,
NaN in NumPy), which a port must still meet. (Counting those as out of scope was tried in the
calibration of #30 and let a sign kernel passing NaN through escape.) Such a case, when the
oracle finds it wrong, is counted as out of scope and shown with the decorator; it is neither a pass
nor a failure. Nothing else is excused (no rule keyed to an op's name, no NumPy filter used as a
domain): every other case, held-out ones included, must meet Note [the oracle].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

# The reference-numerics test of each value kind, as the unary and binary ufunc suites name it.
_TESTS: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "normal": (("TestUnaryUfuncs", "test_reference_numerics_normal"),
               ("TestBinaryUfuncsDevice", "test_reference_numerics")),
    "small": (("TestUnaryUfuncs", "test_reference_numerics_small"),
              ("TestBinaryUfuncsDevice", "test_reference_numerics_small_values")),
    "large": (("TestUnaryUfuncs", "test_reference_numerics_large"),
              ("TestBinaryUfuncsDevice", "test_reference_numerics_large_values")),
    "extremal": (("TestUnaryUfuncs", "test_reference_numerics_extremal"),
                 ("TestBinaryUfuncsDevice", "test_reference_numerics_extremal_values")),
}
_NON_CPU = ("cuda", "mps")
_DOMAIN_EPS = 1e-5
_MAX_SET = 4096  # complex value sets are 65,536 pairs; an even subsample keeps every value


@dataclass(frozen=True)
class Numerics:
    """An op's reference-numerics knowledge, from its OpInfo (or the neutral defaults without one)."""

    name: str
    unary: bool
    domain: tuple[float | None, float | None] = (None, None)
    filter: tuple[Callable[[torch.Tensor], torch.Tensor], Any] | None = None
    operand_kwargs: tuple[dict[str, Any], ...] = ()
    handles_large_floats: bool = True
    handles_complex_extremal_values: bool = True
    decorators: tuple[Any, ...] = field(default=(), repr=False)
    info: Any = field(default=None, repr=False)

    def accepted(self, kind: str, dtype: torch.dtype) -> str | None:
        """The OpInfo skip/xfail of `kind`'s reference-numerics test on a non-CPU device at `dtype`
        (the case is then out of scope: counted and shown, never a pass), or None when it gates."""
        cls_name, test_name = _TESTS[kind][0 if self.unary else 1]
        # the op's own declaration: its reference-numerics tests leave these values out on every device
        if kind == "extremal" and dtype.is_complex and not self.handles_complex_extremal_values:
            return (f"OpInfo {self.name} declares handles_complex_extremal_values=False ({test_name} leaves "
                    f"complex extremal values out on every device)")
        if kind == "large" and (dtype.is_floating_point or dtype.is_complex) and not self.handles_large_floats:
            return (f"OpInfo {self.name} declares handles_large_floats=False ({test_name} leaves large "
                    f"{_short(dtype)} values out on every device)")
        for device in _NON_CPU:
            for d in self.decorators:
                # only a device's own skip: one on every device (or on CPU) is about NumPy's reference,
                # such as sign(NaN), which a port must still meet (Note [accepted divergences])
                if d.device_type == device and _is_skip(d) and d.is_active(cls_name, test_name, device, dtype, {}):
                    return f"OpInfo {self.name} skips or xfails {test_name} on {device} for {_short(dtype)}"
        return None

    def bounds(self, operand: int, dtype: torch.dtype) -> tuple[float | None, float | None]:
        """The [low, high] random values of `operand` are drawn from (a unary domain shrunk by OpInfo's
        eps; integers for an integer dtype)."""
        kwargs = self._make_kwargs(operand)
        low, high = self.domain if self.unary else (kwargs.get("low"), kwargs.get("high"))
        if not (dtype.is_floating_point or dtype.is_complex):
            return None if low is None else math.ceil(low), None if high is None else math.floor(high)
        if self.unary:
            low = None if low is None else low + _DOMAIN_EPS
            high = None if high is None else high - _DOMAIN_EPS
        return low, high

    def _make_kwargs(self, operand: int) -> dict[str, Any]:
        """OpInfo's make_tensor kwargs for `operand` (a binary ufunc's lhs/rhs ones), {} without."""
        return self.operand_kwargs[operand] if operand < len(self.operand_kwargs) else {}

    def restrict(self, t: torch.Tensor, operand: int) -> torch.Tensor:
        """`t` with OpInfo's filter applied and values clamped into the operand's domain (a copy)."""
        if t.dtype == torch.complex32:  # few CPU kernels take complex32
            return self.restrict(t.to(torch.complex64), operand).to(torch.complex32)
        t = t.clone()
        if t.dtype == torch.bool:
            return t
        # OpInfo's reference_numerics_filter says where NumPy's reference is weak, not the op's domain:
        # the float64 truth judges those values (Note [the oracle]), so it is not applied.
        low, high = self.bounds(operand, t.dtype)
        if t.dtype == torch.uint8 and low is not None:
            low = max(low, 0)
        if low is not None or high is not None:
            if t.is_complex():
                t.real.clamp_(low, high)
                t.imag.clamp_(low, high)
            else:
                t.clamp_(min=low, max=high)
        if self._make_kwargs(operand).get("exclude_zero"):  # a divisor, say
            t.masked_fill_(t == 0, 1)
        return t


def _is_skip(decorator_info: Any) -> bool:
    """A DecorateInfo that skips or xfails (tolerance and precision overrides do not)."""
    from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride

    return not all(isinstance(d, (precisionOverride, toleranceOverride)) for d in decorator_info.decorators)


def _short(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def as_dtype(real: torch.Tensor, imag: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor:
    """`real` at `dtype`; for a complex dtype, with imaginary parts `imag` (zeros without)."""
    if dtype.is_complex:
        return torch.complex(real.double(), (imag if imag is not None else torch.zeros_like(real)).double()
                             ).to(dtype)
    return real.to(dtype)


def numerics_for(base: str, info: Any | None, arity: int) -> Numerics:
    """The op's Numerics from its OpInfo (`find_opinfo`); neutral defaults when it has none."""
    if info is None:
        return Numerics(base, arity == 1)
    from torch.testing._internal.common_methods_invocations import BinaryUfuncInfo, UnaryUfuncInfo

    decorators = tuple(d for d in info.decorators if hasattr(d, "is_active"))
    if isinstance(info, UnaryUfuncInfo):
        return Numerics(info.name, True, tuple(info.domain), info.reference_numerics_filter, (),
                        info.handles_large_floats, info.handles_complex_extremal_values, decorators, info)
    kwargs = (dict(info.lhs_make_tensor_kwargs), dict(info.rhs_make_tensor_kwargs)) \
        if isinstance(info, BinaryUfuncInfo) else ()
    return Numerics(info.name, arity == 1, operand_kwargs=kwargs, decorators=decorators, info=info)


def tolerance_overrides(info: Any | None, dtype: torch.dtype) -> tuple[float, float]:
    """(atol, rtol) floors OpInfo sets for test_output_match on MPS at `dtype` (0 when none)."""
    if info is None:
        return 0.0, 0.0
    from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride

    atol = rtol = 0.0
    for d in info.decorators:
        inner = (d,) if not hasattr(d, "is_active") else (
            d.decorators if d.is_active("TestConsistency", "test_output_match", "mps", dtype, {}) else ())
        for dec in inner:
            if isinstance(dec, precisionOverride) and dtype in dec.d:
                atol = max(atol, float(dec.d[dtype]))
            elif isinstance(dec, toleranceOverride) and dtype in dec.d:
                atol, rtol = max(atol, float(dec.d[dtype].atol)), max(rtol, float(dec.d[dtype].rtol))
    return atol, rtol


# Value sets ---------------------------------------------------------------------------------

def value_sets(kind: str, dtype: torch.dtype, numerics: Numerics, gen: torch.Generator) -> list[list[list[Any]]]:
    """Every sample of OpInfo's `kind` value generator for `dtype` as (lhs, rhs) lists (the extremal
    generator's second, NaN-propagation sample included); [] when the set has none. The random parts
    OpInfo draws come from `gen` (through a forked global generator), so a seed repeats them."""
    from torch.testing._internal.opinfo import core

    generators = {"small": core.generate_elementwise_binary_small_value_tensors,
                  "large": core.generate_elementwise_binary_large_value_tensors,
                  "extremal": core.generate_elementwise_binary_extremal_value_tensors}
    op = numerics.info if hasattr(numerics.info, "sample_kwargs") else _NoKwargs()
    out = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2 ** 31, (1,), generator=gen)))
        try:
            for sample in generators[kind](op, device="cpu", dtype=dtype):
                lhs, rhs = sample.input.reshape(-1), sample.args[0].reshape(-1)
                step = max(1, lhs.numel() // _MAX_SET)
                out.append([lhs[::step].tolist(), rhs[::step].tolist()])
        except ValueError:
            pass
    return out


class _NoKwargs:
    """Stands in for an OpInfo without `sample_kwargs` when calling OpInfo's generators."""

    lhs_make_tensor_kwargs: dict[str, Any] = {}
    rhs_make_tensor_kwargs: dict[str, Any] = {}

    @staticmethod
    def sample_kwargs(device: str, dtype: torch.dtype, t: torch.Tensor) -> tuple[dict, dict]:
        return {}, {}


def tiny_range(dtype: torch.dtype) -> tuple[float, float]:
    """The magnitudes judged small for `dtype` (Note [small magnitudes] in `cases`).

    Below 1e-6 a float32 kernel must use its small-argument formula (upstream switches at 1e-5 or
    earlier). The floor keeps a product of two such values a normal number, since kernels square
    their inputs (hypot) and Metal flushes float32 subnormals. float16 has no normal numbers that
    small and computes in float anyway: its range is what it has."""
    smallest = torch.finfo(dtype.to_real()).smallest_normal
    if dtype.to_real() == torch.float16:
        return 4 * smallest, 1e-3
    return 16 * math.sqrt(smallest), 1e-6


def tiny_values(dtype: torch.dtype) -> list[float]:
    """Fixed small magnitudes (normal numbers, both signs) across `tiny_range`: where a cancellation shows."""
    if not dtype.is_floating_point:
        return []
    low, high = tiny_range(dtype)
    mags = [high * 10.0 ** -k for k in (0, 0.5, 1, 2, 3, 5, 8, 11, 14, 20, 24)]
    return [s * m for m in mags if m >= low for s in (1.0, -1.0)]


def beyond_values(dtype: torch.dtype) -> list[Any]:
    """Values no reference-numerics set holds: subnormals, the largest finite, integer extremes."""
    if dtype == torch.bool:
        return [False, True]
    if dtype.is_floating_point or dtype.is_complex:
        fi = torch.finfo(dtype.to_real())
        vals = [fi.smallest_normal / 4, -fi.smallest_normal / 4, fi.smallest_normal, fi.max, -fi.max, 0.0, -0.0]
        if dtype.is_complex:
            return [complex(v, w) for v in vals[:5] for w in (0.0, -1.0, math.inf)]
        return vals
    info = torch.iinfo(dtype)
    vals = {info.min, info.min + 1, info.max, info.max - 1, 0, 1}
    if info.min < 0:
        vals |= {-1}
    return sorted(vals)


def grid(values: Sequence[Sequence[Any]], dtypes: Sequence[torch.dtype]) -> list[torch.Tensor]:
    """Operands covering every combination of the per-operand `values`."""
    sizes = [len(v) for v in values]
    total = math.prod(sizes)
    out, step = [], 1
    for vals, dt, n in zip(values, dtypes, sizes):
        idx = (torch.arange(total) // step) % n
        out.append(torch.tensor(list(vals), dtype=dt)[idx])
        step *= n
    return out


def draw(shape: Sequence[int], dtype: torch.dtype, gen: torch.Generator, numerics: Numerics | None = None,
         operand: int = 0, *, ties: bool = False) -> torch.Tensor:
    """Fresh random values of `dtype`, for every launch kind's cases (bools are fair coins).

    With the op's `numerics` (elementwise ops): in-domain values of `operand` like OpInfo's
    make_tensor (uniform in [low, high), default [-9, 9]). Without (the launch-spec kinds:
    reductions, windows, gathers, tensor lists): normal floats; complex numbers with normal real and
    imaginary parts (each of variance 1/2); integers in [-100, 100] (uint8 [0, 255]); with `ties`,
    few distinct values so counts tie: integers in [-3, 3] (uint8 [0, 3]) of any dtype, floats
    included, a complex number one such integer in each part."""
    shape = tuple(shape)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).to(torch.bool)
    if numerics is None:
        return _draw_unbounded(shape, dtype, gen, ties)
    low, high = numerics.bounds(operand, dtype)
    if dtype.is_complex:
        real = draw(shape, dtype.to_real(), gen, numerics, operand)
        imag = draw(shape, dtype.to_real(), gen, numerics, operand)
        return numerics.restrict(torch.complex(real.float(), imag.float()).to(dtype), operand)
    if dtype.is_floating_point:
        lo = -9.0 if low is None else max(low, -9.0) if high is None or high > -9.0 else low
        hi = 9.0 if high is None else min(high, 9.0) if low is None or low < 9.0 else high
        if hi <= lo:
            lo, hi = (low if low is not None else hi - 1.0), (high if high is not None else lo + 1.0)
        v = torch.empty(shape, dtype=torch.float64).uniform_(lo, hi, generator=gen)
        return numerics.restrict(v.to(dtype), operand)
    info = torch.iinfo(dtype)
    lo = max(info.min, -9 if low is None else math.ceil(low))
    hi = max(lo + 1, min(info.max, 10 if high is None else math.floor(high) + 1))
    return numerics.restrict(torch.randint(lo, hi, shape, generator=gen).to(dtype), operand)


def _draw_unbounded(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator, ties: bool) -> torch.Tensor:
    """`draw` without an op's numerics (see there)."""
    if ties or not (dtype.is_floating_point or dtype.is_complex):
        low, high = (-3, 4) if ties else (-100, 101)
        if dtype == torch.uint8:
            low, high = (0, 4) if ties else (0, 256)
        if dtype.is_complex:
            parts = torch.randint(low, high, (*shape, 2), generator=gen).float()
            return torch.view_as_complex(parts).to(dtype)
        return torch.randint(low, high, shape, generator=gen).to(dtype)
    if dtype.is_complex:
        return torch.randn(shape, generator=gen, dtype=torch.complex64).to(dtype)
    return torch.randn(shape, generator=gen).to(dtype)


def draw_small(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator, numerics: Numerics,
               operand: int) -> torch.Tensor:
    """Random magnitudes log-uniform across `tiny_range`, with signs the operand's domain allows."""
    low_mag, high_mag = tiny_range(dtype)
    exps = torch.empty(shape, dtype=torch.float64).uniform_(math.log10(low_mag), math.log10(high_mag), generator=gen)
    mags = torch.pow(10.0, exps)
    low, _ = numerics.bounds(operand, dtype.to_real())
    if low is None or low < 0:
        mags = mags * torch.where(torch.rand(shape, generator=gen) < 0.5, -1.0, 1.0).double()
    return numerics.restrict(as_dtype(mags, mags.flip(-1) if mags.dim() else mags, dtype), operand)


__all__ = ["Numerics", "as_dtype", "beyond_values", "draw", "draw_small", "grid", "numerics_for",
           "tiny_range", "tiny_values", "tolerance_overrides", "value_sets"]
