"""Bind Python arguments to a kernel's `[[buffer(n)]]` parameters, as `torch.mps.compile_shader`
does: tensors are buffers (written back when the parameter is in `device` memory), Python
scalars and lists of them are packed as the parameter's C type into a constant buffer."""

from __future__ import annotations

import dataclasses

import math
import numbers
import operator
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from metalport.emulate.kernels import KernelArg, KernelInfo
from metalport.errors import KernelArgumentError
from metalport.metal_types import METAL_TYPES, Kind

# Metal element type -> (struct format of one component, torch dtype name).
SCALARS: dict[str, tuple[str, str]] = {t.name: (t.struct_format, t.torch_name) for t in METAL_TYPES
                                       if t.struct_format is not None}
# Vector types that a tensor dtype stands for (complex numbers are float2/half2 in the kernels).
VECTOR_DTYPES = {t.name: t.torch_name for t in METAL_TYPES if t.kind is Kind.COMPLEX}
MAX_GROUP_THREADS = 1024  # maxTotalThreadsPerThreadgroup on Apple GPUs


@dataclass(frozen=True)
class TensorBuffer:
    """A tensor's bytes: address of the first element, byte span, and whether to copy back."""

    tensor: Any
    address: int
    nbytes: int
    write_back: bool
    offset: int = 0  # bytes from the buffer's start to the kernel's pointer (BufferOffset)


@dataclass(frozen=True)
class BytesBuffer:
    """A constant buffer packed from Python values."""

    data: bytes


@dataclass(frozen=True)
class BufferOffset:
    """A contiguous tensor bound `offset` elements in, as Metal's `setBuffer:offset:` binds a
    buffer: the kernel's pointer is at element `offset`, and the elements before it are memory of
    the same buffer (a kernel indexing below 0 reaches them, as on a GPU)."""

    tensor: Any
    offset: int


@dataclass(frozen=True)
class TensorList:
    """Tensors passed to one parameter as an array of device addresses (a Metal argument buffer
    of `device T*`, as multi-tensor kernels take): each tensor becomes its own buffer and the
    worker writes its address into the array; `writable` tensors are copied back."""

    tensors: tuple[Any, ...]
    writable: bool = False

    def __init__(self, tensors: Sequence[Any], *, writable: bool = False) -> None:
        object.__setattr__(self, "tensors", tuple(tensors))
        object.__setattr__(self, "writable", writable)


@dataclass(frozen=True)
class ListBuffer:
    """A TensorList bound to a parameter: the tensors' buffers, whose addresses fill the array."""

    tensors: tuple[TensorBuffer, ...]


@dataclass(frozen=True)
class PreparedCall:
    """One kernel call ready for the worker: buffers by buffer index, grid and group sizes."""

    kernel: int
    name: str
    buffers: tuple[TensorBuffer | BytesBuffer | ListBuffer | None, ...]
    threads: tuple[int, int, int]
    group: tuple[int, int, int]


def _dims(value: int | Sequence[int] | None, what: str, kernel: str) -> tuple[int, int, int] | None:
    """An int or 1-3 ints as a 3-tuple padded with 1s."""
    if value is None:
        return None
    try:
        dims = [operator.index(value)] if not isinstance(value, (list, tuple)) else \
            [operator.index(d) for d in value]
    except TypeError:
        dims = []
    if not 1 <= len(dims) <= 3 or not all(d >= 0 for d in dims):
        raise KernelArgumentError(f"{kernel}: {what}={value!r} must be an int or 1-3 non-negative ints")
    return (dims + [1, 1])[0], (dims + [1, 1])[1], (dims + [1, 1])[2]


def _bfloat_bits(value: float) -> int:
    """Round a float to bfloat16 (nearest even) and return its bits."""
    (bits,) = struct.unpack("<I", struct.pack("<f", value))
    if math.isnan(value):
        return ((bits >> 16) | 0x40) & 0xFFFF
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _plain(value: numbers.Real) -> bool | int | float:
    """A numpy/Python number as a Python bool, int or float."""
    if isinstance(value, (bool, int, float)):
        return value
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def pack_values(values: Sequence[int | float | bool], c_type: str, *, where: str,
                single: bool = False) -> bytes:
    """Pack Python numbers as `c_type` (a scalar or vector name like `uint3`, padded as in Metal).

    `single`: the parameter is one value (a reference), so exactly one element's worth is needed."""
    base, width = c_type.rstrip("234"), int(c_type[-1]) if c_type[-1] in "234" else 1
    if base not in SCALARS:
        raise KernelArgumentError(f"{where}: cannot pack a Python value as '{c_type}'; pass a tensor")
    if (single and len(values) != width) or len(values) % width or not values:
        wanted = f"{width} value{'s' if width > 1 else ''}" if single else f"a non-empty multiple of {width} values"
        raise KernelArgumentError(f"{where}: '{c_type}' needs {wanted}, got {len(values)}")
    fmt = SCALARS[base][0]
    out = bytearray()
    for value in values:
        if fmt in "bBhHiIqQ" and isinstance(value, float):
            raise KernelArgumentError(f"{where}: {value!r} is a float but the parameter is '{c_type}'")
        try:
            if fmt == "bf":
                out += struct.pack("<H", _bfloat_bits(float(value)))
            else:
                out += struct.pack("<" + fmt, value)
        except (struct.error, OverflowError) as err:
            raise KernelArgumentError(f"{where}: {value!r} does not fit '{c_type}' ({err})") from None
    if width == 3:  # a 3-vector occupies the space of a 4-vector
        elem = len(out) // max(1, len(values))
        padded = bytearray()
        for i in range(0, len(values), 3):
            padded += out[i * elem:(i + 3) * elem] + bytes(elem)
        out = padded
    return bytes(out)


def _tensor_buffer(tensor: Any, arg: KernelArg, c_type: str, where: str) -> TensorBuffer:
    """Check a tensor against a buffer parameter and describe its bytes."""
    if tensor.device.type != "cpu":
        raise KernelArgumentError(f"{where}: tensor is on {tensor.device}; the emulator takes CPU tensors")
    dtype = str(tensor.dtype).replace("torch.", "")
    expected = SCALARS[c_type][1] if c_type in SCALARS else VECTOR_DTYPES.get(c_type)
    if expected is not None and dtype != expected:
        raise KernelArgumentError(f"{where}: tensor dtype {dtype} does not match the buffer's element type "
                                  f"'{c_type}' (expects {expected})")
    if any(s < 0 for s in tensor.stride()):
        raise KernelArgumentError(f"{where}: negative strides are not supported")
    span = 0 if tensor.numel() == 0 else 1 + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride()))
    return TensorBuffer(tensor=tensor, address=tensor.data_ptr(), nbytes=span * tensor.element_size(),
                        write_back=arg.address_space == "device")


def _list_buffer(value: TensorList, arg: KernelArg, where: str) -> ListBuffer:
    """Check a TensorList against a parameter that takes an array of addresses."""
    if not value.tensors:
        raise KernelArgumentError(f"{where}: an empty TensorList; launch nothing instead")
    if not arg.is_pointer and arg.address_space != "constant":
        raise KernelArgumentError(f"{where}: a TensorList needs a pointer or constant reference parameter")
    holder = KernelArg(arg.name, "?", "device" if value.writable else "constant", True, arg.attribute, arg.index)
    return ListBuffer(tuple(_tensor_buffer(t, holder, "?", f"{where} tensor {i}")
                            for i, t in enumerate(value.tensors)))


def _bind(arg: KernelArg, value: Any, c_type: str, where: str) -> tuple[TensorBuffer | BytesBuffer | ListBuffer, int]:
    """One argument's buffer, and how many data elements it offers the grid (0 for bytes)."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return _tensor_buffer(value, arg, c_type, where), value.numel()
    if isinstance(value, BufferOffset):
        t = value.tensor
        if not (hasattr(t, "data_ptr") and t.is_contiguous() and 0 <= value.offset <= t.numel()):
            raise KernelArgumentError(f"{where}: a BufferOffset takes a contiguous tensor and an offset in "
                                      f"[0, numel], got {value.offset} into {getattr(t, 'numel', lambda: '?')()}")
        buf = _tensor_buffer(t, arg, c_type, where)
        return dataclasses.replace(buf, offset=value.offset * t.element_size()), t.numel() - value.offset
    if isinstance(value, TensorList):
        return _list_buffer(value, arg, where), sum(t.numel() for t in value.tensors)
    if isinstance(value, numbers.Real):
        return BytesBuffer(pack_values([_plain(value)], c_type, where=where, single=not arg.is_pointer)), 0
    if isinstance(value, (list, tuple)) and all(isinstance(v, numbers.Real) for v in value):
        return BytesBuffer(pack_values([_plain(v) for v in value], c_type, where=where,
                                       single=not arg.is_pointer)), 0
    raise KernelArgumentError(f"{where}: expected a tensor, a number or a list of numbers, "
                              f"got {type(value).__name__}")


def prepare(kernel: int, info: KernelInfo, param_types: Sequence[str], args: Sequence[Any],
            threads: int | Sequence[int], group_size: int | Sequence[int] | None) -> PreparedCall:
    """Validate a call of kernel `info` and bind its arguments by buffer index."""
    name = info.host_name
    buffers = info.buffers
    if len(args) != len(buffers):
        listed = ", ".join(f"{a.name or '?'} [[buffer({a.index})]]" for a in buffers)
        raise KernelArgumentError(f"{name} takes {len(buffers)} arguments ({listed}), got {len(args)}")
    grid = _dims(threads, "threads", name)
    assert grid is not None
    # torch.mps's default: one row of min(threads, maxTotalThreadsPerThreadgroup)
    group = _dims(group_size, "group_size", name) or (max(1, min(grid[0], MAX_GROUP_THREADS)), 1, 1)
    if 0 in group or group[0] * group[1] * group[2] > MAX_GROUP_THREADS:
        raise KernelArgumentError(f"{name}: group_size={group_size!r} must be positive and at most "
                                  f"{MAX_GROUP_THREADS} threads in all")
    slots: dict[int, TensorBuffer | BytesBuffer | ListBuffer] = {}
    largest = 0
    for arg, value in zip(buffers, args):
        c_type = param_types[info.args.index(arg)]
        c_type = arg.c_type if c_type == "?" else c_type
        where = f"{name} argument {arg.name or arg.index} [[buffer({arg.index})]]"
        slots[arg.index or 0], elements = _bind(arg, value, c_type, where)
        largest = max(largest, elements)
    total = grid[0] * grid[1] * grid[2]
    for slot in info.grid_indexed:
        buf = slots.get(slot)
        if isinstance(buf, TensorBuffer) and buf.tensor.numel() < total:
            arg = next(a for a in buffers if a.index == slot)
            raise KernelArgumentError(f"{name} argument {arg.name} [[buffer({slot})]]: tensor has "
                                      f"{buf.tensor.numel()} elements but the kernel indexes it by thread "
                                      f"position over {total} threads")
    tensors = [b for b in slots.values() if isinstance(b, TensorBuffer)]
    # Kernels with atomic buffers (histograms, counters) legitimately run more threads than elements.
    atomic = any("atomic" in a.c_type for a in buffers)
    # Multi-tensor kernels cut each tensor into whole chunks, so the last chunk of each is padded.
    chunked = any(isinstance(b, ListBuffer) for b in slots.values())
    if tensors and not info.uses_threadgroup and not atomic and not chunked and total > largest:
        raise KernelArgumentError(f"{name}: grid of {total} threads {grid} is larger than the data "
                                  f"(largest tensor argument has {largest} elements)")
    width = max(slots, default=-1) + 1
    return PreparedCall(kernel=kernel, name=name, buffers=tuple(slots.get(i) for i in range(width)),
                        threads=grid, group=group)
