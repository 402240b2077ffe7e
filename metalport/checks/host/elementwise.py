"""The elementwise launch kind of the emulated host: what PyTorch's MPS host side does before a
pointwise Metal kernel runs, modelled in Python, as `backend.Launch`es (Note [one emulated host]).

Covers the library helpers `exec_unary_kernel` (plain and with an alpha scalar),
`exec_binary_kernel` (plain and alpha; dense, ILP, scalar-operand, broadcast, strided and their
`_cast` variants), `exec_ternary_kernel`, the port's own `exec_ternary_kernel_with_alpha` (Note
[ternary alpha kernels], metalport/port/write/host.py), `exec_unary_kernel_with_params` (a params struct
as the alpha, nan_to_num) and a two-output unary kernel pair (frexp): which `[[host_name]]` the host
asks for, the arguments in buffer-index order (sizes and byte strides innermost first, ndim,
numel, alpha, packed ScalarType codes) and the grid. Written from reading the conventions of `OperationUtils.mm` and
`c10/metal/indexing.h`; the iterator geometry itself lives in `iteration.py`.

Not modelled (callers get UnmodelledCall / MissingKernel, never a guess): the binary
`_strided_castout_` path (an `out=` dtype differing from the kernel's natural output), newer
`inner_contiguous` kernels (the strided kernel is what the host's strided flavour override runs),
64-bit index splitting of huge iterators, and other per-op host code (div's rounding modes).
"""

from __future__ import annotations

from collections.abc import Container, Iterable

import torch

from metalport.checks.host.iteration import Geometry, Iteration, storage_extent
from metalport.checks.host.backend import Buffer, Const, Launch, UnmodelledCall
from metalport.metal_types import METAL_TYPES

# In `MetalType.report_rank` order: `families` lists the dtypes a kernel registers in this order.
_METAL_TYPE: dict[torch.dtype, str] = {getattr(torch, t.torch_name): t.name
                                       for t in sorted(METAL_TYPES, key=lambda t: t.report_rank)}
METAL_DTYPES: dict[str, torch.dtype] = {v: k for k, v in _METAL_TYPE.items()}

# c10::ScalarType codes the cast kernels switch on (the subset c10/metal/common.h lists).
_SCALAR_TYPE: dict[torch.dtype, int] = {getattr(torch, t.torch_name): t.scalar_code for t in METAL_TYPES}
ILP_PER_THREAD = 4
ILP_THRESHOLD = 1 << 18  # dense ILP kernels for floating outputs from this many elements


class MissingKernel(Exception):
    """The host would ask the library for `kernel`, which it does not define."""

    def __init__(self, kernel: str) -> None:
        super().__init__(kernel)
        self.kernel = kernel


def metal_type_name(dtype: torch.dtype) -> str:
    """The Metal spelling used in host names (`float`, `half`, `long`, ...)."""
    if dtype not in _METAL_TYPE:
        raise KeyError(f"no Metal type for {dtype}")
    return _METAL_TYPE[dtype]


def scalar_type_code(dtype: torch.dtype) -> int:
    """The c10::ScalarType number a cast kernel receives for `dtype`."""
    if dtype not in _SCALAR_TYPE:
        raise UnmodelledCall(f"MPS kernels have no ScalarType for {dtype}")
    return _SCALAR_TYPE[dtype]


def result_dtype(first: torch.Tensor, *others: torch.Tensor | bool | int | float) -> torch.dtype:
    """torch.result_type over all operands, folded pairwise from the first operand's category
    (0-dim or dimensioned), as TensorIterator types the output."""
    dtype = first.dtype
    for other in others:
        dtype = torch.result_type(torch.empty((0,) * min(first.dim(), 1), dtype=dtype), other)
    return dtype


def _host_scalar(t: torch.Tensor) -> torch.Tensor:
    """The host's treatment of 0-dim double operands: MPS has no float64, so they become float."""
    if t.dim() == 0 and t.dtype == torch.float64:
        return t.to(torch.float32)
    if t.dim() == 0 and t.dtype == torch.complex128:
        return t.to(torch.complex64)
    return t


def _need(names: Container[str], kernel: str) -> str:
    if kernel not in names:
        raise MissingKernel(kernel)
    return kernel


def _alpha_const(alpha: int | float | bool, alpha_type: torch.dtype) -> Const:
    if alpha_type.is_floating_point:
        return Const(metal_type_name(alpha_type), (float(alpha),))
    if alpha_type == torch.bool:
        return Const("bool", (bool(alpha),))
    if alpha_type.is_complex:
        value = complex(alpha)  # complex32 alphas go as half2, complex64 as float2 (the kernel's T)
        return Const(metal_type_name(alpha_type), (value.real, value.imag))
    value, info = int(alpha), torch.iinfo(alpha_type)
    if info.min == 0 and -(info.max + 1) <= value < 0:
        value += info.max + 1  # c10's checked conversion lets negatives wrap into unsigned types
    if not info.min <= value <= info.max:
        raise UnmodelledCall(f"alpha {alpha!r} overflows {alpha_type} (the host's conversion would throw)")
    return Const(metal_type_name(alpha_type), (value,))


def _registered_suffix(names: Container[str], prefix: str) -> str | None:
    """The one alpha type (or params struct) the library registers after `prefix`, if exactly one."""
    found = {n[len(prefix):] for n in names if n.startswith(prefix)} if isinstance(names, Iterable) else set()
    return found.pop() if len(found) == 1 else None


_PARAMS_DEFAULTS = ("nan", "posinf", "neginf")


class OpmathScalar(float):
    """A Scalar argument a params-route host passes at opmath float (`beta.to<float>()`, Note
    [params route] in port/plan/params.py), as opposed to an optional replacement value."""


def _opmath_params_const(fields: tuple[float, ...], registered: str | None) -> Const:
    """A params struct of Scalars, as a params-route host fills it: every field the call's value
    rounded to float (none dropped, none defaulted)."""
    if registered is None or registered in METAL_DTYPES:
        raise UnmodelledCall(f"{len(fields)} scalars for a kernel registered with {registered or 'no'} params struct")
    values = tuple(float(torch.tensor(float(v), dtype=torch.float64).to(torch.float32)) for v in fields)
    return Const(registered, values, fields="float")


def _params_const(fields: tuple[float | None, ...], registered: str | None, out: torch.dtype) -> Const:
    """A params struct of replacement values, as nan_to_num's host fills NanToNumParams<float>: each
    field converted to the output's (real) dtype and carried as float; unset ones get 0, the dtype's
    largest and its lowest finite value. A struct of Scalars only is `_opmath_params_const`."""
    if fields and all(isinstance(f, OpmathScalar) for f in fields):
        return _opmath_params_const(tuple(float(f) for f in fields), registered)
    if registered is None or not registered.endswith("_float") or len(fields) != len(_PARAMS_DEFAULTS):
        raise UnmodelledCall(f"a params struct {registered or '(none registered)'} with {len(fields)} fields")
    real = out.to_real()
    if not real.is_floating_point:
        raise UnmodelledCall(f"a params struct for {out} outputs")
    info = torch.finfo(real)
    defaults = (0.0, info.max, info.min)
    values = tuple(float(torch.tensor(d if v is None else v, dtype=torch.float64).to(real))
                   for v, d in zip(fields, defaults))
    return Const(registered, values, fields="float")


def _strided_2d(it: Iteration) -> tuple[int, int]:
    inner = it.geometry.shape[0]
    return (inner, it.geometry.numel // inner)


def _ilp(out: torch.Tensor, g: Geometry, force: str | None) -> bool:
    """Whether a dense launch that may run ILP_PER_THREAD elements a thread does: for floating outputs
    from ILP_THRESHOLD elements, unless `force` ("ilp" or "scalar") pins it, as the host's bench override does."""
    if force is not None:
        return force == "ilp"
    return out.dtype.is_floating_point and g.numel >= ILP_THRESHOLD


def _ilp_launch(kernel: str, buffers: tuple[Buffer, ...], g: Geometry, tensors: tuple[torch.Tensor, ...]) -> Launch:
    """A dense ILP kernel's launch: the buffers and numel, one thread per ILP_PER_THREAD elements."""
    return Launch(kernel, (*buffers, Const("uint", (g.numel,))), (-(-g.numel // ILP_PER_THREAD),), tensors)


def _sizes_strides(g: Geometry, operands: int) -> tuple[Const, ...]:
    """A strided kernel's sizes, then the byte strides of the first `operands` operands (output first)."""
    return (Const("long*", g.shape), *(Const("long*", g.strides[k]) for k in range(operands)))


def plan_unary(name: str, names: Container[str], it: Iteration, inp: torch.Tensor, *,
               alpha: int | float | bool | tuple[float | None, ...] | None = None,
               alpha_type: torch.dtype | None = None,
               force: str | None = None) -> Launch:
    """exec_unary_kernel: dense (ILP or one element per thread), strided (2-D grid), castout fallback.

    `force` ("ilp" or "scalar") pins the dense flavour, as the host's bench override does. Every
    flavour but ILP takes the two buffers (and a strided one its geometry) and differs only in the
    kernel and the constants after them (`tail`).
    """
    g, out = it.geometry, it.output
    contiguous = g.is_contiguous()
    o, i = metal_type_name(out.dtype), metal_type_name(inp.dtype)
    layout = "dense" if contiguous else "strided"
    tensors = (out, inp)
    if alpha is not None:
        prefix = f"{name}_{layout}_{o}_{i}_"
        registered = _registered_suffix(names, prefix)
        if registered is not None and registered not in METAL_DTYPES and not isinstance(alpha, tuple):
            alpha = (OpmathScalar(alpha),)  # one Scalar in a params struct
        if isinstance(alpha, tuple):
            a = _params_const(alpha, registered, out.dtype)
        else:
            wanted = alpha_type or inp.dtype
            if registered in METAL_DTYPES and f"{prefix}{metal_type_name(wanted)}" not in names:
                wanted = METAL_DTYPES[registered]  # the one type the host passes (polygamma: ScalarType::Int)
            a = _alpha_const(alpha, wanted)
        kernel, tail = _need(names, prefix + a.c_type), ((a,) if contiguous else (Const("uint", (g.ndim,)), a))
    else:
        ilp = contiguous and _ilp(out, g, force)
        direct = f"{name}_{'dense' if ilp else 'dense_scalar' if contiguous else 'strided'}_{o}_{i}"
        if direct in names and ilp:
            return _ilp_launch(direct, (Buffer(0), Buffer(1)), g, tensors)
        if direct in names:
            kernel, tail = direct, (() if contiguous else (Const("uint", (g.ndim,)),))
        else:  # castout: the output's element size (dense) or ndim (strided) beside its ScalarType
            code = scalar_type_code(out.dtype)
            kernel = _need(names, f"{name}_{layout}_castout_{i}")
            tail = (Const("uint2", (out.element_size() if contiguous else g.ndim, code)),)
    if contiguous:
        return Launch(kernel, (Buffer(0), Buffer(1), *tail), (g.numel,), tensors)
    return Launch(kernel, (Buffer(0), Buffer(1), *_unary_strided(g), *tail), _strided_2d(it), tensors)


def _unary_strided(g: Geometry) -> tuple[Const, Const, Const]:
    return (Const("long*", g.shape), Const("long*", g.strides[1]), Const("long*", g.strides[0]))


def is_dense_broadcastable(src: torch.Tensor, into: torch.Tensor) -> bool:
    """`src` is contiguous and equals `into` on trailing dims up to the first mismatch, then 1s."""
    if not (src.is_contiguous() and into.is_contiguous()):
        return False
    mismatched = False
    for d in range(src.dim()):
        if mismatched:
            if src.shape[-d - 1] != 1:
                return False
            continue
        mismatched = src.shape[-d - 1] != into.shape[-d - 1]
    return True


def plan_binary(name: str, names: Container[str], it: Iteration, a: torch.Tensor, b: torch.Tensor, *,
                common: torch.dtype, alpha: int | float | bool | None = None,
                alpha_type: torch.dtype | None = None, force: str | None = None) -> Launch:
    """exec_binary_kernel for an output of the kernel's natural dtype (no `_castout_` path)."""
    g, out = it.geometry, it.output
    a, b = _host_scalar(a), _host_scalar(b)
    cast = a.dtype != b.dtype
    special, lhs = _special_operand(a, b, out)
    if special == "scalar" and cast:
        tensor_dt, scalar_dt = (b.dtype, a.dtype) if lhs else (a.dtype, b.dtype)
        if tensor_dt == common and not (scalar_dt.is_floating_point or scalar_dt.is_complex) \
                and common.to_real() == torch.float32:
            a, b = (a.to(common), b) if lhs else (a, b.to(common))
            cast = False
    tensors = (out, a, b)
    al = _alpha_const(alpha, alpha_type or (out.dtype if cast else common)) if alpha is not None else None
    suffix_a = f"_{al.c_type}" if al else ""
    alphas = (al,) if al else ()
    o = metal_type_name(out.dtype)
    cast_types = f"{o}_{metal_type_name(common if out.dtype == torch.bool else out.dtype)}"
    extra = (*alphas, _sizes_types(a, b)) if cast else alphas
    bufs = (Buffer(0), Buffer(1), Buffer(2))
    if special is not None:  # a special left operand: `_dense_scalar_lhs`, `_dense_broadcast_rhs` (the host's names)
        t = b if lhs else a
        side = ("_lhs" if special == "scalar" else "_rhs") if lhs else ""
        stem = f"_dense_{special}{side}_cast_{cast_types}" if cast else \
            f"_dense_{special}{side}_{o}_{metal_type_name(t.dtype)}"
        numel = () if special == "scalar" else (Const("long", ((a if lhs else b).numel(),)),)
        return Launch(_need(names, name + stem + suffix_a), (*bufs, *numel, *extra), (g.numel,), tensors)
    contiguous = g.is_contiguous()
    ilp = contiguous and not cast and al is None and _ilp(out, g, force)
    flavour = ("dense_ilp4" if ilp else "dense") if contiguous else "strided"
    kernel = _need(names, name + (f"_{flavour}_cast_{cast_types}" if cast else
                                  f"_{flavour}_{o}_{metal_type_name(a.dtype)}") + suffix_a)
    if contiguous:
        return _ilp_launch(kernel, bufs, g, tensors) if ilp else Launch(kernel, (*bufs, *extra), (g.numel,), tensors)
    return Launch(kernel, (*bufs, *alphas, *_binary_geometry(g, a, b, out, cast)), (g.numel,), tensors)


def _sizes_types(a: torch.Tensor, b: torch.Tensor) -> Const:
    """What a dense cast binary kernel reads after the buffers: the inputs' element sizes and ScalarTypes."""
    return Const("uint4", (a.element_size(), b.element_size(), scalar_type_code(a.dtype), scalar_type_code(b.dtype)))


def _binary_geometry(g: Geometry, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, cast: bool) -> tuple[Const, ...]:
    """A strided binary kernel's geometry: sizes, three byte strides, then ndim and the inputs' (and,
    casting, the output's) ScalarTypes. The host sets all four ints; a non-cast kernel reads three."""
    types = (g.ndim, scalar_type_code(a.dtype), scalar_type_code(b.dtype))
    pack = Const("uint4", (*types, scalar_type_code(out.dtype))) if cast else Const("uint3", types)
    return (*_sizes_strides(g, 3), pack)


def _special_operand(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> tuple[str | None, bool]:
    """("scalar" or "broadcast", whether it is the left operand) when one operand is a dense
    broadcast of a full, contiguous other (the host's `_dense_scalar`/`_dense_broadcast` kernels),
    else (None, False)."""
    a_full, b_full = a.numel() == out.numel(), b.numel() == out.numel()
    if is_dense_broadcastable(a, out) and not a_full and b_full and b.is_contiguous() and out.is_contiguous():
        return ("scalar" if a.numel() == 1 else "broadcast"), True
    if is_dense_broadcastable(b, out) and not b_full and a_full and a.is_contiguous() and out.is_contiguous():
        return ("scalar" if b.numel() == 1 else "broadcast"), False
    return None, False


def plan_binary_with_params(name: str, names: Container[str], it: Iteration, a: torch.Tensor, b: torch.Tensor,
                            params: tuple[float, ...]) -> Launch:
    """exec_binary_kernel_with_params (Note [params route], metalport/port/plan/params.py): no scalar or
    broadcast fast paths; `<name>_dense_<out>_<in>_<P>` (`_dense_cast_<out>_<P>` when the inputs'
    dtypes differ, with their sizes and types) or the strided flavour with the geometry after the
    struct, one thread per element."""
    g, out = it.geometry, it.output
    a, b = _host_scalar(a), _host_scalar(b)
    cast = a.dtype != b.dtype
    o = metal_type_name(out.dtype)
    flavour = "dense" if g.is_contiguous() else "strided"
    prefix = f"{name}_{flavour}_cast_{o}_" if cast else f"{name}_{flavour}_{o}_{metal_type_name(a.dtype)}_"
    p = _opmath_params_const(params, _registered_suffix(names, prefix))
    kernel = _need(names, prefix + p.c_type)
    bufs, tensors = (Buffer(0), Buffer(1), Buffer(2)), (out, a, b)
    if flavour == "dense":
        return Launch(kernel, (*bufs, p, *((_sizes_types(a, b),) if cast else ())), (g.numel,), tensors)
    return Launch(kernel, (*bufs, p, *_binary_geometry(g, a, b, out, cast)), (g.numel,), tensors)


def plan_ternary(name: str, names: Container[str], it: Iteration, a: torch.Tensor, b: torch.Tensor,
                 c: torch.Tensor) -> Launch:
    """exec_ternary_kernel: dense or strided, `_cast_<out>` when any dtype differs."""
    g, out = it.geometry, it.output
    a, b, c = _host_scalar(a), _host_scalar(b), _host_scalar(c)
    cast = len({a.dtype, b.dtype, c.dtype, out.dtype}) > 1
    contiguous = g.is_contiguous()
    flavour = "dense" if contiguous else "strided"
    o = metal_type_name(out.dtype)
    kernel = _need(names, f"{name}_{flavour}_cast_{o}" if cast else f"{name}_{flavour}_{o}_{metal_type_name(a.dtype)}")
    bufs = (Buffer(0), Buffer(1), Buffer(2), Buffer(3))
    tensors = (out, a, b, c)
    codes = tuple(scalar_type_code(t.dtype) for t in (a, b, c))
    if contiguous:
        extra = (Const("uint3", tuple(t.element_size() for t in (a, b, c))), Const("uint3", codes)) if cast else ()
        return Launch(kernel, (*bufs, *extra), (g.numel,), tensors)
    geometry = (*_sizes_strides(g, 4), Const("uint", (g.ndim,)))
    extra = (Const("uint4", (*codes, scalar_type_code(out.dtype))),) if cast else ()
    return Launch(kernel, (*bufs, *geometry, *extra), (g.numel,), tensors)


def plan_two_outputs(name: str, names: Container[str], it: Iteration, second: torch.Tensor,
                     inp: torch.Tensor) -> Launch:
    """A unary kernel writing two outputs (frexp: mantissa, exponent), as its kernels declare them:
    `<name>_dense_<T>(out0, out1, input)` over a dense iterator, else `<name>_strided_<T>(out0, out1,
    input, sizes, out0 strides, out1 strides, input strides, ndim)` with byte strides, one thread per
    element. `second` is laid out like `it.output` (TensorIterator gives both outputs one order)."""
    g, first = it.geometry, it.output
    t = metal_type_name(inp.dtype)
    tensors = (first, second, inp)
    if g.is_contiguous():
        return Launch(_need(names, f"{name}_dense_{t}"), (Buffer(0), Buffer(1), Buffer(2)), (g.numel,), tensors, 2)
    scale = second.element_size() / first.element_size()
    strides1 = tuple(int(s * scale) for s in g.strides[0])
    args = (Buffer(0), Buffer(1), Buffer(2), Const("long*", g.shape), Const("long*", g.strides[0]),
            Const("long*", strides1), Const("long*", g.strides[1]), Const("uint", (g.ndim,)))
    return Launch(_need(names, f"{name}_strided_{t}"), args, (g.numel,), tensors, 2)


def opmath_dtype(dtype: torch.dtype) -> torch.dtype:
    """at::toOpMathType: the precision a scalar argument reaches a kernel at."""
    return {torch.float16: torch.float32, torch.bfloat16: torch.float32,
            torch.complex32: torch.complex64}.get(dtype, dtype)


def plan_ternary_alpha(name: str, names: Container[str], it: Iteration, a: torch.Tensor, b: torch.Tensor,
                       c: torch.Tensor, *, common: torch.dtype, alpha: int | float | bool | complex) -> Launch:
    """exec_ternary_kernel_with_alpha (the port's PointwiseOps.mm): `alpha` at opmath precision after
    the operands; kernels picked by the common dtype, `dense` when operands and output are
    contiguous and of it, else `strided_cast` (cast to the output's dtype on store)."""
    g, out = it.geometry, it.output
    a, b, c = _host_scalar(a), _host_scalar(b), _host_scalar(c)
    common = torch.float32 if common == torch.float64 else torch.complex64 if common == torch.complex128 else common
    al = _alpha_const(alpha, opmath_dtype(common))
    o = metal_type_name(common)
    bufs = (Buffer(0), Buffer(1), Buffer(2), Buffer(3))
    tensors = (out, a, b, c)
    if g.is_contiguous() and a.dtype == b.dtype == c.dtype == out.dtype == common:
        return Launch(_need(names, f"{name}_dense_{o}_{o}_{al.c_type}"), (*bufs, al), (g.numel,), tensors)
    geometry = (*_sizes_strides(g, 4), Const("uint4", (g.ndim, *(scalar_type_code(t.dtype) for t in (a, b, c)))),
                Const("uint", (scalar_type_code(out.dtype),)))
    return Launch(_need(names, f"{name}_strided_cast_{o}_{al.c_type}"), (*bufs, al, *geometry), (g.numel,),
                  tensors)


def halves_input(a: torch.Tensor, b: torch.Tensor, dim: int) -> torch.Tensor:
    """The tensor a backward over halves receives (Note [grad over halves], port/write/halves.py): `a` and
    `b` joined along `dim`, laid out in `a`'s order of dimensions, and strided with gaps when `a` is
    (so a case's layout reaches the kernel as the strides of one tensor)."""
    joined = torch.cat([a, b], dim)
    if a.dim() == 0 or a.is_contiguous() or joined.numel() == 0:
        return joined
    order = sorted(range(a.dim()), key=lambda d: (a.stride(d), a.shape[d]), reverse=True)  # outermost first
    back = sorted(range(a.dim()), key=lambda d: order[d])
    laid = joined.permute(order).contiguous().permute(back)
    if storage_extent(a) == a.numel():  # dense: no gaps between its elements
        return laid
    inner = order[-1]
    wide = list(laid.shape)
    wide[inner] *= 2
    spread = torch.empty([wide[d] for d in order], dtype=laid.dtype).permute(back)
    view = spread[(slice(None),) * inner + (slice(None, None, 2),)]
    view.copy_(laid)
    return view


def plan_halves_backward(name: str, names: Container[str], a: torch.Tensor, b: torch.Tensor, grad: torch.Tensor,
                         dim: int, out_dtype: torch.dtype) -> tuple[Launch | None, torch.Tensor]:
    """(the launch, the poisoned output) of a backward over the halves of its input as the port's host
    makes it (Note [grad over halves], port/write/halves.py): `grad_input` allocated of the joined shape
    (contiguous), then `<name>_halves_<T>(grad_input, input, grad_output, sizes, grad_input strides,
    input strides, grad_output strides, grad_input half offset, input half offset, ndim)` with byte
    strides over the halved shape, innermost first, one thread per element of it; no launch when it
    is empty. UnmodelledCall when the operands' dtypes differ (the host takes one type)."""
    from metalport.checks.host.poison import poisoned

    full = halves_input(a, b, dim)
    if len({full.dtype, grad.dtype, out_dtype}) > 1:
        raise UnmodelledCall(f"{name} over {full.dtype} with a {grad.dtype} gradient (the host takes one type)")
    out = poisoned(max(full.numel(), 1), out_dtype)[:full.numel()].view(full.shape)
    if grad.numel() == 0:
        return None, out
    if tuple(grad.shape) != tuple(a.shape):
        raise UnmodelledCall(f"{name}'s gradient {tuple(grad.shape)} is not the halved shape {tuple(a.shape)}")
    kernel = _need(names, f"{name}_halves_{metal_type_name(full.dtype)}")
    dims = list(reversed(range(full.dim())))  # innermost first
    half = full.shape[dim] // 2

    def strides(t: torch.Tensor) -> tuple[int, ...]:
        return tuple(t.stride(d) * t.element_size() for d in dims)

    args = (Buffer(0), Buffer(1), Buffer(2), Const("long*", tuple(a.shape[d] for d in dims)),
            Const("long*", strides(out)), Const("long*", strides(full)), Const("long*", strides(grad)),
            Const("long", (out.stride(dim) * half * out.element_size(),)),
            Const("long", (full.stride(dim) * half * full.element_size(),)), Const("uint", (full.dim(),)))
    return Launch(kernel, args, (grad.numel(),), (out, full, grad)), out
