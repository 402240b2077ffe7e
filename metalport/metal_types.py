"""The Metal element types a port may use, one row each with every fact metalport knows about it:
its torch dtype, its c10 `ScalarType`, how one component packs, its opmath type and its kind.

Every other view (a dict from Metal name to torch dtype name, the floating or complex names, the
`ScalarType` spellings the host code writes) is derived from `METAL_TYPES` where it is used, so
a type is added or corrected in one place. Importing this module does not import torch: rows name
their dtype (`float32`), and `torch_dtype` turns a name into the object when a caller needs it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["COMPLEX", "FLOATING", "Kind", "METAL_TYPES", "MetalType", "by_name", "torch_dtype"]


class Kind(enum.Enum):
    """What arithmetic a Metal type does."""

    FLOATING = "floating"
    COMPLEX = "complex"  # a two-component vector standing for a complex number
    SIGNED = "signed"
    UNSIGNED = "unsigned"
    BOOL = "bool"


@dataclass(frozen=True)
class MetalType:
    """One Metal element type and what it is on the torch and c10 sides."""

    name: str  # the Metal spelling (`float`, `half2`), also in kernel host names (`exp_dense_half`)
    torch_name: str  # the torch dtype it stands for (`float32`): `getattr(torch, torch_name)`
    scalar_type: str  # the c10::ScalarType enumerator the host code writes (`kFloat`)
    scalar_code: int  # that enumerator's value (the codes the cast kernels switch on)
    kind: Kind
    bits: int  # size of one element
    # struct format of one value as the emulator packs it (`bf` is the emulator's own bfloat16
    # code); None for the vector types, which pack as two components of their element type.
    struct_format: str | None
    c_type: str | None  # the C++ type of a params-struct field of this type; None: no field has it
    opmath: str  # the Metal type of at::toOpMathType: the precision a scalar argument arrives at
    # Position in the dtype lists conformance reports (registered dtypes, in `checks/host/families`):
    # floating, bool, the byte and signed integers by width, complex, then the wider unsigned ones.
    report_rank: int

    @property
    def barebones(self) -> bool:
        """True for torch's uint16, uint32 and uint64: dtypes with few kernels on any backend."""
        return self.kind is Kind.UNSIGNED and self.bits > 8


# Note [one Metal type table]: the rows are in the order ports list their types (and so the order
# of the REGISTER lines a recipe writes and of spec error hints); keep it.
METAL_TYPES: tuple[MetalType, ...] = (
    MetalType("float", "float32", "kFloat", 6, Kind.FLOATING, 32, "f", "float", "float", 0),
    MetalType("half", "float16", "kHalf", 5, Kind.FLOATING, 16, "e", None, "float", 1),
    MetalType("bfloat", "bfloat16", "kBFloat16", 15, Kind.FLOATING, 16, "bf", None, "float", 2),
    MetalType("long", "int64", "kLong", 4, Kind.SIGNED, 64, "q", "int64_t", "long", 8),
    MetalType("int", "int32", "kInt", 3, Kind.SIGNED, 32, "i", "int32_t", "int", 7),
    MetalType("short", "int16", "kShort", 2, Kind.SIGNED, 16, "h", None, "short", 6),
    MetalType("char", "int8", "kChar", 1, Kind.SIGNED, 8, "b", None, "char", 5),
    MetalType("uchar", "uint8", "kByte", 0, Kind.UNSIGNED, 8, "B", None, "uchar", 4),
    MetalType("bool", "bool", "kBool", 11, Kind.BOOL, 8, "?", "bool", "bool", 3),
    MetalType("float2", "complex64", "kComplexFloat", 9, Kind.COMPLEX, 64, None, None, "float2", 9),
    MetalType("half2", "complex32", "kComplexHalf", 8, Kind.COMPLEX, 32, None, None, "float2", 10),
    MetalType("ulong", "uint64", "kUInt64", 29, Kind.UNSIGNED, 64, "Q", "uint64_t", "ulong", 13),
    MetalType("uint", "uint32", "kUInt32", 28, Kind.UNSIGNED, 32, "I", "uint32_t", "uint", 12),
    MetalType("ushort", "uint16", "kUInt16", 27, Kind.UNSIGNED, 16, "H", None, "ushort", 11),
)

FLOATING: tuple[str, ...] = tuple(t.name for t in METAL_TYPES if t.kind is Kind.FLOATING)
COMPLEX: tuple[str, ...] = tuple(t.name for t in METAL_TYPES if t.kind is Kind.COMPLEX)
_BY_NAME = {t.name: t for t in METAL_TYPES}


def by_name(name: str) -> MetalType:
    """The row of Metal type `name`; KeyError if it is not one."""
    return _BY_NAME[name]


def torch_dtype(torch_name: str) -> torch.dtype:
    """The torch dtype object named `torch_name` (`float32`), importing torch only now."""
    import torch

    return getattr(torch, torch_name)
