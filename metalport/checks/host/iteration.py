"""TensorIterator's view of a pointwise call: the output it allocates and the iteration geometry.

Our own reimplementation of what ATen's TensorIterator decides before an MPS kernel runs:
the broadcast shape, byte strides per operand (output first), the dimension order (innermost
first, chosen by the inputs' strides), the output layout it allocates to follow that order, and the
coalesced shape and strides the Metal kernels receive. Inputs keep their own dtypes (off the CPU,
TensorIterator leaves the casts to the kernel).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Geometry:
    """One iterator: `shape` innermost first, `strides[k]` byte strides of operand k (0 = output)."""

    shape: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]
    element_sizes: tuple[int, ...]
    numel: int

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def has_contiguous_first_dim(self) -> bool:
        """Every operand steps by its own element size along the innermost dimension."""
        if self.ndim == 0:
            return True
        return all(s[0] == e for s, e in zip(self.strides, self.element_sizes))

    def is_contiguous(self) -> bool:
        """TensorIterator's `is_contiguous()`: one element, or one dense dimension for all operands."""
        if self.numel == 1:
            return True
        return self.ndim == 1 and self.has_contiguous_first_dim()


def _byte_strides(t: torch.Tensor, shape: Sequence[int]) -> list[int]:
    """Strides of `t` broadcast to `shape`, in bytes; broadcast dimensions get 0."""
    n, k = len(shape), t.dim()
    out = [0] * n
    for i in range(k):
        d = n - k + i
        if t.shape[i] == 1 and shape[d] != 1:
            continue
        out[d] = t.stride(i) * t.element_size()
    return out


def _permutation(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> list[int]:
    """Dimension order innermost first: insertion sort on the inputs' strides, as TensorIterator."""
    n = len(shape)
    perm = list(range(n - 1, -1, -1))

    def order(d0: int, d1: int) -> int:
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = order(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def allocate_output(shape: Sequence[int], perm: Sequence[int], dtype: torch.dtype,
                    buffer: Callable[[int, torch.dtype], torch.Tensor]) -> torch.Tensor:
    """An output laid out densely in iteration order `perm` (innermost first) over `buffer(n, dtype)`."""
    strides = [0] * len(shape)
    step = 1
    for d in perm:
        strides[d] = step
        step *= max(shape[d], 1)
    flat = buffer(max(step, 1), dtype)
    return flat.as_strided(tuple(shape), tuple(strides), 0)


def _coalesce(shape: list[int], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    if len(shape) <= 1:
        return shape, strides

    def can(d0: int, d1: int) -> bool:
        if shape[d0] == 1 or shape[d1] == 1:
            return True
        return all(st[d0] * shape[d0] == st[d1] for st in strides)

    prev = 0
    for d in range(1, len(shape)):
        if can(prev, d):
            if shape[prev] == 1:
                for st in strides:
                    st[prev] = st[d]
            shape[prev] *= shape[d]
        else:
            prev += 1
            if prev != d:
                for st in strides:
                    st[prev] = st[d]
                shape[prev] = shape[d]
    return shape[:prev + 1], [st[:prev + 1] for st in strides]


@dataclass(frozen=True)
class Iteration:
    """The output TensorIterator allocates (a poisoned view) and the geometry the kernel sees."""

    output: torch.Tensor
    geometry: Geometry


def build_iteration(inputs: Sequence[torch.Tensor], out_dtype: torch.dtype,
                    buffer: Callable[[int, torch.dtype], torch.Tensor]) -> Iteration:
    """Allocate the output of a pointwise op over `inputs` and compute the kernel's geometry.

    `inputs` are the iterator's input operands in order (0-dim tensors for scalars).
    """
    shape = tuple(torch.broadcast_shapes(*(t.shape for t in inputs)))
    in_strides = [_byte_strides(t, shape) for t in inputs]
    perm = _permutation(shape, in_strides)
    output = allocate_output(shape, perm, out_dtype, buffer)
    strides = [_byte_strides(output, shape)] + in_strides
    sizes = [shape[d] for d in perm]
    permuted = [[st[d] for d in perm] for st in strides]
    sizes, permuted = _coalesce(sizes, permuted)
    numel = output.numel()
    geometry = Geometry(tuple(sizes), tuple(tuple(s) for s in permuted),
                        tuple(t.element_size() for t in (output, *inputs)), numel)
    return Iteration(output, geometry)


def storage_extent(t: torch.Tensor) -> int:
    """Elements from `t`'s first element to its last in storage (0 when empty)."""
    if t.numel() == 0:
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))


def flat_buffer(t: torch.Tensor) -> torch.Tensor:
    """The contiguous 1-D storage region a Metal buffer of `t` covers (aliases `t`'s storage); an
    empty tensor (a launch spec may bind one) covers nothing."""
    if t.numel() == 0:
        return t.reshape(0)
    n = max(storage_extent(t), 1)
    return t.as_strided((n,), (1,), t.storage_offset())
