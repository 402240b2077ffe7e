"""Host code for element-wise launch specs: one thread per output element (`threads:`), strided
inputs with sizes/strides arrays, outputs shaped like an argument (`like:`, `sizes:`, `length:`),
factories (no input), and per-chunk launches over tensor lists. `hostgen.write_host` hands these
specs here; the reduction shapes stay there.

Note [element-wise host functions]: the launch is written once, into an `out` tensor, as the host
function of the entry the spec routes (a `.out` entry takes its `out` argument, resized; a
functional entry allocates it from the spec's shape and dtype rules). With `host.out_function`
the functional host allocates and calls the out host; with `host.inplace_function` (tensor
lists) the in-place host launches with its inputs as outputs. A non-contiguous `out` gets a
contiguous result copied back.
"""

from __future__ import annotations

import ast
import string

from metalport.checkout.cpp import match_bracket
from metalport.errors import SpecError
from metalport.port.write.hostcpp import C_TYPES, SCALAR_TYPES, encoded, kernel_name_line, native_signature
from metalport.port.spec.model import LIST_ARRAYS, LIST_FUNCTIONS, CheckSpec, Grid, LaunchSpec, Layout, OutShape

def covers(spec: LaunchSpec) -> bool:
    """Whether this writer (rather than hostgen's reduction writer) writes `spec`'s host."""
    return spec.geometry.grid is Grid.PER_CHUNK or spec.geometry.threads == "output_numel" or not spec.inputs


def _signature(name: str, func: str) -> tuple[str, list[tuple[str, str]], list[str]]:
    """(definition line, [(argument, C++ type)], out argument names) of `func` named `name`."""
    defn, args, schema = native_signature(name, func)
    return defn, args, [a.name for a in schema.arguments.out]


def _out_schema(func: str) -> str:
    """The `.out` schema of a functional schema returning one Tensor."""
    head, rest = func.split("(", 1)
    params, ret = rest.rsplit(") ->", 1)
    if ret.strip() != "Tensor":
        raise SpecError(f"hostgen: {head} returns {ret.strip()}; an out_function needs one Tensor")
    sep = ", " if "*" in params else ", *, "
    return f"{head}.out({params}{sep}Tensor(a!) out) -> Tensor(a!)"


def _shape_expr(spec: LaunchSpec) -> str:
    """C++ for the output's sizes (a std::vector<int64_t>) from the spec's shape rule."""
    o = spec.outputs[0]
    x = spec.inputs[0].arg if spec.inputs else None
    if o.shape is OutShape.LIKE:
        return f"{o.shape_arg}.sizes().vec()"
    if o.shape is OutShape.LENGTH:
        return f"std::vector<int64_t>{{{o.shape_arg}}}"
    if o.shape is OutShape.SIZES:
        return (f"[&] {{ auto s = {x}.sizes().vec(); s.resize(s.size() - {o.shape_arg}.size()); "
                f"s.insert(s.end(), {o.shape_arg}.begin(), {o.shape_arg}.end()); return s; }}()")
    if o.shape is OutShape.SAME:
        return f"{x}.sizes().vec()"
    raise SpecError(f"spec {spec.op}: outputs[0].shape: {o.shape_text} is a reduction; hostgen_elementwise "
                    f"writes like/sizes/length/same outputs")


def _dtype_expr(spec: LaunchSpec) -> str:
    o = spec.outputs[0]
    x = spec.inputs[0].arg if spec.inputs else None
    if o.dtype.startswith("arg:"):
        _, arg, *default = o.dtype.split(":")
        fallback = SCALAR_TYPES[default[0]] if default else f"{x}.scalar_type()"
        return f"{arg}.value_or({fallback})"
    if o.dtype == "same" and x is not None:
        return f"{x}.scalar_type()"
    if o.dtype in SCALAR_TYPES:
        return SCALAR_TYPES[o.dtype]
    raise SpecError(f"spec {spec.op}: outputs[0].dtype: {o.dtype!r} needs an input")


def _param_lines(spec: LaunchSpec, types: dict[str, str]) -> tuple[list[str], list[str]]:
    """(declarations, argument names) of the spec's params, in buffer order."""
    x = spec.inputs[0].arg if spec.inputs else None
    lines, names = [], []
    for p in spec.params:
        if p.struct is not None:
            raise SpecError(f"spec {spec.op}: params[{p.name}]: hostgen_elementwise writes no structs")
        f = p.fields[0]
        ctype = C_TYPES[f.type]
        src = f.source
        if src in ("sizes", "strides"):
            getter = "size" if src == "sizes" else "stride"
            lines.append(f"  std::vector<{ctype}> {p.name}_arg;")
            lines.append(f"  for (int64_t d = {x}.dim() - 1; d >= 0; --d) {{")
            lines.append(f"    {p.name}_arg.push_back({x}.{getter}(d));")
            lines.append("  }")
            lines.append(f"  if ({p.name}_arg.empty()) {{")
            lines.append(f"    {p.name}_arg.push_back(1);")
            lines.append("  }")
        elif src == "numel":
            lines.append(f"  const {ctype} {p.name}_arg = {x}.numel();")
        elif src == "ndim":
            lines.append(f"  const {ctype} {p.name}_arg = {x}.dim();")
        elif src == "output_numel":
            lines.append(f"  const {ctype} {p.name}_arg = out.numel();")
        elif src in LIST_ARRAYS:
            continue  # the per-chunk writer makes these
        elif "ArrayRef" in types.get(src, ""):
            lines.append(f"  const std::vector<{ctype}> {p.name}_arg({src}.begin(), {src}.end());")
        elif "Scalar" in types.get(src, ""):
            lines.append(f"  const {ctype} {p.name}_arg = {src}.to<{ctype}>();")
        else:
            lines.append(f"  const {ctype} {p.name}_arg = static_cast<{ctype}>({src});")
        names.append(f"{p.name}_arg")
    return lines, names


def _launch_body(spec: LaunchSpec, types: dict[str, str]) -> list[str]:
    """Statements that fill `out` (contiguous, sized) from the inputs, one thread per element."""
    decls, params = _param_lines(spec, types)
    inputs = []
    for i in spec.inputs:
        if i.layout is Layout.STRIDED:
            inputs.append(i.arg)
        else:
            decls.append(f"  const Tensor {i.arg}_in = {i.arg}.contiguous();")
            inputs.append(f"{i.arg}_in")
    return [*decls, kernel_name_line(spec.kernel_name, [*inputs, "out"]),
            *encoded([f"      mtl_setArgs(encoder, {', '.join([*inputs, 'out', *params])});",
                      "      mtl_dispatch1DJob(encoder, pso, out.numel());"], ", ".join(inputs) or "out")]


def _element_hosts(spec: LaunchSpec, func: str) -> list[str]:
    """The out host (the launch) and, with `host.out_function`, the functional host calling it."""
    from torchgen.model import FunctionSchema

    is_out = FunctionSchema.parse(func).is_out_fn()
    first = spec.inputs[0].arg if spec.inputs else None
    options = f"{first}.options()" if first else "TensorOptions()"
    if not is_out and spec.host_out_function is None:
        defn, args, _ = _signature(spec.host_function, func)
        return [f"{defn} {{", "  using namespace mps;",
                f"  Tensor out = at::empty({_shape_expr(spec)}, {options}.dtype({_dtype_expr(spec)}));",
                "  if (out.numel() == 0) {", "    return out;", "  }",
                *_launch_body(spec, dict(args)), "  return out;", "}"]
    out_func = func if is_out else _out_schema(func)
    out_name = spec.host_function if is_out else spec.host_out_function
    defn, args, outs = _signature(out_name, out_func)
    types = dict(args)
    out = outs[0]
    lines = [f"{defn} {{", "  using namespace mps;", f"  at::native::resize_output({out}, {_shape_expr(spec)});",
             f"  if ({out}.numel() == 0) {{", f"    return {out};", "  }",
             f"  Tensor result = {out}.is_contiguous() ? {out} : at::empty({out}.sizes(), {out}.options());",
             "  {", "    const Tensor& out = result;",
             *("  " + line for line in _launch_body(spec, types)), "  }",
             f"  if (!result.is_same({out})) {{", f"    {out}.copy_(result);", "  }", f"  return {out};", "}"]
    if is_out:
        return lines
    fdefn, fargs, _ = _signature(spec.host_function, func)
    call = ", ".join([n for n, _ in fargs] + ["out"])
    functional = [f"{fdefn} {{", f"  Tensor out = at::empty({_shape_expr(spec)}, {options}.dtype({_dtype_expr(spec)}));",
                  f"  {out_name}({call});", "  return out;", "}"]
    return lines + ["", *functional]


def _chunk_hosts(spec: LaunchSpec, func: str) -> list[str]:
    """Tensor-list hosts: the functional one (allocating outputs) and the in-place one; both fall
    back to the per-tensor slow path for lists the kernel does not take."""
    x = spec.inputs[0].arg
    chunk = spec.geometry.threadgroup or 256
    metal = sorted({t[0] for t in spec.dtypes})
    allowed = " || ".join(f"dtype == {SCALAR_TYPES[t]}" for t in metal)
    slow = spec.op.removeprefix("_foreach_")
    launch = ["static void {launch}(TensorList inputs, TensorList outputs) {",
              "  using namespace mps;",
              "  std::vector<int64_t> chunks;",
              "  std::vector<int64_t> numels;",
              "  for (const auto t : c10::irange(inputs.size())) {",
              "    numels.push_back(inputs[t].numel());",
              f"    for (int64_t start = 0; start < inputs[t].numel(); start += {chunk}) {{",
              "      chunks.push_back(static_cast<int64_t>(t));",
              "      chunks.push_back(start);", "    }", "  }",
              "  if (chunks.empty()) {", "    return;", "  }",
              "  // The lists as arrays of device addresses (Metal 3 argument buffers of `device T*`).",
              "  std::vector<uint64_t> in_addresses;", "  std::vector<uint64_t> out_addresses;",
              "  for (const auto t : c10::irange(inputs.size())) {",
              "    in_addresses.push_back([getMTLBufferStorage(inputs[t]) gpuAddress] + "
              "inputs[t].storage_offset() * inputs[t].element_size());",
              "    out_addresses.push_back([getMTLBufferStorage(outputs[t]) gpuAddress] + "
              "outputs[t].storage_offset() * outputs[t].element_size());", "  }",
              kernel_name_line(spec.kernel_name, ["inputs[0]", "outputs[0]"]),
              *encoded(["      for (const auto t : c10::irange(inputs.size())) {",
                        "        [encoder useResource:getMTLBufferStorage(inputs[t]) usage:MTLResourceUsageRead];",
                        "        [encoder useResource:getMTLBufferStorage(outputs[t]) usage:MTLResourceUsageWrite];",
                        "      }",
                        "      mtl_setArgs(encoder, in_addresses, out_addresses, chunks, numels);",
                        f"      [encoder dispatchThreads:MTLSizeMake({chunk}, chunks.size() / 2, 1)",
                        f"          threadsPerThreadgroup:MTLSizeMake({chunk}, 1, 1)];"], None), "}"]
    name = f"{spec.host_function}_launch"
    check = [f"static bool {spec.host_function}_fast(TensorList {x}) {{",
             f"  if ({x}.empty()) {{", "    return false;", "  }",
             f"  const auto dtype = {x}[0].scalar_type();",
             f"  for (const auto& t : {x}) {{",
             "    if (t.scalar_type() != dtype || !t.is_mps() || !t.is_contiguous()) {",
             "      return false;", "    }", "  }", f"  return {allowed};", "}"]
    defn, _, _ = _signature(spec.host_function, func)
    functional = [f"{defn} {{", f"  if (!{spec.host_function}_fast({x})) {{",
                  f"    return at::native::foreach_tensor_{slow}_slow({x});", "  }",
                  "  std::vector<Tensor> outputs;", f"  for (const auto& t : {x}) {{",
                  "    outputs.push_back(at::empty_like(t));", "  }",
                  f"  {name}({x}, outputs);", "  return outputs;", "}"]
    out = [line.replace("{launch}", name) for line in launch] + ["", *check, "", *functional]
    if spec.host_inplace_function:
        inplace_func = func.split("(", 1)[0] + "_(" + func.split("(", 1)[1].replace("Tensor[] ", "Tensor(a!)[] ", 1)
        inplace_func = inplace_func.rsplit("->", 1)[0] + "-> ()"
        idefn, _, _ = _signature(spec.host_inplace_function, inplace_func)
        out += ["", f"{idefn} {{", f"  if (!{spec.host_function}_fast({x})) {{",
                f"    return at::native::foreach_tensor_{slow}_slow_({x});", "  }",
                f"  {name}({x}, {x});", "}"]
    return out


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
    return _unwrapped(_cpp_condition(ast.parse(text.strip(), mode="eval")))


def check_lines(checks: tuple[CheckSpec, ...], indent: str = "  ") -> list[str]:
    """`TORCH_CHECK(<condition>, <message parts>);` for each of a spec's argument checks."""
    out = []
    for c in checks:
        body = ast.parse(c.require, mode="eval").body
        cond = _unwrapped(_cpp_condition(body))  # the outermost parentheses are TORCH_CHECK's
        parts = []
        for text, name, _, _ in string.Formatter().parse(c.message):
            if text:
                parts.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
            if name:
                parts.append(_cpp_condition(ast.parse(name.strip(), mode="eval")))
        out.append(f"{indent}TORCH_CHECK({cond}, {', '.join(parts)});")
    return out


def write_elementwise_host(spec: LaunchSpec, func: str) -> str:
    """The host function(s) of an element-wise or tensor-list spec for the routed entry's schema
    `func` (Note [element-wise host functions]); each function's argument checks come first."""
    body = _chunk_hosts(spec, func) if spec.geometry.grid is Grid.PER_CHUNK else _element_hosts(spec, func)
    checks = check_lines(spec.checks)
    body = [part for line in body for part in ([line, *checks] if line == "  using namespace mps;" else [line])]
    header = f"// {spec.host_function}: aten::{spec.op} on a Metal kernel, written by metalport from its launch spec.\n"
    return header + "\n".join(body) + "\n"


__all__ = ["check_lines", "covers", "cpp_expression", "write_elementwise_host"]
