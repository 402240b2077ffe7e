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
from metalport.port.write.hostcpp import (cpp_expression, encoded, host_header, kernel_name_line, laid_out_inputs,
                                          launch_lines, native_signature, opening, output_dtype, output_lines,
                                          param_lines)
from metalport.port.spec.model import (DERIVED, DERIVED_ARRAYS, Grid, LaunchSpec, Layout, OutputSpec, OutShape,
                                       ParamSpec, dims_exprs)


def covers(spec: LaunchSpec) -> bool:
    """Whether this writer writes `spec`'s host: every output has a `dims:` shape."""
    return bool(spec.outputs) and all(o.shape is OutShape.DIMS for o in spec.outputs)


def write_dims_host(spec: LaunchSpec, func: str) -> str:
    """The host function of a `dims:` spec for the routed entry's schema `func`."""
    if spec.geometry.grid not in (Grid.PER_SLICE, Grid.PER_OUTPUT_ELEMENT) or spec.geometry.threads is not None \
            or not spec.inputs:
        raise SpecError(f"spec {spec.op}: geometry: for dims: outputs hostgen writes per-slice and "
                        f"per-output-element launches over the first output, with inputs",
                        hint="write the host function by hand")
    if any(i.layout is Layout.REDUCE_LAST for i in spec.inputs):
        raise SpecError(f"spec {spec.op}: inputs: a dims: spec reduces nothing; use contiguous or strided")
    derived = [f.source for p in spec.params for f in p.fields if f.source in DERIVED or f.source in DERIVED_ARRAYS]
    if derived:
        raise SpecError(f"spec {spec.op}: params: {derived[0]!r} is a reduction's value; a dims: spec gives its "
                        f"constants as expressions", hint="write e.g. `from: \"self.size(0)\"`")
    defn, args, schema = native_signature(spec.host_function, func)
    if schema.is_out_fn():
        raise SpecError(f"spec {spec.op}: host.function: dims: outputs are allocated by the host; route the "
                        f"functional entry")
    types = dict(args)
    x = spec.inputs[0].arg

    def declare(o: OutputSpec) -> str:
        sizes = ", ".join(cpp_expression(e) for e in dims_exprs(o.shape_arg or "[]"))
        return f"Tensor {o.name} = at::empty({{{sizes}}}, {x}.options().dtype({output_dtype(spec, o.dtype)}));"

    def array(p: ParamSpec, ctype: str) -> list[str] | None:  # an int[] argument, as a device tensor
        if "ArrayRef" not in types.get(p.fields[0].source, ""):
            return None
        if ctype != "int64_t":
            raise SpecError(f"spec {spec.op}: params[{p.name}]: an int[] argument goes to the kernel as "
                            f"long, not {p.fields[0].type}")
        return [f"  const Tensor {p.name}_arg = at::tensor({p.fields[0].source}, {x}.options().dtype(kLong));"]

    outputs, names, ret = output_lines(spec, declare)
    inputs, tensors = laid_out_inputs(spec)
    params, values = param_lines(spec.params, types, {}, array=array)
    lines = [*opening(defn, spec.checks), *outputs, *inputs, *params,
             kernel_name_line(spec.kernel_name, [*tensors, *names]),
             *encoded(launch_lines(spec, [*tensors, *names, *values], f"{names[0]}.numel()", "      "),
                      ", ".join(tensors)),
             f"  return {ret};", "}"]
    return host_header(spec) + "\n".join(lines) + "\n"


__all__ = ["covers", "write_dims_host"]
