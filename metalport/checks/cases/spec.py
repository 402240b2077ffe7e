"""The cases of a launch spec (reduction, window, scan, tensor-list kinds; `SpecCases`, drawn by the
one driver `case.build_cases`): OpInfo samples, the spec's own `cases`, random draws and held-out
slices, as `case.Case`s whose Calls have no operand slots. Values come from `numerics.draw` and,
for floating inputs, `specials.salt_specials` (Note [special values in spec cases]): reductions see
zeros of both signs, infinities, NaN and ties.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import torch

from metalport.checks.cases.case import Case
from metalport.checks.cases.numerics import draw
from metalport.checks.cases.samples import Call, opinfo_calls
from metalport.checks.cases.specials import salt_specials, special_rows
from metalport.checks.host.spec import INDEX_LIMIT
from metalport.errors import SpecError, UsageError
from metalport.port import METAL_DTYPES, LaunchSpec


_SHAPES = ((), (1,), (6,), (3, 7), (4, 1, 5), (2, 3, 4), (5, 0), (2, 3, 1, 2))
_HELD_OUT_LENGTHS = (1023, 1024, 1025, 2500)
_SPLIT_LIMIT = 4096  # the index limit held-out split cases use, so 32-bit chunking runs on small data
_TAIL = 4096


def _tensor(desc: Mapping[str, Any], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    shape = [int(s) for s in desc["shape"]]
    if desc.get("large"):
        t = torch.zeros(shape, dtype=dtype)
        flat = t.view(-1)
        n = min(_TAIL, flat.numel())
        flat[:n] = draw((n,), dtype, gen)
        flat[flat.numel() - n:] = draw((n,), dtype, gen)
        return t
    if "range" in desc:  # integers in [low, high) (ctc's labels), in the argument's dtype
        low, high = (int(v) for v in desc["range"])
        return torch.randint(low, high, tuple(shape), generator=gen).to(dtype)
    if desc.get("transposed") and len(shape) >= 2:
        return draw(shape[::-1], dtype, gen).permute(*reversed(range(len(shape))))
    t = draw(shape, dtype, gen)
    if desc.get("channels_last"):
        t = t.contiguous(memory_format=torch.channels_last_3d if t.dim() == 5 else torch.channels_last)
    return t


def _index(desc: Mapping[str, Any], made: Mapping[str, Any], gen: torch.Generator, where: str) -> torch.Tensor:
    target = made.get(desc["index_into"])
    if not isinstance(target, torch.Tensor):
        raise SpecError(f"{where}: index_into {desc['index_into']!r} names no tensor made before it")
    n, shape = target.numel(), tuple(int(s) for s in desc["shape"])
    if n == 0:
        return torch.zeros(shape, dtype=torch.int64)
    tail = int(desc.get("tail", 0))
    if tail:
        return torch.randint(max(0, n - tail), n, shape, generator=gen) - n * torch.randint(0, 2, shape, generator=gen)
    return torch.randint(-n, n, shape, generator=gen)


def _out_rules(spec: LaunchSpec, types: tuple[str, ...]) -> dict[str, str]:
    """The ScalarType argument of each `arg:` output dtype rule -> the row's Metal type for that output."""
    return {o.dtype.split(":")[1]: types[len(spec.inputs) + i]
            for i, o in enumerate(spec.outputs) if o.dtype.startswith("arg:")}


def explicit_calls(spec: LaunchSpec, func: Any, types: tuple[str, ...], kind: str, gen: torch.Generator, *,
                   include_large: bool) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """(label, args, kwargs) of every `cases.<kind>` entry ("random" or "held_out") for the row
    `types`; SpecError naming the entry when it does not fit the schema."""
    entries = spec.cases.get(kind, ()) or ()
    dtype = getattr(torch, METAL_DTYPES[types[0]])
    out_rules = _out_rules(spec, types)
    calls = []
    for n, entry in enumerate(entries):
        where = f"spec {spec.op}: cases.{kind}[{n}]"
        if not isinstance(entry, Mapping):
            raise SpecError(f"{where}: expected a mapping of argument values")
        if entry.get("only") and types[0] not in entry["only"]:
            continue
        if not include_large and any(isinstance(v, Mapping) and v.get("large") for v in entry.values()):
            continue
        made: dict[str, Any] = {}
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        unknown = sorted(set(entry) - {a.name for a in func._schema.arguments} - {"label", "only"})
        if unknown:
            raise SpecError(f"{where}: {func.name()} has no argument {unknown[0]!r}")
        for a in func._schema.arguments:
            desc = entry.get(a.name)
            if isinstance(desc, Mapping) and "index_into" in desc:
                value: Any = _index(desc, made, gen, where)
            elif isinstance(desc, Mapping) and "list" in desc:
                value = [draw([int(s) for s in shape], dtype, gen) for shape in desc["list"]]
            elif isinstance(desc, Mapping) and "shape" in desc:
                # An input of the spec is drawn in its own column's type; other tensors in the first's.
                column = next((i for i, x in enumerate(spec.inputs) if x.arg == a.name), 0)
                value = _tensor(desc, getattr(torch, METAL_DTYPES[types[column]]), gen)
            elif a.name in entry:
                value = float(desc) if isinstance(desc, str) else desc
            elif a.name in out_rules:
                value = getattr(torch, METAL_DTYPES[out_rules[a.name]])
            elif a.has_default_value():
                continue
            else:
                raise SpecError(f"{where}: no value for argument {a.name!r} of {func.name()}")
            made[a.name] = value
            if a.kwarg_only:
                kwargs[a.name] = value
            else:
                args.append(value)
        calls.append((str(entry.get("label", f"{kind.replace('_', '-')} case {n}")), tuple(args), kwargs))
    return calls


def spec_func(spec: LaunchSpec) -> Any:
    """The overload (`torch.ops.aten.<op>.<overload>`) the spec's host serves; UsageError for an unknown op."""
    packet = getattr(torch.ops.aten, spec.op, None)
    if packet is None:
        raise UsageError(f"unknown op aten::{spec.op}", hint="check the spec's op")
    return getattr(packet, spec.overload or "default")


def _dims_value(spec: LaunchSpec, func: Any, ndim: int, gen: torch.Generator) -> Any:
    """A random value for the reduced-dims argument: an int, or a list for int[] arguments."""
    kind = next(str(a.type) for a in func._schema.arguments if a.name == spec.reduce.dim)
    wrap = max(ndim, 1)
    if kind.startswith("int") and "[" not in kind and "List" not in kind:
        return int(torch.randint(-wrap, wrap, (1,), generator=gen))
    choice = int(torch.randint(0, 3, (1,), generator=gen))
    if choice == 0 or ndim == 0:
        return None if "Optional" in kind or "?" in kind else []
    count = 1 + int(torch.randint(0, ndim, (1,), generator=gen))
    return sorted(torch.randperm(ndim, generator=gen)[:count].tolist())


def _call(spec: LaunchSpec, func: Any, x: torch.Tensor, types: tuple[str, ...], gen: torch.Generator,
          k: int, *, dims: Any = "random", keepdim: bool | None = None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Arguments for one call: the input, reduced dims, keepdim, the spec's scalar choices, and the
    dtype argument when the instantiation's output differs from the input."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    scalars = dict(spec.cases.get("scalars", {}) or {})
    out_rules = _out_rules(spec, types)
    for a in func._schema.arguments:
        if a.name == spec.inputs[0].arg:
            value: Any = x
        elif a.name == spec.reduce.dim:
            value = _dims_value(spec, func, x.dim(), gen) if dims == "random" else dims
        elif a.name == spec.reduce.keepdim:
            value = bool(k % 2) if keepdim is None else keepdim
        elif a.name in scalars:
            options = scalars[a.name]
            value = options[k % len(options)]
            value = float(value) if isinstance(value, str) else value
        elif a.name in out_rules:
            want = getattr(torch, METAL_DTYPES[out_rules[a.name]])
            value = want if want != x.dtype else None
        elif a.has_default_value():
            continue
        else:
            raise UsageError(f"spec {spec.op}: conformance cannot make a value for argument {a.name!r}",
                             hint="give it in the spec's cases.scalars")
        if a.kwarg_only:
            if value is not None:
                kwargs[a.name] = value
        else:
            args.append(value)
    return tuple(args), kwargs


class SpecCases:
    """The `CaseSource` of a launch spec's instantiation `types`, and its one template: the OpInfo
    samples of the overload the host serves, then random and held-out calls.

    A spec's own `cases.random` replace the drawn reductions; its `cases.held_out` are added to the
    reduction held-out cases, or replace them for a spec that reduces nothing (`explicit_calls`).
    `include_large`: the entries marked `large` (gigabytes past 32-bit indexing) too."""

    def __init__(self, spec: LaunchSpec, types: tuple[str, ...], gen: torch.Generator,
                 include_large: bool = True) -> None:
        self.spec, self.types, self.gen, self.include_large = spec, types, gen, include_large
        self.func = spec_func(spec)
        self.dtype = getattr(torch, METAL_DTYPES[types[0]])
        self.ties = bool(spec.cases.get("ties"))

    def _case(self, kind: str, label: str, args: Any, kwargs: dict[str, Any], limit: int = INDEX_LIMIT) -> Case:
        return Case(label, Call(self.func, tuple(args), dict(kwargs), (), None), kind, index_limit=limit)

    def recorded(self) -> tuple[list[Case], list[str]]:
        if not self.spec.opinfo:
            return [], []
        cases, left_out = [], []
        for n, (f, args, kwargs) in enumerate(opinfo_calls(spec_opinfo(self.spec), self.func.overloadpacket,
                                                            self.dtype)):
            if f is not self.func:
                left_out.append(f"OpInfo sample {n} calls {f}, another overload than the host's {self.func}")
                continue
            cases.append(self._case("opinfo", f"OpInfo sample {n}", args, kwargs))
        return cases, left_out

    def templates(self) -> list[SpecCases]:
        return [self]

    def random(self) -> list[Case]:
        spec, func, gen = self.spec, self.func, self.gen
        cases = [self._case("random", label, args, kwargs) for label, args, kwargs in
                 explicit_calls(spec, func, self.types, "random", gen, include_large=self.include_large)]
        for k, shape in enumerate(() if spec.cases.get("random") else _SHAPES * 2):
            x = draw(shape, self.dtype, gen, ties=self.ties and k % 2 == 0)
            salted = k % 4 == 3 and (x.is_floating_point() or x.is_complex()) and x.numel() > 0
            args, kwargs = _call(spec, func, salt_specials(x, gen) if salted else x, self.types, gen, k)
            cases.append(self._case("random", f"random case {k}" + (", special values" if salted else ""),
                                    args, kwargs))
        return cases

    def held_out(self) -> list[Case]:
        spec, func, gen, dtype, ties = self.spec, self.func, self.gen, self.dtype, self.ties
        cases = [self._case("held-out", label, args, kwargs) for label, args, kwargs in
                 explicit_calls(spec, func, self.types, "held_out", gen, include_large=self.include_large)]
        if spec.reduce.dim is None:
            return cases

        def sliced(label: str, x: torch.Tensor, k: int, keepdim: bool, limit: int = INDEX_LIMIT) -> Case:
            args, kwargs = _call(spec, func, x, self.types, gen, k, dims=_last_dim(spec, func), keepdim=keepdim)
            return self._case("held-out", label, args, kwargs, limit)

        for k, length in enumerate(_HELD_OUT_LENGTHS):
            cases.append(sliced(f"slice of {length}", draw((3, length), dtype, gen, ties=ties), k, bool(k % 2)))
        cases.append(sliced("transposed input", draw((40, 6), dtype, gen, ties=ties).t(), 0, True))
        cases.append(sliced("many slices, 32-bit split", draw((700, 9), dtype, gen, ties=ties), 1, False,
                            _SPLIT_LIMIT))
        cases.append(sliced("empty input", draw((0, 5), dtype, gen, ties=ties), 2, True))
        if dtype.is_floating_point or dtype.is_complex:  # Note [special values in spec cases]
            cases.append(sliced("a special value in every slice", special_rows(dtype, gen), 3, False))
            cases.append(sliced("slice of 1025, special values",
                                salt_specials(draw((3, 1025), dtype, gen, ties=ties), gen), 0, True))
        return cases


def spec_opinfo(spec: LaunchSpec) -> Any | None:
    """The OpInfo the spec names (foreach ones included), None when it names none; SpecError for a
    name no OpInfo has."""
    info = _opinfo_named(spec.opinfo) if spec.opinfo else None
    if spec.opinfo and info is None:
        raise SpecError(f"spec {spec.op}: opinfo: no OpInfo named {spec.opinfo!r}")
    return info


@functools.cache
def _opinfo_named(name: str) -> Any | None:
    from torch.testing._internal import common_methods_invocations as cmi

    every = [*cmi.op_db, *(o for n in dir(cmi) if n.startswith("foreach_") and n.endswith("_op_db")
                           for o in getattr(cmi, n))]
    return next((o for o in every if o.name == name and not o.variant_test_name), None)


def _last_dim(spec: LaunchSpec, func: Any) -> Any:
    kind = next(str(a.type) for a in func._schema.arguments if a.name == spec.reduce.dim)
    return -1 if "[" not in kind and "List" not in kind else [-1]


__all__ = ["SpecCases", "explicit_calls", "spec_func", "spec_opinfo"]
