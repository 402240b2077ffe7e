"""The conformance cases of one dtype row, for every launch kind: OpInfo samples, random draws and
held-out cases, each labelled: one `Case` type, drawn by `build_cases` for an elementwise port and
`build_spec_cases` (below; its Calls have no operand slots) for a launch spec, both with `numerics.draw`.

OpInfo samples are what test_mps.py's test_output_match runs. Random and held-out cases draw on
the op's reference numerics (`numerics`): in-domain random values, tiny magnitudes, OpInfo's
small / large / extremal value sets, values no PyTorch test checks, and layouts (strides,
broadcasting, empty and 0-dim tensors, threadgroup boundaries). Each case says whether a
divergence is one PyTorch accepts (Note [accepted divergences]) and whether it is judged at
small magnitudes (Note [small magnitudes]).

Note [small magnitudes]
test_mps compares float32 with atol 1e-5, so `log(1 + x)` for log1p passes every OpInfo sample:
at |x| = 1e-3 its error (~6e-8) is far below atol. Cases whose inputs are all tiny are judged
relative instead: atol drops to the dtype's smallest normal and the rtol stays test_mps's, so a
cancellation (log1p as log(1+x), expm1 as exp(x)-1) fails while a correctly rounded kernel passes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import functools
from dataclasses import dataclass
from typing import Any

import torch

from metalport.checks.edges import edge_sets
from metalport.checks.hostmodel import UnmodelledCall
from metalport.checks.numerics import (Numerics, beyond_values, draw, draw_small, grid, numerics_for, tiny_values,
                                       value_set)
from metalport.checks.samples import Call, Family, bind, find_opinfos, opinfo_calls, schema_template
from metalport.checks.speclaunch import INDEX_LIMIT
from metalport.errors import SpecError, UsageError
from metalport.port.spec import METAL_DTYPES, LaunchSpec

RANDOM_CASES = 4
OUTSIDE_DOMAIN = "inputs outside the op's domain (OpInfo's domain and reference_numerics_filter)"
BEYOND = "values no PyTorch reference-numerics test checks (subnormals, the largest finite, integer extremes)"


@dataclass(frozen=True)
class Case:
    """One call to check: `kind` is opinfo, random or held-out; see the module notes for the rest."""

    label: str
    call: Call
    kind: str
    force: str | None = None  # the dense flavour the host's override would pin ("ilp"/"scalar")
    accepted: str | None = None  # the OpInfo skip/xfail putting this value set out of scope
    index_limit: int = INDEX_LIMIT  # elements one launch of a launch spec may address (a forced split)

    def describe(self) -> str:
        return self.call.describe()

    def operands(self) -> tuple[torch.Tensor, ...]:
        return self.call.operands()


def build_cases(family: Family, base: str, packet: Any, dtype: torch.dtype, gen: torch.Generator,
                held_out: bool) -> tuple[list[Case], list[str]]:
    """The cases for one dtype (OpInfo, random, then held-out) and why recorded calls were skipped."""
    infos = find_opinfos(base)
    info = infos[0] if infos else None
    numerics = numerics_for(base, info, family.arity)
    skipped: list[str] = []
    cases: list[Case] = []
    template: Call | None = None
    if info is not None:
        recorded = [c for i in infos for c in opinfo_calls(i, packet, dtype)]
        for k, (func, args, kwargs) in enumerate(recorded):
            try:
                call = bind(func, args, kwargs, family)
            except UnmodelledCall as err:
                skipped.append(str(err))
                continue
            cases.append(Case(f"opinfo sample {k}", call, "opinfo"))
            if template is None and all(isinstance(t, torch.Tensor) and t.dim() > 0 for t in call.operands()):
                template = call
        template = template or next((c.call for c in cases), None)
    if template is None:
        overload = getattr(packet, "default", None) or getattr(packet, packet.overloads()[0])
        template = schema_template(overload, family, dtype, gen)
    if template is None:
        return cases, skipped
    maker = _Maker(template, numerics, gen, dtype)
    if not maker.slots:  # every recorded call passes only Python numbers: nothing to redraw
        return cases, skipped
    cases += maker.random()
    if held_out:
        cases += maker.held_out()
    return cases, skipped


class _Maker:
    """Builds random and held-out cases by replacing the template call's tensor operands."""

    def __init__(self, template: Call, numerics: Numerics, gen: torch.Generator, dtype: torch.dtype) -> None:
        self.template, self.numerics, self.gen, self.dtype = template, numerics, gen, dtype
        self.slots = [i for i, s in enumerate(template.slots) if isinstance(template._get(s), torch.Tensor)]
        ops = template.operands()
        self.dtypes = [ops[i].dtype for i in self.slots]
        self.shapes = [tuple(ops[i].shape) for i in self.slots]
        self.strides = [ops[i].stride() for i in self.slots]

    def _case(self, label: str, values: Sequence[torch.Tensor], kind: str, force: str | None = None,
              accepted: str | None = None) -> Case:
        current = [self.template._get(s) for s in self.template.slots]
        for i, v in zip(self.slots, values):
            current[i] = v
        return Case(label, self.template.with_operands(current), kind, force, accepted)

    def _each(self, shape: Callable[[int], tuple[int, ...]] | tuple[int, ...],
              maker: Callable[..., torch.Tensor] = draw) -> list[torch.Tensor]:
        return [maker(shape(k) if callable(shape) else shape, dt, self.gen, self.numerics, k)
                for k, dt in enumerate(self.dtypes)]

    def random(self) -> list[Case]:
        """In-domain draws at the template's layout and at random sizes, tiny magnitudes, a 0-dim partner."""
        normal = self.numerics.accepted("normal", self.dtype)
        out = []
        for k in range(RANDOM_CASES):
            if k % 2 == 0:
                values = [_like(v, shape, stride) for v, shape, stride in
                          zip(self._each(lambda j: self.shapes[j]), self.shapes, self.strides)]
            else:
                n = int(torch.randint(1, 3000, (1,), generator=self.gen))
                values = self._each((n,))
            out.append(self._case(f"random {k}", values, "random", "ilp" if k % 4 == 1 else None, accepted=normal))
        if self.dtype.is_floating_point or self.dtype.is_complex:
            small = self.numerics.accepted("small", self.dtype)
            if all(d.is_floating_point or d.is_complex for d in self.dtypes):
                out.append(self._case("random small magnitudes", self._each((257,), draw_small), "random",
                                      accepted=small))
        partner = _scalar_partner(self.dtype)
        if len(self.slots) >= 2 and partner is not None and self.dtypes[-1] == self.dtype:
            values = [draw((6, 5), dt, self.gen, self.numerics, k) for k, dt in enumerate(self.dtypes[:-1])]
            values.append(draw((), partner, self.gen, self.numerics, len(self.slots) - 1))
            case = self._case(f"random 0-dim {str(partner).removeprefix('torch.')} operand", values, "random",
                              accepted=normal)
            if _same_output_dtype(case.call, self.template):
                out.append(case)
        return out

    def held_out(self) -> list[Case]:
        """OpInfo's value sets (in and outside the domain), tiny and beyond values, then layouts."""
        out = []
        for kind in ("small", "large", "extremal"):
            out += self._value_set(kind)
        if self.dtype.is_floating_point and all(d.is_floating_point for d in self.dtypes):
            tiny = [tiny_values(d) for d in self.dtypes]
            if len(tiny) == 3:
                tiny = [v[::3] for v in tiny]
            values = [self.numerics.restrict(t, k) for k, t in enumerate(grid(tiny, self.dtypes))]
            out.append(self._case("held-out tiny magnitudes", values, "held-out",
                                  accepted=self.numerics.accepted("small", self.dtype)))
        beyond = [beyond_values(d) for d in self.dtypes]
        if len(beyond) == 3:
            beyond = [v[:5] for v in beyond]
        out.append(self._case("held-out beyond the value sets", grid(beyond, self.dtypes), "held-out",
                              accepted=None))
        out.append(self._case("held-out beyond the value sets, ILP kernel", grid(beyond, self.dtypes), "held-out",
                              "ilp", accepted=None))
        return out + self._edges() + self._layouts()

    def _edges(self) -> list[Case]:
        """Where kernels break that no value set aims at (Note [edge cases] in `edges`): a dense sweep
        of the domain, wide magnitudes, every quadrant with signed zeros, the neighbourhoods of
        integers and multiples of pi/2, the truth's overflow threshold, integers past 2^24."""
        normal = self.numerics.accepted("normal", self.dtype)
        large = self.numerics.accepted("large", self.dtype)
        out = []
        for label, values, accepted in edge_sets(self.template, self.slots, self.dtypes, self.numerics, self.gen):
            restricted = [self.numerics.restrict(t, k) for k, t in enumerate(values)]
            out.append(self._case(f"held-out {label}", restricted, "held-out",
                                  accepted=large if accepted == "large" else normal))
        return out

    def _value_set(self, kind: str) -> list[Case]:
        sets = [value_set(kind, d, self.numerics) for d in self.dtypes]
        if any(s is None for s in sets):
            return []
        n = len(sets[0][0])  # type: ignore[index]
        raw = []
        for k, (s, dt) in enumerate(zip(sets, self.dtypes)):
            vals = s[min(k, 1)] if k < 2 else list(reversed(s[0]))  # type: ignore[index]
            raw.append(torch.tensor(vals[:n], dtype=dt))
        restricted = [self.numerics.restrict(t, k) for k, t in enumerate(raw)]
        accepted = self.numerics.accepted(kind, self.dtype)
        out = [self._case(f"held-out {kind} values", restricted, "held-out", accepted=accepted)]
        if kind == "extremal":
            out.append(self._case(f"held-out {kind} values, ILP kernel", restricted, "held-out", "ilp",
                                  accepted=accepted))
        if any(not _same(a, b) for a, b in zip(raw, restricted)):
            out.append(self._case(f"held-out {kind} values outside the domain", raw, "held-out",
                                  accepted=None))
        return out

    def _layouts(self) -> list[Case]:
        accepted = self.numerics.accepted("normal", self.dtype)
        n = len(self.slots)
        each = self._each

        def case(label: str, values: list[torch.Tensor], force: str | None = None) -> Case:
            return self._case(f"held-out {label}", values, "held-out", force, accepted=accepted)

        out = [case("empty", each((0,))), case("empty 2-d", each((2, 0, 3))), case("0-dim", each(()))]
        if n > 1:
            out += [case("0-dim and 1-d", each(lambda k: () if k else (5,))),
                    case("0-dim first", each(lambda k: (5,) if k else ()))]
        out += [case("transposed", [t.t() if k == 0 else t.t().contiguous() for k, t in enumerate(each((7, 5)))]),
                case("step-2 slice", [t[:, ::2] for t in each((6, 10))]),
                case("storage offset", [t[1:, 2:] for t in each((4, 9))]),
                case("expanded view", [t.expand(3, 5, 4) for t in each((3, 1, 4))])]
        if n > 1:
            shapes = [(5, 1), (1, 6), (5, 6)]
            out += [case("broadcast", each(lambda k: shapes[k % 3])),
                    case("broadcast rows", each(lambda k: (6,) if k else (4, 6))),
                    case("broadcast lhs", each(lambda k: (6,) if k == 0 else (4, 6)))]
        out += [case("threadgroup boundary 1025", each((1025,))),
                case("threadgroup boundary 2049, ILP kernel", each((2049,)), "ilp"),
                case("strided 40x33", [t[:, :33] for t in each((40, 34))])]
        return out


def _like(values: torch.Tensor, shape: tuple[int, ...], stride: tuple[int, ...]) -> torch.Tensor:
    """`values` laid out with the template operand's strides (views keep their layout)."""
    if not values.numel():
        return values
    try:
        return torch.empty_strided(shape, stride, dtype=values.dtype).copy_(values)
    except RuntimeError:
        return values


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values, NaN equal to NaN (complex32 compared through complex64)."""
    if a.is_complex():
        a, b = torch.view_as_real(a.to(torch.complex64)), torch.view_as_real(b.to(torch.complex64))
    return bool(torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                      and torch.equal(a.nan_to_num(), b.nan_to_num())))


def _same_output_dtype(call: Call, template: Call) -> bool:
    try:
        out, ref = call.run(), template.run()
    except (RuntimeError, ValueError, TypeError):
        return False
    return isinstance(out, torch.Tensor) and isinstance(ref, torch.Tensor) and out.dtype == ref.dtype


def _scalar_partner(dtype: torch.dtype) -> torch.dtype | None:
    """A 0-dim operand dtype that keeps `dtype` as the result but makes the host cast (or promote)."""
    if dtype == torch.bool or dtype.is_complex:
        return None
    if dtype.is_floating_point:
        return torch.int64 if dtype == torch.float32 else torch.float32
    return torch.int32 if dtype == torch.int64 else torch.int64



# The cases of a launch spec (reduction, window, scan, tensor-list kinds).

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
        low = max(0, n - tail)
        return torch.randint(low, n, shape, generator=gen) - n * torch.randint(0, 2, shape, generator=gen)
    return torch.randint(-n, n, shape, generator=gen)


def _is_large(entry: Mapping[str, Any]) -> bool:
    return any(isinstance(v, Mapping) and v.get("large") for v in entry.values())


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


def build_spec_cases(spec: LaunchSpec, types: tuple[str, ...], gen: torch.Generator,
                     include_held_out: bool, include_large: bool = True) -> tuple[list[Case], int]:
    """(cases, OpInfo calls left out) for one instantiation: OpInfo samples, random, held-out.

    A spec's own `cases.random` replace the drawn reductions; its `cases.held_out` are added to the
    reduction held-out cases, or replace them for a spec that reduces nothing (`explicit_calls`)."""
    func = spec_func(spec)
    dtype = getattr(torch, METAL_DTYPES[types[0]])
    ties = bool(spec.cases.get("ties"))
    cases: list[Case] = []

    def case(kind: str, label: str, args: Any, kwargs: dict[str, Any], limit: int = INDEX_LIMIT) -> Case:
        return Case(label, Call(func, tuple(args), dict(kwargs), (), None), kind, index_limit=limit)

    left_out = 0
    if spec.opinfo:
        from metalport.checks.samples import opinfo_calls

        info = spec_opinfo(spec)
        for n, (f, args, kwargs) in enumerate(opinfo_calls(info, func.overloadpacket, dtype)):
            if f is not func:
                left_out += 1  # another overload of the op: not what this host function serves
                continue
            cases.append(case("opinfo", f"OpInfo sample {n}", args, kwargs))
    for label, args, kwargs in explicit_calls(spec, func, types, "random", gen, include_large=include_large):
        cases.append(case("random", label, args, kwargs))
    for k, shape in enumerate(() if spec.cases.get("random") else _SHAPES * 2):
        x = draw(shape, dtype, gen, ties=ties and k % 2 == 0)
        args, kwargs = _call(spec, func, x, types, gen, k)
        cases.append(case("random", f"random case {k}", args, kwargs))
    if include_held_out:
        for label, args, kwargs in explicit_calls(spec, func, types, "held_out", gen, include_large=include_large):
            cases.append(case("held-out", label, args, kwargs))
    if include_held_out and spec.reduce.dim is not None:
        for k, length in enumerate(_HELD_OUT_LENGTHS):
            x = draw((3, length), dtype, gen, ties=ties)
            args, kwargs = _call(spec, func, x, types, gen, k, dims=_last_dim(spec, func), keepdim=bool(k % 2))
            cases.append(case("held-out", f"slice of {length}", args, kwargs))
        x = draw((40, 6), dtype, gen, ties=ties).t()
        args, kwargs = _call(spec, func, x, types, gen, 0, dims=_last_dim(spec, func), keepdim=True)
        cases.append(case("held-out", "transposed input", args, kwargs))
        x = draw((700, 9), dtype, gen, ties=ties)
        args, kwargs = _call(spec, func, x, types, gen, 1, dims=_last_dim(spec, func), keepdim=False)
        cases.append(case("held-out", "many slices, 32-bit split", args, kwargs, _SPLIT_LIMIT))
        x = draw((0, 5), dtype, gen, ties=ties)
        args, kwargs = _call(spec, func, x, types, gen, 2, dims=_last_dim(spec, func), keepdim=True)
        cases.append(case("held-out", "empty input", args, kwargs))
    return cases, left_out


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


__all__ = ["BEYOND", "OUTSIDE_DOMAIN", "RANDOM_CASES", "Case", "build_cases", "build_spec_cases",
           "explicit_calls", "spec_func"]
