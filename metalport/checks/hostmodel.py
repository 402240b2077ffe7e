"""Pieces of the MPS host side that conformance needs: output spec and kernel arguments.

Only what TensorIterator decides is modelled here (result dtype, broadcast shape) plus the
argument layout the strided kernels read (sizes and byte strides, innermost first).
Kernel flavour selection is not modelled yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

_METAL_TYPE: dict[torch.dtype, str] = {
    torch.float32: "float", torch.float16: "half", torch.bfloat16: "bfloat", torch.bool: "bool",
    torch.uint8: "uchar", torch.int8: "char", torch.int16: "short", torch.int32: "int",
    torch.int64: "long", torch.complex64: "float2",
}


@dataclass(frozen=True)
class OutputSpec:
    """Dtype and shape TensorIterator would give the output."""

    dtype: torch.dtype
    shape: tuple[int, ...]


def metal_type_name(dtype: torch.dtype) -> str:
    """The Metal spelling used in host names (`float`, `half`, `long`, ...)."""
    if dtype not in _METAL_TYPE:
        raise KeyError(f"no Metal type for {dtype}")
    return _METAL_TYPE[dtype]


def output_spec(*operands: torch.Tensor | bool | int | float, int_to_float: bool = False) -> OutputSpec:
    """Result dtype (torch.result_type over all operands) and broadcast shape of the tensors."""
    first = operands[0]
    if not isinstance(first, torch.Tensor):
        raise TypeError("the first operand must be a tensor")
    dtype = first.dtype
    for other in operands[1:]:
        # Folds pairwise from the first operand's category (0-dim or dimensioned).
        dtype = torch.result_type(torch.empty((0,) * min(first.dim(), 1), dtype=dtype), other)
    if int_to_float and not (dtype.is_floating_point or dtype.is_complex):
        dtype = torch.get_default_dtype()
    shapes = [tuple(t.shape) for t in operands if isinstance(t, torch.Tensor)]
    return OutputSpec(dtype, tuple(torch.broadcast_shapes(*shapes)))


def strided_args(t: torch.Tensor, shape: Sequence[int]) -> tuple[list[int], list[int]]:
    """Sizes and byte strides of `t` viewed at `shape`, innermost dimension first."""
    view = t.expand(*shape)
    sizes = list(reversed(view.shape))
    strides = [s * view.element_size() for s in reversed(view.stride())]
    return sizes, strides


FLAVOURS: tuple[str, ...] = ("dense", "strided", "dense_cast", "strided_cast", "dense_castout",
                             "strided_castout", "dense_scalar", "dense_scalar_lhs")


def host_name(op: str, flavour: str, out: torch.dtype, inp: torch.dtype | None = None) -> str:
    """Host name a REGISTER_*_OP macro gives one instantiation, e.g. `neg_dense_float_float`.

    Castout flavours carry only the input type.
    """
    if flavour not in FLAVOURS:
        raise ValueError(f"unknown kernel flavour {flavour!r}; expected one of {', '.join(FLAVOURS)}")
    if flavour.endswith("castout"):
        return f"{op}_{flavour}_{metal_type_name(out if inp is None else inp)}"
    return f"{op}_{flavour}_{metal_type_name(out)}_{metal_type_name(out if inp is None else inp)}"
