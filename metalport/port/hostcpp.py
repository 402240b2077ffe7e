"""C++ spellings the host-code writers (`hostgen`, `hostgen_elementwise`) share: the C++ type of a
spec param field, the `ScalarType` of a Metal type name, and an entry's native signature."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchgen.model import FunctionSchema

C_TYPES = {"float": "float", "int": "int32_t", "uint": "uint32_t", "long": "int64_t", "ulong": "uint64_t",
           "bool": "bool"}
SCALAR_TYPES = {"float": "kFloat", "half": "kHalf", "bfloat": "kBFloat16", "long": "kLong", "int": "kInt",
                "short": "kShort", "char": "kChar", "uchar": "kByte", "bool": "kBool", "float2": "kComplexFloat",
                "half2": "kComplexHalf", "ulong": "kUInt64", "uint": "kUInt32", "ushort": "kUInt16"}


def native_signature(name: str, func: str) -> tuple[str, list[tuple[str, str]], FunctionSchema]:
    """(definition line named `name`, [(argument, C++ type)], parsed schema) of the `func:` line,
    with torchgen's `at::`/`::std::` qualifiers dropped as in PyTorch's `.mm` files."""
    from torchgen import local
    from torchgen.api.types import NativeSignature
    from torchgen.model import FunctionSchema

    schema = FunctionSchema.parse(func)
    sig = NativeSignature(schema, symint=False)
    with local.parametrize(use_const_ref_for_mutable_tensors=False, use_ilistref_for_tensor_lists=False):
        args = [(a.name, a.type.replace("::std::", "std::").replace("at::", "")) for a in sig.arguments()]
        defn = sig.defn(name=name).replace("::std::", "std::").replace("at::", "")
    return defn, args, schema
