"""Calls a spec lists itself: random and held-out cases for ops that are no reduction of their
first input (gathers, windows, factories, tensor lists), from the spec's `cases`:

    cases:
      random:                       # each entry is one call; arguments missing here take defaults
        - {self: {shape: [5, 7], transposed: true}, index: {index_into: self, shape: [4, 6]}}
        - {start: -3, end: 4, steps: 64, base: 2.0}
      held_out:                     # the same, each with a `label`; optional `only: [metal types]`
        - {label: "self past 2^31 elements", only: [bool], self: {shape: [2147483700], large: true},
           index: {index_into: self, shape: [2000], tail: 4096}}

A tensor argument is `{shape, transposed?, channels_last?, large?}` drawn (`numerics.draw`, no op
numerics) in the row's dtype
(`large`: zeros with 4096 random elements at each end, so no 64-bit temporary is made; `range:
[low, high]`: integers in [low, high)), drawn in its own `dtypes` column when it is a spec input; an index
argument `{index_into: <arg>, shape, tail?}` int64 in [-numel, numel) (`tail`: only the last
`tail` elements), a list argument `{list: [shape, ...]}`; other values are literal. The ScalarType
argument of an `arg:` output dtype rule gets the row's type. Entries marked `large: true` anywhere
run only when large cases are asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from metalport.checks.numerics import draw
from metalport.errors import SpecError
from metalport.port.spec import METAL_DTYPES, LaunchSpec

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
        low = max(0, n - tail)
        return torch.randint(low, n, shape, generator=gen) - n * torch.randint(0, 2, shape, generator=gen)
    return torch.randint(-n, n, shape, generator=gen)


def _is_large(entry: Mapping[str, Any]) -> bool:
    return any(isinstance(v, Mapping) and v.get("large") for v in entry.values())


def explicit_calls(spec: LaunchSpec, func: Any, types: tuple[str, ...], kind: str, gen: torch.Generator, *,
                   include_large: bool) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """(label, args, kwargs) of every `cases.<kind>` entry ("random" or "held_out") for the row
    `types`; SpecError naming the entry when it does not fit the schema."""
    entries = spec.cases.get(kind, ()) or ()
    dtype = getattr(torch, METAL_DTYPES[types[0]])
    out_rules = {o.dtype.split(":")[1]: types[len(spec.inputs) + i]
                 for i, o in enumerate(spec.outputs) if o.dtype.startswith("arg:")}
    calls = []
    for n, entry in enumerate(entries):
        where = f"spec {spec.op}: cases.{kind}[{n}]"
        if not isinstance(entry, Mapping):
            raise SpecError(f"{where}: expected a mapping of argument values")
        if entry.get("only") and types[0] not in entry["only"]:
            continue
        if _is_large(entry) and not include_large:
            continue
        made: dict[str, Any] = {}
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        known = {a.name for a in func._schema.arguments}
        unknown = sorted(set(entry) - known - {"label", "only"})
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


__all__ = ["explicit_calls"]
