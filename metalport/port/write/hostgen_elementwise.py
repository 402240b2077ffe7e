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

from metalport.errors import SpecError
from metalport.port.write.hostcpp import (SCALAR_TYPES, encoded, host_header, kernel_name_line, laid_out_inputs,
                                          native_signature, opening, output_dtype, param_lines, returned_if_empty)
from metalport.port.spec.model import LIST_ARRAYS, Grid, LaunchSpec, OutShape, ParamSpec


def covers(spec: LaunchSpec) -> bool:
    """Whether this writer (rather than hostgen's reduction writer) writes `spec`'s host."""
    return spec.geometry.grid is Grid.PER_CHUNK or spec.geometry.threads == "output_numel" or not spec.inputs


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


def _launch_body(spec: LaunchSpec, types: dict[str, str]) -> list[str]:
    """Statements that fill `out` (contiguous, sized) from the inputs, one thread per element."""
    if any(p.struct is not None for p in spec.params):
        raise SpecError(f"spec {spec.op}: params: hostgen_elementwise writes no structs")
    x = spec.inputs[0].arg if spec.inputs else None

    def array(p: ParamSpec, ctype: str) -> list[str] | None:
        src = p.fields[0].source
        if src in ("sizes", "strides"):  # of the first input, innermost first, [1] for a 0-dim one
            return [f"  std::vector<{ctype}> {p.name}_arg;", f"  for (int64_t d = {x}.dim() - 1; d >= 0; --d) {{",
                    f"    {p.name}_arg.push_back({x}.{src.removesuffix('s')}(d));", "  }",
                    f"  if ({p.name}_arg.empty()) {{", f"    {p.name}_arg.push_back(1);", "  }"]
        if "ArrayRef" in types.get(src, ""):
            return [f"  const std::vector<{ctype}> {p.name}_arg({src}.begin(), {src}.end());"]
        return None

    params = [p for p in spec.params if p.fields[0].source not in LIST_ARRAYS]  # the per-chunk writer makes these
    decls, values = param_lines(params, types, {"numel": f"{x}.numel()", "ndim": f"{x}.dim()",
                                                "output_numel": "out.numel()"}, array=array)
    inputs, tensors = laid_out_inputs(spec)
    return [*decls, *inputs, kernel_name_line(spec.kernel_name, [*tensors, "out"]),
            *encoded([f"      mtl_setArgs(encoder, {', '.join([*tensors, 'out', *values])});",
                      "      mtl_dispatch1DJob(encoder, pso, out.numel());"], ", ".join(tensors) or "out")]


def _element_hosts(spec: LaunchSpec, func: str) -> list[str]:
    """The out host (the launch) and, with `host.out_function`, the functional host calling it."""
    defn, args, schema = native_signature(spec.host_function, func)
    is_out = schema.is_out_fn()
    options = f"{spec.inputs[0].arg}.options()" if spec.inputs else "TensorOptions()"
    allocate = "" if is_out else \
        f"  Tensor out = at::empty({_shape_expr(spec)}, {options}.dtype({output_dtype(spec, spec.outputs[0].dtype)}));"
    if not is_out and spec.host_out_function is None:
        return [*opening(defn, spec.checks), allocate, *returned_if_empty("out", "out"),
                *_launch_body(spec, dict(args)), "  return out;", "}"]
    out_name = spec.host_function if is_out else spec.host_out_function
    odefn, oargs, oschema = (defn, args, schema) if is_out else native_signature(out_name, _out_schema(func))
    out = oschema.arguments.out[0].name
    lines = [*opening(odefn, spec.checks), f"  at::native::resize_output({out}, {_shape_expr(spec)});",
             *returned_if_empty(out, out),
             f"  Tensor result = {out}.is_contiguous() ? {out} : at::empty({out}.sizes(), {out}.options());",
             "  {", "    const Tensor& out = result;",
             *("  " + line for line in _launch_body(spec, dict(oargs))), "  }",
             f"  if (!result.is_same({out})) {{", f"    {out}.copy_(result);", "  }", f"  return {out};", "}"]
    if is_out:
        return lines
    call = ", ".join([n for n, _ in args] + ["out"])
    return lines + ["", f"{defn} {{", allocate, f"  {out_name}({call});", "  return out;", "}"]


def _chunk_hosts(spec: LaunchSpec, func: str) -> list[str]:
    """Tensor-list hosts: the functional one (allocating outputs) and the in-place one; both fall
    back to the per-tensor slow path for lists the kernel does not take."""
    x = spec.inputs[0].arg
    chunk = spec.geometry.threadgroup or 256
    metal = sorted({t[0] for t in spec.dtypes})
    allowed = " || ".join(f"dtype == {SCALAR_TYPES[t]}" for t in metal)
    slow = spec.op.removeprefix("_foreach_")
    name = f"{spec.host_function}_launch"
    launch = [*opening(f"static void {name}(TensorList inputs, TensorList outputs)", spec.checks),
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
    check = [f"static bool {spec.host_function}_fast(TensorList {x}) {{",
             f"  if ({x}.empty()) {{", "    return false;", "  }",
             f"  const auto dtype = {x}[0].scalar_type();",
             f"  for (const auto& t : {x}) {{",
             "    if (t.scalar_type() != dtype || !t.is_mps() || !t.is_contiguous()) {",
             "      return false;", "    }", "  }", f"  return {allowed};", "}"]
    defn, _, _ = native_signature(spec.host_function, func)
    functional = [f"{defn} {{", f"  if (!{spec.host_function}_fast({x})) {{",
                  f"    return at::native::foreach_tensor_{slow}_slow({x});", "  }",
                  "  std::vector<Tensor> outputs;", f"  for (const auto& t : {x}) {{",
                  "    outputs.push_back(at::empty_like(t));", "  }",
                  f"  {name}({x}, outputs);", "  return outputs;", "}"]
    out = [*launch, "", *check, "", *functional]
    if spec.host_inplace_function:
        inplace_func = func.split("(", 1)[0] + "_(" + func.split("(", 1)[1].replace("Tensor[] ", "Tensor(a!)[] ", 1)
        inplace_func = inplace_func.rsplit("->", 1)[0] + "-> ()"
        idefn, _, _ = native_signature(spec.host_inplace_function, inplace_func)
        out += ["", f"{idefn} {{", f"  if (!{spec.host_function}_fast({x})) {{",
                f"    return at::native::foreach_tensor_{slow}_slow_({x});", "  }",
                f"  {name}({x}, {x});", "}"]
    return out


def write_elementwise_host(spec: LaunchSpec, func: str) -> str:
    """The host function(s) of an element-wise or tensor-list spec for the routed entry's schema
    `func` (Note [element-wise host functions]); each function's argument checks come first."""
    body = _chunk_hosts(spec, func) if spec.geometry.grid is Grid.PER_CHUNK else _element_hosts(spec, func)
    return host_header(spec) + "\n".join(body) + "\n"


__all__ = ["covers", "write_elementwise_host"]
