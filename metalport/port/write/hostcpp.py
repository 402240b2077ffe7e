"""C++ spellings the host-code writers (`hostgen`, `hostgen_elementwise`, `hostgen_dims`) share: the
C++ type of a spec param field, the `ScalarType` of a Metal type name, an entry's native
signature, a params struct, the kernel-name line and the encoding block on the MPS stream."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metalport.metal_types import METAL_TYPES

if TYPE_CHECKING:
    from torchgen.model import FunctionSchema

    from metalport.port.spec.model import ParamSpec

C_TYPES = {t.name: t.c_type for t in METAL_TYPES if t.c_type is not None}
SCALAR_TYPES = {t.name: t.scalar_type for t in METAL_TYPES}


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


def struct_declaration(p: ParamSpec) -> str:
    """The C++ declaration of a params struct (`struct PowSumParams {...};`)."""
    fields = "".join(f"  {C_TYPES[f.type]} {f.name}{f'[{f.length}]' if f.length else ''};\n" for f in p.fields)
    return f"struct {p.struct} {{\n{fields}}};\n"


def kernel_name_line(kernel: str, tensors: list[str], indent: str = "  ") -> str:
    """`const std::string kernel = "<kernel>_" + <Metal type of each tensor, joined by "_">;`."""
    parts = " + \"_\" + ".join(f"scalarToMetalTypeString({t})" for t in tensors)
    return f"{indent}const std::string kernel = \"{kernel}_\" + {parts};"


def encoded(body: list[str], profiled: str | None) -> list[str]:
    """`body` (lines at the encoder's depth) inside `dispatch_sync_with_rethrow` on the current MPS
    stream, after the pipeline state is set; with `profiled` (the tensors, as C++ list items) the
    MPS profiler brackets the kernel."""
    begin = [f"      getMPSProfiler().beginProfileKernel(pso, kernel, {{{profiled}}});"] if profiled is not None else []
    end = ["      getMPSProfiler().endProfileKernel(pso);"] if profiled is not None else []
    return ["  MPSStream* stream = getCurrentMPSStream();",
            "  dispatch_sync_with_rethrow(stream->queue(), ^() {", "    @autoreleasepool {",
            "      auto encoder = stream->commandEncoder();",
            "      auto pso = lib.getPipelineStateForFunc(kernel);",
            *begin, "      [encoder setComputePipelineState:pso];", *body, *end, "    }", "  });"]
