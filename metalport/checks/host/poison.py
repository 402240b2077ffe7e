"""Poisoned output buffers, so an element the kernel never writes cannot pass by accident.

Floating outputs are filled with a NaN carrying a payload no arithmetic produces; other dtypes
(integers, bool) with the byte 0xA5 (not a valid bool). An element still holding the poison where
torch expects something else was never written.
"""

from __future__ import annotations

import torch

_FLOAT_POISON: dict[torch.dtype, tuple[torch.dtype, int]] = {
    torch.float32: (torch.int32, 0x7FC0DEAD), torch.complex64: (torch.int32, 0x7FC0DEAD),
    torch.float16: (torch.int16, 0x7E5B), torch.complex32: (torch.int16, 0x7E5B),
    torch.bfloat16: (torch.int16, 0x7FDB), torch.float64: (torch.int64, 0x7FF8DEADBEEF0000),
}


def poisoned(n: int, dtype: torch.dtype) -> torch.Tensor:
    """A 1-D tensor of `n` poison elements of `dtype`."""
    flat = torch.empty(n, dtype=dtype)
    if dtype in _FLOAT_POISON:
        view, bits = _FLOAT_POISON[dtype]
        flat.view(view).fill_(bits)
    else:
        flat.view(torch.uint8).fill_(0xA5)
    return flat


def _bits(t: torch.Tensor) -> torch.Tensor:
    """Raw bits per element (complex: per component), as integers (bool as its byte)."""
    t = torch.view_as_real(t.contiguous()) if t.is_complex() else t.contiguous()
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(width)


def _holds_poison(t: torch.Tensor) -> torch.Tensor:
    """Per element of `t`, whether its bits are the poison's (complex: both components')."""
    hit = _bits(t) == _bits(poisoned(1, t.dtype))[0]
    return hit.all(dim=-1) if t.is_complex() else hit


def unwritten(actual: torch.Tensor, expected: torch.Tensor) -> int:
    """How many elements of `actual` still hold the poison where `expected` does not."""
    if actual.numel() == 0 or actual.shape != expected.shape or actual.dtype != expected.dtype:
        return 0
    return int((_holds_poison(actual) & ~_holds_poison(expected)).sum())


def overwritten(band: torch.Tensor) -> int:
    """How many elements of `band` (a part of a `poisoned` buffer) no longer hold the poison."""
    return int((~_holds_poison(band)).sum()) if band.numel() else 0
