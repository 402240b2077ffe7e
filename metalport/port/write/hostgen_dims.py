"""Host code for launch specs whose outputs are shaped by host expressions (`dims:` shapes,
Note [spec checks] in `port.spec.model`): `_ctc_loss`'s per-sequence scan is one.

The host allocates every output from its expressions, returns early when the first output is
empty, makes each input contiguous (or passes it strided), builds the constants in spec order
(int[] arguments as a device tensor, since `setBytes` carries at most 4 KB; structs with each
field from its expression), then launches one threadgroup per element of the first output
(`per-slice`) or one thread per element (`per-output-element`). Every index the kernel computes
is its own business (the spec's kernels index in 64 bits), so there is no 32-bit split.
"""

from __future__ import annotations

from metalport.errors import SpecError
from metalport.port.write.hostcpp import C_TYPES, SCALAR_TYPES, encoded, kernel_name_line, native_signature, struct_declaration
from metalport.port.write.hostgen_elementwise import check_lines, cpp_expression
from metalport.port.spec.model import DERIVED, DERIVED_ARRAYS, Grid, LaunchSpec, Layout, OutShape, dims_exprs, is_expression


def covers(spec: LaunchSpec) -> bool:
    """Whether this writer writes `spec`'s host: every output has a `dims:` shape."""
    return bool(spec.outputs) and all(o.shape is OutShape.DIMS for o in spec.outputs)


def _dtype(spec: LaunchSpec, rule: str) -> str:
    x = spec.inputs[0].arg
    if rule == "same":
        return f"{x}.scalar_type()"
    if rule == "index":
        return "kLong"
    if rule in SCALAR_TYPES:
        return SCALAR_TYPES[rule]
    raise SpecError(f"spec {spec.op}: outputs: hostgen writes dims: outputs of dtype same, index or a Metal type, "
                    f"not {rule!r}")


def _field_value(spec: LaunchSpec, source: str, ctype: str, types: dict[str, str]) -> str:
    if is_expression(source):
        return f"static_cast<{ctype}>({cpp_expression(source)})"
    if source in DERIVED or source in DERIVED_ARRAYS:
        raise SpecError(f"spec {spec.op}: params: {source!r} is a reduction's value; a dims: spec gives its "
                        f"constants as expressions", hint="write e.g. `from: \"self.size(0)\"`")
    if "Scalar" in types.get(source, ""):
        return f"{source}.to<{ctype}>()"
    return f"static_cast<{ctype}>({source})"


def write_dims_host(spec: LaunchSpec, func: str) -> str:
    """The host function of a `dims:` spec for the routed entry's schema `func`."""
    if spec.geometry.grid not in (Grid.PER_SLICE, Grid.PER_OUTPUT_ELEMENT) or spec.geometry.threads is not None \
            or not spec.inputs:
        raise SpecError(f"spec {spec.op}: geometry: for dims: outputs hostgen writes per-slice and "
                        f"per-output-element launches over the first output, with inputs",
                        hint="write the host function by hand")
    defn, args, schema = native_signature(spec.host_function, func)
    if schema.is_out_fn():
        raise SpecError(f"spec {spec.op}: host.function: dims: outputs are allocated by the host; route the "
                        f"functional entry")
    types = dict(args)
    x = spec.inputs[0].arg
    lines = [f"{defn} {{", "  using namespace mps;", *check_lines(spec.checks)]
    names = [o.name for o in spec.outputs]
    for o in spec.outputs:
        sizes = ", ".join(cpp_expression(e) for e in dims_exprs(o.shape_arg or "[]"))
        lines.append(f"  Tensor {o.name} = at::empty({{{sizes}}}, {x}.options().dtype({_dtype(spec, o.dtype)}));")
        if o.fill == "zero":
            lines.append(f"  {o.name}.zero_();")
    ret = names[0] if len(names) == 1 else "std::make_tuple(" + ", ".join(names) + ")"
    lines += [f"  if ({names[0]}.numel() == 0) {{", f"    return {ret};", "  }"]
    tensors = []
    for i in spec.inputs:
        if i.layout is Layout.REDUCE_LAST:
            raise SpecError(f"spec {spec.op}: inputs: a dims: spec reduces nothing; use contiguous or strided")
        if i.layout is Layout.STRIDED:
            tensors.append(i.arg)
        else:
            lines.append(f"  const Tensor {i.arg}_in = {i.arg}.contiguous();")
            tensors.append(f"{i.arg}_in")
    structs, values = [], []
    for p in spec.params:
        if p.struct is not None:
            structs.append(struct_declaration(p))
            inits = ", ".join(_field_value(spec, f.source, C_TYPES[f.type], types) for f in p.fields)
            lines.append(f"  const {p.struct} {p.name}_arg{{{inits}}};")
        else:
            f = p.fields[0]
            ctype = C_TYPES[f.type]
            if "ArrayRef" in types.get(f.source, ""):
                if ctype != "int64_t":
                    raise SpecError(f"spec {spec.op}: params[{p.name}]: an int[] argument goes to the kernel as "
                                    f"long, not {f.type}")
                lines.append(f"  const Tensor {p.name}_arg = at::tensor({f.source}, {x}.options().dtype(kLong));")
            else:
                lines.append(f"  const {ctype} {p.name}_arg = {_field_value(spec, f.source, ctype, types)};")
        values.append(f"{p.name}_arg")
    lines.append(kernel_name_line(spec.kernel_name, [*tensors, *names]))
    if spec.geometry.grid is Grid.PER_SLICE:
        dispatch = [f"      [encoder dispatchThreadgroups:MTLSizeMake({names[0]}.numel(), 1, 1)",
                    f"              threadsPerThreadgroup:MTLSizeMake({spec.geometry.threadgroup}, 1, 1)];"]
    else:
        dispatch = [f"      mtl_dispatch1DJob(encoder, pso, {names[0]}.numel());"]
    lines += [*encoded([f"      mtl_setArgs(encoder, {', '.join([*tensors, *names, *values])});", *dispatch],
                       ", ".join(tensors)),
              f"  return {ret};", "}"]
    header = (f"// {spec.host_function}: aten::{spec.op} on a Metal kernel, written by metalport from its launch spec.\n"
              + "".join(structs))
    return header + "\n".join(lines) + "\n"


__all__ = ["covers", "write_dims_host"]
