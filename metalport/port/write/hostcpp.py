"""C++ spellings the host-code writers (`hostgen`, `hostgen_elementwise`, `hostgen_dims`) share: the
C++ type of a spec param field, the `ScalarType` of a Metal type name or an output's dtype rule, an
entry's signature, host expressions and argument checks, the header with the params structs, the
outputs and inputs, the params, the kernel-name line, the launch and the encoding block on the MPS
stream."""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from metalport.checkout.cpp import match_bracket
from metalport.errors import SpecError
from metalport.metal_types import METAL_TYPES
from metalport import python_ast
from metalport.port.spec.model import (LIST_FUNCTIONS, CheckSpec, Grid, LaunchSpec, Layout, OutputSpec, ParamField,
                                       ParamSpec, is_expression)

if TYPE_CHECKING:
    from torchgen.model import FunctionSchema

C_TYPES = {t.name: t.c_type for t in METAL_TYPES if t.c_type is not None}
SCALAR_TYPES = {t.name: t.scalar_type for t in METAL_TYPES}


def native_signature(name: str, func: str, structured: bool = False,
                     ) -> tuple[str, list[tuple[str, str]], FunctionSchema]:
    """(definition line named `name`, [(argument, C++ type)], parsed schema) of the `func:` line,
    with torchgen's `at::`/`::std::` qualifiers dropped as in PyTorch's `.mm` files. `structured`
    (the reduction writer's spelling): references as PyTorch's `const Tensor& self`, and an out entry
    as a structured op's `TORCH_IMPL_FUNC` (Note [structured host]: the meta function allocated `out`)."""
    from torchgen import local
    from torchgen.api.types import NativeSignature
    from torchgen.model import FunctionSchema

    schema = FunctionSchema.parse(func)
    sig = NativeSignature(schema, symint=False)
    with local.parametrize(use_const_ref_for_mutable_tensors=False, use_ilistref_for_tensor_lists=False):
        args = [(a.name, a.type.replace("::std::", "std::").replace("at::", "")) for a in sig.arguments()]
        defn = sig.defn(name=name).replace("::std::", "std::").replace("at::", "")
    if structured and schema.is_out_fn():
        outs = {a.name for a in schema.arguments.out}
        args = [(n, "const Tensor &" if n in outs else t) for n, t in args]
        return f"TORCH_IMPL_FUNC({name})\n({', '.join(f'{t} {n}' for n, t in args)})", args, schema
    if structured:
        defn = re.sub(r"\s*&\s*", "& ", defn).replace(",Tensor", ", Tensor")
    return defn, args, schema


def output_dtype(spec: LaunchSpec, rule: str) -> str:
    """C++ for an output's scalar type from its dtype rule: kLong for an index, a fixed one, an
    argument's (or its default, else the first input's), the first input's."""
    x = spec.inputs[0].arg if spec.inputs else None
    if rule == "index":
        return "kLong"
    if rule in SCALAR_TYPES:
        return SCALAR_TYPES[rule]
    arg, _, default = rule.removeprefix("arg:").partition(":") if rule.startswith("arg:") else ("", "", "")
    if x is None and not default:
        raise SpecError(f"spec {spec.op}: outputs: dtype {rule!r} needs an input")
    fallback = SCALAR_TYPES[default] if default else f"{x}.scalar_type()"
    return f"{arg}.value_or({fallback})" if arg else fallback


def host_header(spec: LaunchSpec) -> str:
    """The comment heading a spec's host code, then the C++ declaration of each params struct
    (`struct PowSumParams {...};`)."""
    lines = [f"// {spec.host_function}: aten::{spec.op} on a Metal kernel, written by metalport from its launch spec."]
    for p in spec.params:
        if p.struct is not None:
            lines += [f"struct {p.struct} {{", *(f"  {C_TYPES[f.type]} {f.name}{f'[{f.length}]' if f.length else ''};"
                                                for f in p.fields), "};"]
    return "\n".join(lines) + "\n"


def opening(defn: str, checks: tuple[CheckSpec, ...]) -> list[str]:
    """A host function's first lines: its definition, `using namespace mps;`, the argument checks."""
    return [f"{defn} {{", "  using namespace mps;", *check_lines(checks)]


def returned_if_empty(tensor: str, ret: str) -> list[str]:
    """The early return (of `ret`, nothing when "") when the output `tensor` is empty."""
    return [f"  if ({tensor}.numel() == 0) {{", f"    return{' ' * bool(ret)}{ret};", "  }"]


def output_lines(spec: LaunchSpec, declare: Callable[[OutputSpec], str],
                 returns: bool = True) -> tuple[list[str], list[str], str]:
    """(each output's declaration `declare(o)`, zero-filled when its fill says so, then the early
    return when the first is empty; the output names; what the host returns: the output or a tuple of
    them, "" unless `returns`)."""
    lines = []
    for o in spec.outputs:
        lines += [f"  {declare(o)}", *([f"  {o.name}.zero_();"] if o.fill == "zero" else [])]
    names = [o.name for o in spec.outputs]
    ret = "" if not returns else names[0] if len(names) == 1 else "std::make_tuple(" + ", ".join(names) + ")"
    return lines + returned_if_empty(names[0], ret), names, ret


def laid_out_inputs(spec: LaunchSpec) -> tuple[list[str], list[str]]:
    """(the declaration of each contiguous input's `<arg>_in`, the tensors the kernel takes: those, or
    a strided input as it is)."""
    lines, tensors = [], []
    for i in spec.inputs:
        if i.layout is Layout.STRIDED:
            tensors.append(i.arg)
        else:
            lines.append(f"  const Tensor {i.arg}_in = {i.arg}.contiguous();")
            tensors.append(f"{i.arg}_in")
    return lines, tensors


def param_lines(params: Iterable[ParamSpec], types: dict[str, str], derived: dict[str, str], indent: str = "  ",
                narrow: bool = False, array: Callable[[ParamSpec, str], list[str] | None] = lambda p, ctype: None,
                ) -> tuple[list[str], list[str]]:
    """(declarations, argument names) of the params in buffer order (Note [spec buffers]): each
    `<param>_arg` a scalar or a struct of its fields, a field's value from `derived` (C++ for a size
    the host computes, by source), a host expression or a schema argument (`types`: argument -> C++
    type) converted; with `narrow`, a 32-bit field through `checked_narrow`. `array(p, C++ type)`
    gives the lines of a param the writer spells itself (an array), None for the rest."""
    def narrowed(f: ParamField) -> bool:
        return narrow and C_TYPES[f.type] in ("uint32_t", "int32_t")

    def value(f: ParamField, label: str) -> str:
        ctype = C_TYPES[f.type]
        if f.source in derived:
            expr = derived[f.source]
        elif is_expression(f.source):
            expr = f"static_cast<{ctype}>({cpp_expression(f.source)})"
        elif "Scalar" in types.get(f.source, ""):
            expr = f"{f.source}.to<{ctype}>()"
        else:
            expr = f"static_cast<{ctype}>({f.source})"
        return f"checked_narrow<{ctype}>({expr}, \"{label}\")" if narrowed(f) else expr

    lines, names = [], []
    for p in params:
        f = p.fields[0]
        if p.struct is not None:
            inits = ", ".join(value(field, field.name) for field in p.fields)
            lines.append(f"{indent}const {p.struct} {p.name}_arg{{{inits}}};")
        elif (own := array(p, C_TYPES[f.type])) is not None:
            lines += own
        else:
            ctype = "auto" if narrowed(f) else C_TYPES[f.type]
            lines.append(f"{indent}const {ctype} {p.name}_arg = {value(f, p.name)};")
        names.append(f"{p.name}_arg")
    return lines, names


def kernel_name_line(kernel: str, tensors: list[str], indent: str = "  ") -> str:
    """`const std::string kernel = "<kernel>_" + <Metal type of each tensor, joined by "_">;`."""
    parts = " + \"_\" + ".join(f"scalarToMetalTypeString({t})" for t in tensors)
    return f"{indent}const std::string kernel = \"{kernel}_\" + {parts};"


def launch_lines(spec: LaunchSpec, args: list[str], count: str, indent: str) -> list[str]:
    """`mtl_setArgs` of `args`, then `count` threadgroups (a per-slice or per-window launch) or threads."""
    lines = [f"{indent}mtl_setArgs(encoder, {', '.join(args)});"]
    if spec.geometry.grid in (Grid.PER_SLICE, Grid.PER_WINDOW):
        return lines + [f"{indent}[encoder dispatchThreadgroups:MTLSizeMake({count}, 1, 1)",
                        f"{indent}        threadsPerThreadgroup:MTLSizeMake({spec.geometry.threadgroup}, 1, 1)];"]
    return lines + [f"{indent}mtl_dispatch1DJob(encoder, pso, {count});"]


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


_CPP_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def _cpp_condition(node: ast.AST) -> str:
    """C++ for a validated check condition (Note [spec checks] in port.spec)."""
    if isinstance(node, ast.Expression):
        return _cpp_condition(node.body)
    if isinstance(node, ast.Constant):
        return str(int(node.value)) if isinstance(node.value, bool) else repr(node.value)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        args = ", ".join(_cpp_condition(a) for a in node.args)
        if isinstance(node.func, ast.Name) and node.func.id in LIST_FUNCTIONS:
            return _cpp_list_call(node.func.id, args, len(node.args))
        if isinstance(node.func, ast.Name):  # wrap(d, n)
            return f"maybe_wrap_dim({args})"
        assert isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
        return f"{node.func.value.id}.{node.func.attr}({args})"
    if isinstance(node, ast.UnaryOp):
        return ("!" if isinstance(node.op, ast.Not) else "-") + f"({_cpp_condition(node.operand)})"
    if isinstance(node, ast.BinOp):
        op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/"}[type(node.op)]
        return f"({_cpp_condition(node.left)} {op} {_cpp_condition(node.right)})"
    if isinstance(node, ast.IfExp):
        return f"({_cpp_condition(node.test)} ? {_cpp_condition(node.body)} : {_cpp_condition(node.orelse)})"
    if isinstance(node, ast.BoolOp):
        joint = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + joint.join(_cpp_condition(v) for v in node.values) + ")"
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        parts = [f"{_cpp_condition(a)} {_CPP_OPS[type(o)]} {_cpp_condition(b)}"
                 for a, o, b in zip(sides, node.ops, sides[1:])]
        return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"
    raise SpecError(f"hostgen: cannot write {ast.dump(node)} as C++")


def _cpp_list_call(name: str, args: str, count: int) -> str:
    """C++ for len/max/min/sum of an int[] argument (an IntArrayRef), or max/min of two ints."""
    if count == 2:
        return f"std::{name}<int64_t>({args})"
    if name == "len":
        return f"static_cast<int64_t>({args}.size())"
    if name == "sum":
        return f"std::accumulate({args}.begin(), {args}.end(), int64_t{{0}})"
    return f"({args}.empty() ? int64_t{{0}} : *std::{name}_element({args}.begin(), {args}.end()))"


def _unwrapped(cpp: str) -> str:
    """`cpp` without parentheses around the whole of it (those of `(a) + (b)` stay)."""
    while cpp.startswith("(") and cpp.endswith(")"):
        if 0 <= match_bracket(cpp, 0) < len(cpp) - 1:
            return cpp
        cpp = cpp[1:-1]
    return cpp


def cpp_expression(text: str) -> str:
    """C++ for a validated host expression (a `dims:` entry, a params `from:`)."""
    return _unwrapped(_cpp_condition(python_ast.parse(text.strip(), mode="eval")))


def check_lines(checks: tuple[CheckSpec, ...], indent: str = "  ") -> list[str]:
    """`TORCH_CHECK(<condition>, <message parts>);` for each of a spec's argument checks."""
    out = []
    for c in checks:
        body = python_ast.parse(c.require, mode="eval").body
        cond = _unwrapped(_cpp_condition(body))  # the outermost parentheses are TORCH_CHECK's
        parts = []
        for text, name, _, _ in string.Formatter().parse(c.message):
            if text:
                parts.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
            if name:
                parts.append(_cpp_condition(python_ast.parse(name.strip(), mode="eval")))
        out.append(f"{indent}TORCH_CHECK({cond}, {', '.join(parts)});")
    return out
