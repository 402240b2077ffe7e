"""The launch-spec kinds of the emulated host (reduction, window, scan, tensor-list): from one op
call, the buffers, constants, grid and threadgroups the spec prescribes, dispatched as
`Launch`es by the one runner, `backend.KernelSet` (Note [one emulated host]).

It mirrors what `hostgen` writes into the `.mm` host function (Note [spec buffers] in `port.spec.model`):
outputs are allocated from the shape and dtype rules, inputs laid out as the spec says, an empty
output returns early, and calls over more than `index_limit` elements are split into chunks of
whole slices (the `with_32bit_indexing` split). Every output is poisoned before the run (`poison`, as
pointwise outputs are) and sits between two guard bands of the same poison (the kernel's pointer
bound past the leading one, as `setBuffer:offset:` binds); a kernel that writes into either band
raises SpecError. Tensor-list outputs have the trailing band only.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from metalport.checks.host.backend import Buffer, Const, KernelSet, Launch, Lists, NotOnBackend, UnmodelledCall
from metalport.checks.host.poison import overwritten, poisoned
from metalport.errors import SpecError
from metalport.metal_types import METAL_TYPES
from metalport.port import (check_holds, check_message, dims_exprs, eval_threads, ExpressionError, Grid,
                            host_value, is_expression, LaunchSpec, Layout, METAL_DTYPES, OutputSpec, OutShape,
                            ParamField)

GUARD_ELEMENTS = 64  # poisoned elements before and after each output
INDEX_LIMIT = 2**31 - 1  # elements one launch may address with 32-bit indices

_PACK = {t.name: t.struct_format for t in METAL_TYPES if t.c_type is not None}  # params-field types
# c10::ScalarType numbering of the dtypes a ScalarType argument may carry into a constant buffer: the
# first twelve codes, Metal types all but double (7) and complex double (10), which MPS lacks.
_C10_NAMES = {t.scalar_code: t.torch_name for t in METAL_TYPES} | {7: "float64", 10: "complex128"}
_SCALAR_TYPES = tuple(getattr(torch, _C10_NAMES[code]) for code in range(12))


class HostCheckFailed(Exception):
    """One of the spec's argument checks refused the call (the host's TORCH_CHECK); the message is
    the check's, as the generated host would raise it (Note [spec checks] in port.spec)."""


@dataclass(frozen=True)
class Bound:
    """One op call bound to the spec: argument values by schema name."""

    values: Mapping[str, Any]


def bind_call(func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Bound:
    """Argument values by schema name, defaults filled in."""
    values: dict[str, Any] = {}
    for i, a in enumerate(func._schema.arguments):
        if i < len(args) and not a.kwarg_only:
            values[a.name] = args[i]
        elif a.name in kwargs:
            values[a.name] = kwargs[a.name]
        elif a.has_default_value():
            values[a.name] = a.default_value
    return Bound(values)


def _reduced_dims(spec: LaunchSpec, bound: Bound, ndim: int) -> list[int]:
    if spec.reduce.dim is None:
        return list(range(ndim))
    raw = bound.values.get(spec.reduce.dim)
    dims = list(range(ndim)) if raw is None or (isinstance(raw, (list, tuple)) and not raw) else \
        list(raw) if isinstance(raw, (list, tuple)) else [raw]
    wrap = max(ndim, 1)
    out = []
    for d in dims:
        if not -wrap <= d < wrap:
            raise UnmodelledCall(f"dim {d} out of range for a {ndim}-d input")
        out.append(d % wrap)
    return sorted(set(out)) if ndim else []


def _out_dtype(rule: str, bound: Bound, x: torch.Tensor | None) -> torch.dtype:
    if rule == "index":
        return torch.int64
    if rule in METAL_DTYPES:
        return getattr(torch, METAL_DTYPES[rule])
    if rule.startswith("arg:"):
        _, name, *default = rule.split(":")
        chosen = bound.values.get(name)
        if chosen is not None:
            return chosen
        if default:
            return getattr(torch, METAL_DTYPES[default[0]])
    if x is None:
        raise UnmodelledCall(f"output dtype {rule!r} with no input and no dtype argument")
    return x.dtype


def _out_shape(o: OutputSpec, bound: Bound, x: torch.Tensor | None, dims: list[int],
               keepdim: bool) -> tuple[int, ...]:
    if o.shape is OutShape.LIKE:
        return tuple(bound.values[o.shape_arg].shape)
    if o.shape is OutShape.LENGTH:
        return (int(bound.values[o.shape_arg]),)
    if o.shape is OutShape.DIMS:
        return tuple(host_value(e, bound.values) for e in dims_exprs(o.shape_arg or "[]"))
    assert x is not None  # load_spec refuses same/reduced/sizes without inputs
    if o.shape is OutShape.SAME:
        return tuple(x.shape)
    if o.shape is OutShape.SIZES:
        sizes = [int(v) for v in bound.values[o.shape_arg]]
        return tuple(x.shape[:x.dim() - len(sizes)]) + tuple(sizes)
    return tuple(1 if d in dims else x.shape[d] for d in range(x.dim()) if keepdim or d not in dims)


@dataclass(frozen=True)
class HostCall:
    """Everything the host decided for one call (before the 32-bit split); `run_launch` turns it
    into the `backend.Launch`es it dispatches."""

    host_name: str
    inputs: tuple[torch.Tensor, ...]
    outputs: tuple[torch.Tensor, ...]  # the results (views of the guarded buffers)
    guarded: tuple[torch.Tensor, ...]  # each output's flat buffer, guard band included
    params: tuple[tuple[str, Any], ...]  # (name, packed bytes or list) per params entry
    threads: int
    group: int
    derived: Mapping[str, int]


def _poisoned(shape: Sequence[int], dtype: torch.dtype, lead: int = GUARD_ELEMENTS) -> tuple[torch.Tensor, torch.Tensor]:
    """(the output, its poisoned flat buffer: `lead` guard elements, the output, GUARD_ELEMENTS more)."""
    numel = math.prod(shape)
    flat = poisoned(lead + numel + GUARD_ELEMENTS, dtype)
    return flat[lead:lead + numel].view(tuple(shape)), flat


def _band_hits(spec: LaunchSpec, launch: HostCall) -> None:
    """SpecError naming the first output whose guard band before or after it changed."""
    for o, g, out in zip(spec.outputs, launch.guarded, launch.outputs):
        lead = g.numel() - out.numel() - GUARD_ELEMENTS
        for where, band in (("before", g[:lead]), ("after", g[lead + out.numel():])):
            hit = overwritten(band)
            if hit:
                raise SpecError(f"spec {spec.op}: outputs: kernel {launch.host_name} writes outside its output "
                                f"{o.name!r} ({hit} element(s) of the guard band {where} it changed)",
                                hint="bound the kernel's writes by the output's size")


def _param_value(f: ParamField, bound: Bound, derived: Mapping[str, Any]) -> Any:
    source, type_ = f.source, f.type
    if is_expression(source):
        return host_value(source, bound.values)
    value = derived[source] if source in derived else bound.values.get(source)
    if isinstance(value, (list, tuple)):
        values = [float(v) if type_ == "float" else int(v) for v in value]
        if f.length is not None:
            if len(values) > f.length:
                raise UnmodelledCall(f"{source} has {len(values)} values, the {f.name} field holds {f.length}")
            values += [0] * (f.length - len(values))
        return values
    if isinstance(value, torch.dtype):
        return int(_SCALAR_TYPES.index(value)) if value in _SCALAR_TYPES else -1
    if isinstance(value, torch.Tensor):
        value = value.item()
    if type_ == "float":
        return float(value)
    if type_ == "bool":
        return bool(value)
    if isinstance(value, float):
        raise UnmodelledCall(f"{source}={value!r} is not an integer")
    return int(value)


def plan_launch(spec: LaunchSpec, bound: Bound) -> HostCall:
    """The buffers, constants and geometry of one call; UnmodelledCall when MPS would refuse it,
    SpecError when the spec's grid is larger than the data or one of its expressions cannot be
    evaluated for the call, HostCheckFailed when one of the spec's argument checks refuses the call
    (before anything else, as the generated host does)."""
    try:
        return _plan_launch(spec, bound)
    except ExpressionError as err:
        raise SpecError(f"spec {spec.op}: {err}", hint="fix the spec's expression") from None


def _plan_launch(spec: LaunchSpec, bound: Bound) -> HostCall:
    for check in spec.checks:
        try:
            holds = check_holds(check, bound.values)
        except (IndexError, RuntimeError) as err:  # `self.size(dim)` of a dim out of range throws in C++ too
            raise HostCheckFailed((str(err).strip().splitlines() or [type(err).__name__])[0]) from None
        if not holds:
            raise HostCheckFailed(check_message(check, bound.values))
    if spec.geometry.grid is Grid.PER_CHUNK:
        return _plan_list_launch(spec, bound)
    x = bound.values[spec.inputs[0].arg] if spec.inputs else None
    if x is not None and not isinstance(x, torch.Tensor):
        raise UnmodelledCall(f"{spec.inputs[0].arg} is not a tensor")
    ndim = x.dim() if x is not None else 0
    dims = _reduced_dims(spec, bound, ndim) if x is not None else []
    keepdim = bool(bound.values.get(spec.reduce.keepdim, False)) if spec.reduce.keepdim else False
    kept = [d for d in range(ndim) if d not in dims]
    reduce_size = math.prod(x.shape[d] for d in dims) if x is not None else 1
    shapes = [_out_shape(o, bound, x, dims, keepdim) for o in spec.outputs]
    dtypes = [_out_dtype(o.dtype, bound, x) for o in spec.outputs]
    in_names = tuple(str(bound.values[i.arg].dtype).removeprefix("torch.") for i in spec.inputs)
    out_names = tuple(str(d).removeprefix("torch.") for d in dtypes)
    types = spec.instantiation_for(in_names, out_names)
    if types is None:
        raise UnmodelledCall(f"no {spec.kernel_name} instantiation for {', '.join(in_names) or 'no input'} -> "
                               f"{', '.join(out_names)}")
    inputs = []
    for spec_in in spec.inputs:
        t = bound.values[spec_in.arg]
        if spec_in.layout is Layout.REDUCE_LAST:
            t = t.permute(*kept, *dims).contiguous() if t.dim() else t.contiguous()
        elif spec_in.layout is Layout.CONTIGUOUS:
            t = t.contiguous()
        inputs.append(t)
    made = [_poisoned(s, d) for s, d in zip(shapes, dtypes)]
    for o, (view, _) in zip(spec.outputs, made):
        if o.fill == "zero":
            view.zero_()
    numel = x.numel() if x is not None else math.prod(shapes[0])
    # One slice per element of the first output when it is not a reduction of the input (ctc's
    # per-sequence threadgroups: `dims:` outputs).
    num_slices = math.prod(x.shape[d] for d in kept) if x is not None and spec.outputs[0].shape is not OutShape.DIMS \
        else math.prod(shapes[0])
    derived: dict[str, Any] = {"reduce_size": reduce_size, "num_slices": num_slices, "numel": numel,
                               "output_numel": math.prod(shapes[0]), "ndim": ndim,
                               "sizes": list(reversed(x.shape)) if x is not None and ndim else [1],
                               "strides": list(reversed(x.stride())) if x is not None and ndim else [1]}
    params = tuple((p.name, [_param_value(f, bound, derived) for f in p.fields]) for p in spec.params)
    threads, group = _grid(spec, derived, shapes)
    return HostCall(spec.host_name(types), tuple(inputs), tuple(m[0] for m in made), tuple(m[1] for m in made),
                    params, threads, group, derived)


def _grid(spec: LaunchSpec, derived: Mapping[str, Any], shapes: Sequence[Sequence[int]]) -> tuple[int, int]:
    """(threads, threadgroup size) of the launch; SpecError when the grid is larger than the data."""
    num_slices, numel = derived["num_slices"], derived["numel"]
    if spec.geometry.grid in (Grid.PER_SLICE, Grid.PER_WINDOW):
        group = spec.geometry.threadgroup or 1
        threads = num_slices * group
    else:
        threads = num_slices if spec.geometry.grid is Grid.PER_OUTPUT_ELEMENT else numel
        group = spec.geometry.threadgroup or max(1, min(threads, 1024))
    if spec.geometry.threads is not None:
        threads = eval_threads(spec.geometry.threads, derived)
    data = max([numel, *(math.prod(s) for s in shapes)])
    units = threads // group if spec.geometry.grid in (Grid.PER_SLICE, Grid.PER_WINDOW) else threads
    limit = math.prod(shapes[0]) if spec.geometry.grid in (Grid.PER_SLICE, Grid.PER_WINDOW) else data
    if units > max(limit, 1) and data:
        raise SpecError(f"spec {spec.op}: geometry.{'threads' if spec.geometry.threads else 'grid'}: "
                        f"{units} {'threadgroups' if units != threads else 'threads'} for {limit} elements: "
                        f"the grid is larger than the data")
    return threads, group


def _param_arg(spec: LaunchSpec, index: int, values: list[Any]) -> Const:
    """A params entry as the host sets its bytes: a scalar, an array, or a struct packed as C lays
    it out (natural alignment: every field type here is 1, 4 or 8 bytes)."""
    p = spec.params[index]
    if p.struct is None:
        value, type_ = values[0], p.fields[0].type
        return Const(f"{type_}*", tuple(value)) if isinstance(value, list) else Const(type_, (value,))
    packed = bytearray()
    for f, v in zip(p.fields, values):
        size = struct.calcsize(_PACK[f.type])
        items = v if isinstance(v, list) else [v]
        packed += bytes(-len(packed) % size) + struct.pack("<" + _PACK[f.type] * len(items), *items)
    widest = max(struct.calcsize(_PACK[f.type]) for f in p.fields)
    packed += bytes(-len(packed) % widest)
    return Const(p.struct, (), packed=bytes(packed))


def _chunks(launch: HostCall, index_limit: int) -> list[tuple[int, int]]:
    """[start, stop) slice ranges each addressing at most `index_limit` elements."""
    slices = launch.derived["num_slices"]
    size = max(launch.derived["reduce_size"], 1)
    if size > index_limit:
        raise UnmodelledCall(f"one slice has {size} elements, more than 32-bit indexing reaches")
    per = max(1, index_limit // size)
    return [(s, min(s + per, slices)) for s in range(0, slices, per)] or [(0, 0)]


def run_launch(spec: LaunchSpec, kernels: KernelSet, launch: HostCall, *,
               index_limit: int = INDEX_LIMIT) -> tuple[torch.Tensor, ...]:
    """Run `launch` on `kernels` (either backend, Note [one emulated host]); the outputs.
    SpecError when the kernel wrote into an output's guard band."""
    if spec.geometry.grid is Grid.PER_CHUNK:
        return _run_list_launch(spec, kernels, launch)
    if launch.outputs and launch.outputs[0].numel() == 0:
        return launch.outputs  # the host returns before encoding anything
    split = spec.geometry.grid in (Grid.PER_SLICE, Grid.PER_WINDOW, Grid.PER_OUTPUT_ELEMENT) and \
        spec.geometry.threads is None and all(o.shape is OutShape.REDUCED for o in spec.outputs) and \
        all(i.layout is not Layout.STRIDED for i in spec.inputs)
    ranges = _chunks(launch, index_limit) if split else [(0, launch.derived["num_slices"])]
    size = launch.derived["reduce_size"]
    n_out = len(launch.guarded)
    for start, stop in ranges:
        count = stop - start
        chunk = {"num_slices": count, "numel": count * size, "output_numel": count} if split else {}
        params = [_param_arg(spec, i, [chunk.get(f.source, v) for f, v in zip(p.fields, launch.params[i][1])])
                  for i, p in enumerate(spec.params)]
        if split:
            inputs = tuple(t.reshape(-1)[start * size:stop * size] for t in launch.inputs)
            # Each chunk's outputs are bound at the chunk's first element of the whole guarded
            # buffer, so a write before the first chunk or past the last lands in a guard band.
            offset = GUARD_ELEMENTS + start
            threads = count * (launch.group if spec.geometry.grid is not Grid.PER_OUTPUT_ELEMENT else 1)
        else:
            inputs, offset, threads = launch.inputs, GUARD_ELEMENTS, launch.threads
        args = (*(Buffer(n_out + k) for k in range(len(inputs))), *(Buffer(k, offset) for k in range(n_out)), *params)
        kernels.run(Launch(launch.host_name, args, (threads,), (*launch.guarded, *inputs), n_out, (launch.group,)))
    _band_hits(spec, launch)
    return launch.outputs


# Note [tensor-list launches]: a per-chunk spec takes its inputs as `Tensor[]` (every list of the
# same length; the first list's tensors decide shapes and dtype) and returns one list per output,
# each tensor shaped like the first list's. The host cuts every tensor into chunks of
# `threadgroup` elements; grid row y is chunk y, described by `chunks` (tensor, first element)
# and `numels`. Lists reach the kernel as arrays of device addresses (emulate.TensorList), so a
# Launch holds the tensors of all lists flattened, `derived["lists"]` long each.


def _plan_list_launch(spec: LaunchSpec, bound: Bound) -> HostCall:
    """A per-chunk launch over tensor lists (Note [tensor-list launches])."""
    lists = [bound.values[i.arg] for i in spec.inputs]
    if not all(isinstance(v, (list, tuple)) for v in lists):
        raise UnmodelledCall("a per-chunk spec takes tensor lists")
    n = len(lists[0])
    if any(len(v) != n for v in lists):
        raise UnmodelledCall("tensor lists of different lengths")
    first = list(lists[0])
    dtypes = {t.dtype for v in lists for t in v}
    if n and len(dtypes) > 1:
        raise UnmodelledCall("tensors of several dtypes (the host takes the per-tensor slow path)")
    dtype_name = str(first[0].dtype).removeprefix("torch.") if n else "float32"
    out_dtypes = [_out_dtype(o.dtype, bound, first[0] if n else None) for o in spec.outputs]
    types = spec.instantiation_for(tuple(dtype_name for _ in spec.inputs),
                                   tuple(str(d).removeprefix("torch.") for d in out_dtypes))
    if types is None:
        raise UnmodelledCall(f"no {spec.kernel_name} instantiation for {dtype_name} lists")
    inputs = tuple(t.contiguous() for v in lists for t in v)
    made = [_poisoned(t.shape, d, lead=0) for d in out_dtypes for t in first]  # lists: the band after only
    chunk = spec.geometry.threadgroup or 1
    table = [(j, s) for j, t in enumerate(first) for s in range(0, t.numel(), chunk)]
    derived: dict[str, Any] = {"lists": n, "num_slices": len(table), "numel": sum(t.numel() for t in first),
                               "output_numel": sum(t.numel() for t in first), "reduce_size": 1, "ndim": 0,
                               "chunks": [v for pair in table for v in pair], "numels": [t.numel() for t in first]}
    params = tuple((p.name, [_param_value(f, bound, derived) for f in p.fields]) for p in spec.params)
    return HostCall(spec.host_name(types), inputs, tuple(m[0] for m in made), tuple(m[1] for m in made),
                    params, chunk * len(table), chunk, derived)


def _run_list_launch(spec: LaunchSpec, kernels: KernelSet, launch: HostCall) -> tuple[torch.Tensor, ...]:
    """Run a per-chunk launch; the outputs, flattened (every list in order)."""
    n, chunks = launch.derived["lists"], launch.derived["num_slices"]
    if chunks == 0:
        return launch.outputs  # nothing to compute: the host encodes no launch
    n_out = len(launch.guarded)
    ins = [Lists(tuple(n_out + k * n + j for j in range(n))) for k in range(len(spec.inputs))]
    outs = [Lists(tuple(k * n + j for j in range(n))) for k in range(len(spec.outputs))]
    params = [_param_arg(spec, i, launch.params[i][1]) for i in range(len(spec.params))]
    try:
        kernels.run(Launch(launch.host_name, (*ins, *outs, *params), (launch.group, chunks),
                           (*launch.guarded, *launch.inputs), n_out, (launch.group, 1)))
    except NotOnBackend as err:  # a skipped call with its reason, not a kernel failure
        raise UnmodelledCall(str(err)) from None
    for k, o in enumerate(spec.outputs):
        for g in launch.guarded[k * n:(k + 1) * n]:
            if overwritten(g[g.numel() - GUARD_ELEMENTS:]):
                raise SpecError(f"spec {spec.op}: outputs: kernel {launch.host_name} writes outside an output "
                                f"of list {o.name!r}", hint="bound the kernel's writes by each tensor's numel")
    return launch.outputs


__all__ = ["GUARD_ELEMENTS", "INDEX_LIMIT", "Bound", "HostCall", "HostCheckFailed", "UnmodelledCall", "bind_call", "plan_launch",
           "run_launch"]
