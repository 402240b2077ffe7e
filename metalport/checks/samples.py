"""Inputs for conformance: the op's OpInfo samples, fresh random draws, and held-out edge cases.

Samples are taken at the ATen level: each OpInfo sample runs on CPU under a dispatch mode that
records calls to the target op, so a Python-level alias or composite still yields the exact
overload, arguments and CPU result the MPS host would see. Each recorded call is bound to the
kernel family's operands (iterator inputs) and alpha scalar; calls with arguments the family
does not model are counted, not guessed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from metalport.checks.hostmodel import UnmodelledCall


class Family(Enum):
    """The exec_*_kernel convention a kernel file's registrations follow."""

    UNARY = "unary"
    UNARY_ALPHA = "unary-alpha"
    BINARY = "binary"
    BINARY_ALPHA = "binary-alpha"
    TERNARY = "ternary"

    @property
    def arity(self) -> int:
        return {"unary": 1, "unary-alpha": 1, "binary": 2, "binary-alpha": 2, "ternary": 3}[self.value]

    @property
    def has_alpha(self) -> bool:
        return self in (Family.UNARY_ALPHA, Family.BINARY_ALPHA)


@dataclass(frozen=True)
class Call:
    """One call of the op: the overload, its arguments and which of them are iterator operands."""

    func: Any  # torch._ops.OpOverload
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    slots: tuple[int | str, ...]  # positional index or keyword name of each operand, in order
    alpha: int | float | bool | None

    def operands(self) -> tuple[torch.Tensor, ...]:
        """The operands as the host sees them; Python numbers become 0-dim CPU scalars."""
        return tuple(_as_tensor(self._get(s)) for s in self.slots)

    def _get(self, slot: int | str) -> Any:
        return self.args[slot] if isinstance(slot, int) else self.kwargs[slot]

    def with_operands(self, values: Sequence[Any]) -> Call:
        """The same call with its operands replaced."""
        args, kwargs = list(self.args), dict(self.kwargs)
        for slot, v in zip(self.slots, values):
            if isinstance(slot, int):
                args[slot] = v
            else:
                kwargs[slot] = v
        return Call(self.func, tuple(args), kwargs, self.slots, self.alpha)

    def run(self) -> torch.Tensor:
        """The CPU reference result."""
        return self.func(*self.args, **self.kwargs)

    def describe(self) -> str:
        """`atan2(float32[5, 1], 2.5)`: the overload and operand dtypes/shapes, no values."""
        parts = []
        for s in self.slots:
            v = self._get(s)
            parts.append(f"{str(v.dtype).removeprefix('torch.')}{list(v.shape)}" if isinstance(v, torch.Tensor)
                         else type(v).__name__)
        alpha = "" if self.alpha is None else f", alpha={self.alpha!r}"
        return f"{self.func.name().removeprefix('aten::')}({', '.join(parts)}{alpha})"


def _as_tensor(v: Any) -> torch.Tensor:
    if isinstance(v, torch.Tensor):
        return v
    if isinstance(v, bool):
        return torch.tensor(v, dtype=torch.bool)
    if isinstance(v, int):
        return torch.tensor(v, dtype=torch.int64)
    if isinstance(v, float):
        return torch.tensor(v, dtype=torch.float64)
    if isinstance(v, complex):
        return torch.tensor(v, dtype=torch.complex128)
    raise UnmodelledCall(f"operand of type {type(v).__name__}")


def bind(func: Any, args: Sequence[Any], kwargs: dict[str, Any], family: Family) -> Call:
    """Map one recorded call onto `family`'s operands and alpha; UnmodelledCall if it does not fit."""
    values: dict[str, Any] = {}
    schema = func._schema.arguments
    for i, a in enumerate(schema):
        if i < len(args) and not a.kwarg_only:
            values[a.name] = (i, args[i])
        elif a.name in kwargs:
            values[a.name] = (a.name, kwargs[a.name])
    operands: list[int | str] = []
    alpha: Any = None
    for a in schema:
        kind = str(a.type)
        present = a.name in values
        if kind == "Tensor" or (kind == "number" and len(operands) < family.arity and not a.kwarg_only
                                and not (family.has_alpha and len(operands) == family.arity)):
            if not present:
                raise UnmodelledCall(f"{func.name()} without its {a.name} operand")
            operands.append(values[a.name][0])
        elif kind == "number" and family.has_alpha and alpha is None:
            alpha = values[a.name][1] if present else a.default_value
        elif present and not (a.has_default_value() and values[a.name][1] == a.default_value):
            raise UnmodelledCall(f"{func.name()} argument {a.name}: {kind}")
        if kind.startswith("Tensor") and kind != "Tensor" and present and values[a.name][1] is not None:
            raise UnmodelledCall(f"{func.name()} argument {a.name}: {kind}")
    if len(operands) != family.arity:
        raise UnmodelledCall(f"{func.name()} has {len(operands)} operands, a {family.value} kernel takes "
                             f"{family.arity}")
    if family.has_alpha and alpha is None:
        raise UnmodelledCall(f"{func.name()} has no scalar for the alpha argument")
    if isinstance(alpha, torch.Tensor):
        raise UnmodelledCall(f"{func.name()} passes a tensor as its alpha")
    return Call(func, tuple(args), dict(kwargs), tuple(operands), alpha)


class _Recorder(TorchDispatchMode):
    def __init__(self, packet: Any) -> None:
        super().__init__()
        self.packet = packet
        self.calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func.overloadpacket is self.packet and not func._schema.is_mutable:
            self.calls.append((func, tuple(args), dict(kwargs)))
        return func(*args, **kwargs)


def find_opinfo(base: str) -> Any | None:
    """The OpInfo (no variant) whose name or aten name is `base`, else None."""
    from torch.testing._internal.common_methods_invocations import op_db

    exact = [o for o in op_db if not o.variant_test_name and (o.name == base or o.name.replace(".", "_") == base)]
    if exact:
        return exact[0]
    return next((o for o in op_db if not o.variant_test_name and o.aten_name == base), None)


def opinfo_calls(info: Any, packet: Any, dtype: torch.dtype) -> list[tuple[Any, tuple, dict]]:
    """Every call of `packet` made by `info`'s CPU samples at `dtype` (functional overloads only)."""
    if dtype not in info.supported_dtypes("cpu"):
        return []
    rec = _Recorder(packet)
    samples = list(info.sample_inputs("cpu", dtype))
    with rec:
        for s in samples:
            try:
                info.op(s.input, *s.args, **s.kwargs)
            except (RuntimeError, ValueError, TypeError):
                continue
    return rec.calls


# Random values -----------------------------------------------------------------------------

def random_like(t: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Fresh values with `t`'s dtype, shape and strides (views keep their layout)."""
    base = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype) if t.numel() else t.clone()
    if t.numel() == 0:
        return base
    return base.copy_(random_tensor(tuple(t.shape), t.dtype, gen))


def random_tensor(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """Values spread over several magnitudes (floats) or a moderate range (integers)."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).to(torch.bool)
    if dtype.is_complex:
        real, imag = random_tensor(shape, torch.float32, gen), random_tensor(shape, torch.float32, gen)
        return torch.complex(real, imag).to(dtype)
    if dtype.is_floating_point:
        scale = torch.pow(10.0, torch.empty(shape).uniform_(-2, 2, generator=gen))
        v = torch.randn(shape, generator=gen) * scale
        limit = 6e4 if dtype == torch.float16 else 1e30
        return v.clamp(-limit, limit).to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -100), min(info.max, 100)
    return torch.randint(lo, hi + 1, shape, generator=gen).to(dtype)


# Held-out edge cases -----------------------------------------------------------------------

def special_values(dtype: torch.dtype) -> list[Any]:
    """±0, ±inf, NaN, subnormals and extremes for floats; extremes for integers; both bools."""
    if dtype == torch.bool:
        return [False, True]
    if dtype.is_floating_point or dtype.is_complex:
        real = torch.float32 if dtype.is_complex else dtype
        fi = torch.finfo(real)
        sub = fi.smallest_normal / 4
        vals = [0.0, -0.0, math.inf, -math.inf, math.nan, sub, -sub, fi.smallest_normal, fi.max, -fi.max,
                1.0, -1.0, 0.5, -2.5, 3.0]
        if dtype.is_complex:
            return [complex(v, w) for v in vals[:8] for w in (0.0, -1.0, math.nan)]
        return vals
    info = torch.iinfo(dtype)
    vals = {info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 7}
    if info.min < 0:
        vals |= {-1, -2, -7}
    return sorted(vals)


def _grid(values: list[list[Any]], dtypes: Sequence[torch.dtype]) -> list[torch.Tensor]:
    """Operands covering every combination of the per-operand `values`."""
    sizes = [len(v) for v in values]
    total = math.prod(sizes)
    out, step = [], 1
    for vals, dt, n in zip(values, dtypes, sizes):
        idx = (torch.arange(total) // step) % n
        out.append(torch.tensor(vals, dtype=dt)[idx])
        step *= n
    return out


def held_out_operands(dtypes: Sequence[torch.dtype], gen: torch.Generator
                      ) -> Iterator[tuple[str, list[Any], str | None]]:
    """(label, operands, forced dense flavour) for each held-out case; one operand per dtype."""
    specials = [special_values(dt) for dt in dtypes]
    if len(dtypes) == 3:
        specials = [v[:11] for v in specials]
    n = len(dtypes)

    def each(shape: Any) -> list[torch.Tensor]:
        return [random_tensor(shape(k) if callable(shape) else shape, dt, gen) for k, dt in enumerate(dtypes)]

    yield "special values", _grid(specials, dtypes), None
    yield "special values, ILP kernel", _grid(specials, dtypes), "ilp"
    yield "empty", each((0,)), None
    yield "empty 2-d", each((2, 0, 3)), None
    yield "0-dim", each(()), None
    if n > 1:
        yield "0-dim and 1-d", each(lambda k: () if k else (5,)), None
        yield "0-dim first", each(lambda k: (5,) if k else ()), None
    yield "transposed", [t.t() if k == 0 else t.t().contiguous() for k, t in enumerate(each((7, 5)))], None
    yield "step-2 slice", [t[:, ::2] for t in each((6, 10))], None
    yield "storage offset", [t[1:, 2:] for t in each((4, 9))], None
    yield "expanded view", [t.expand(3, 5, 4) for t in each((3, 1, 4))], None
    if n > 1:
        shapes = [(5, 1), (1, 6), (5, 6)]
        yield "broadcast", each(lambda k: shapes[k % 3]), None
        yield "broadcast rows", each(lambda k: (6,) if k else (4, 6)), None
        yield "broadcast lhs", each(lambda k: (6,) if k == 0 else (4, 6)), None
    yield "threadgroup boundary 1025", each((1025,)), None
    yield "threadgroup boundary 2049, ILP kernel", each((2049,)), "ilp"
    yield "strided 40x33", [t[:, :33] for t in each((40, 34))], None


def random_operands(template: Sequence[torch.Tensor], gen: torch.Generator, count: int
                    ) -> Iterator[tuple[str, list[torch.Tensor], str | None]]:
    """`count` fresh draws: the template's shapes with new values, then new random sizes."""
    dtypes = [t.dtype for t in template]
    for k in range(count):
        if k % 2 == 0:
            ops = [random_like(t, gen) for t in template]
        else:
            n = int(torch.randint(1, 3000, (1,), generator=gen))
            ops = [random_tensor((n,), dt, gen) for dt in dtypes]
        yield f"random {k}", ops, ("ilp" if k % 4 == 1 else None)


def schema_template(func: Any, family: Family, dtype: torch.dtype, gen: torch.Generator) -> Call | None:
    """A call built from the schema alone (for ops without an OpInfo): random tensor operands."""
    args: list[Any] = []
    for a in func._schema.arguments:
        if a.kwarg_only:
            break
        if str(a.type) == "Tensor":
            args.append(random_tensor((4, 5), dtype, gen))
        elif a.has_default_value():
            break
        elif str(a.type) == "number":
            args.append(0.5 if dtype.is_floating_point else 2)
        else:
            return None
    try:
        return bind(func, args, {}, family)
    except UnmodelledCall:
        return None


CallFactory = Callable[[], Call]
