"""`write_host`: the `.mm` host function of a launch spec, in PyTorch's MPS idiom; `write_host_code`:
the one host writer of every plan, with a part per launch kind.

The text is deterministic (same spec and schema, same bytes) and mirrors what the emulated host
(`metalport.checks.host.spec`) does with the same spec: outputs from the shape/dtype rules, an
early return for an empty output, the layout of each input, constants in spec order after the
tensors (Note [spec buffers] in `port.spec.model`), whole-slice launches of at most 2^31-1 elements
(`with_32bit_indexing`'s role) with each size narrowed by a checked cast, then `mtl_setArgs`
and a 1-D dispatch (`mtl_dispatch1DJob`) or one threadgroup per slice, inside
`dispatch_sync_with_rethrow` on the current MPS stream.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from metalport.errors import RecipeError, SpecError
from metalport.port.write.cformat import format_snippet
from metalport.port.plan.functors import CASTOUT_MACRO
from metalport.port.write.host import HostStub, insert_stub, library_block
from metalport.port.plan.launch import ElementwiseLaunch
from metalport.port.plan.model import PortPlan
from metalport.port.write.hostcpp import (encoded, host_header, kernel_name_line, launch_lines, native_signature,
                                          opening, output_dtype, output_lines, param_lines)
from metalport.port.write.hostgen_dims import covers as covers_dims
from metalport.port.write.hostgen_dims import write_dims_host
from metalport.port.write.hostgen_elementwise import covers, write_elementwise_host
from metalport.port.spec.model import DERIVED, DERIVED_ARRAYS, Grid, LaunchSpec, Layout, OutputSpec, OutShape, load_spec


def write_host(spec: LaunchSpec, func: str) -> str:
    """The host function of `spec` for the op schema `func` (`mode(Tensor self, ...) -> ...`),
    with the static library handle; SpecError for a spec shape this writer does not cover.

    Elementwise and dims launches have writers of their own; the rest is a reduction over slices:
    the prologue (signature or stub kernel), the reduced dims, the outputs, the launch loop."""
    if covers(spec):
        return write_elementwise_host(spec, func)
    if covers_dims(spec):
        return write_dims_host(spec, func)
    _check_reduction_covered(spec)
    lines, types, given = _reduction_prologue(spec, func)
    lines += _reduced_dims(spec, types)
    output_lines, names, ret = _reduction_outputs(spec, given)
    lines += output_lines
    lines += _reduction_launch(spec, names, types)
    if spec.stub is not None:
        lines += [f"  if (!{names[0]}.is_alias_of(result)) {{", f"    result.copy_({names[0]}.view(result.sizes()));", "  }",
                  "}", "", f"REGISTER_DISPATCH({spec.stub.name}, &{spec.host_function})"]
    else:
        lines += [*([f"  return {ret};"] if ret else []), "}"]
    return host_header(spec) + "\n".join(lines) + "\n"


def _check_reduction_covered(spec: LaunchSpec) -> None:
    """SpecError unless `spec` is a reduction this writer covers: a per-output-element, per-slice or
    per-window launch of one reduce-last or contiguous input, reduced/same outputs, scalar params."""
    if spec.geometry.threads is not None or spec.geometry.grid in (Grid.PER_INPUT_ELEMENT, Grid.PER_CHUNK):
        raise SpecError(f"spec {spec.op}: geometry: hostgen writes per-output-element, per-slice and per-window "
                        f"launches only", hint="write the host function by hand")
    if any(i.layout is Layout.STRIDED for i in spec.inputs) or len(spec.inputs) != 1 or \
            any(o.shape not in (OutShape.REDUCED, OutShape.SAME) for o in spec.outputs):
        raise SpecError(f"spec {spec.op}: inputs: hostgen writes one reduce-last or contiguous input with "
                        f"reduced/same outputs only", hint="write the host function by hand")
    if any(f.length or f.source in DERIVED_ARRAYS for p in spec.params for f in p.fields):
        raise SpecError(f"spec {spec.op}: params: hostgen writes scalar fields only, not sizes/strides arrays",
                        hint="write the host function by hand")


def _reduction_prologue(spec: LaunchSpec, func: str) -> tuple[list[str], dict[str, str], list[str]]:
    """(the function's opening lines up to the `reduced` flags, argument -> C++ type, the outputs
    the caller allocated: a structured op's `out` arguments)."""
    x = spec.inputs[0].arg
    if spec.stub is not None:
        # Note [stub reductions]: the host is the stub's kernel; its iterator (make_reduction's)
        # holds the result viewed with size 1 along the reduced dims, and the input.
        stub = spec.stub
        defn = f"static void {spec.host_function}({', '.join(['TensorIterator& iter', *stub.params])})"
        types = {n: p for n, p in zip(stub.param_names, stub.params)}
        lines = [*opening(defn, spec.checks), "  const Tensor& result = iter.output(0);",
                 f"  const Tensor {x} = iter.input(0);",
                 f"  const int64_t ndim = {x}.dim();", "  std::vector<bool> reduced(ndim, false);",
                 "  for (const auto d : c10::irange(ndim)) {",
                 f"    reduced[d] = result.size(d) == 1 && {x}.size(d) != 1;", "  }"]
        return lines, types, []
    # Note [structured host]: for a structured op the host is the out entry's TORCH_IMPL_FUNC: its
    # outputs are the `out` arguments the meta function allocated, and it returns nothing.
    defn, args, schema = native_signature(spec.host_function, func, structured=True)
    lines = [*opening(defn, spec.checks), f"  const int64_t ndim = {x}.dim();",
             "  std::vector<bool> reduced(ndim, false);"]
    return lines, dict(args), [a.name for a in schema.arguments.out]


def _reduced_dims(spec: LaunchSpec, types: dict[str, str]) -> list[str]:
    """The dims to reduce (from `reduce.dim`, unless a stub's iterator gave them), the permutation
    putting them last, the output sizes, `reduce_size` and the laid-out `input`."""
    x = spec.inputs[0].arg
    dim, keepdim = spec.reduce.dim, spec.reduce.keepdim
    lines = []
    if spec.stub is not None:
        pass  # the stub's iterator marked them (`_reduction_prologue`)
    elif dim is None:
        lines.append("  std::fill(reduced.begin(), reduced.end(), true);")
    elif "OptionalIntArrayRef" in types[dim] or "IntArrayRef" in types[dim]:
        opt = "Optional" in types[dim]
        have = f"{dim}.has_value() && !{dim}->empty()" if opt else f"!{dim}.empty()"
        each = f"*{dim}" if opt else dim
        lines += [f"  if ({have}) {{", f"    for (const auto d : {each}) {{",
                  "      reduced[maybe_wrap_dim(d, ndim)] = true;", "    }", "  } else {",
                  "    std::fill(reduced.begin(), reduced.end(), true);", "  }"]
    else:
        lines += ["  if (ndim > 0) {", f"    reduced[maybe_wrap_dim({dim}, ndim)] = true;", "  }"]
    keep = f"{keepdim}" if keepdim and spec.stub is None else "false"
    kept = [f"    }} else if ({keep}) {{", "      out_sizes.push_back(1);"] if keep != "false" else []
    lines += ["  std::vector<int64_t> perm;", "  std::vector<int64_t> out_sizes;", "  int64_t reduce_size = 1;",
              "  for (const auto d : c10::irange(ndim)) {", "    if (!reduced[d]) {", "      perm.push_back(d);",
              f"      out_sizes.push_back({x}.size(d));", *kept,
              "    }", "  }", "  for (const auto d : c10::irange(ndim)) {", "    if (reduced[d]) {",
              "      perm.push_back(d);", f"      reduce_size *= {x}.size(d);", "    }", "  }"]
    layout = spec.inputs[0].layout
    lines.append(f"  const Tensor input = {x}.permute(perm).contiguous();" if layout is Layout.REDUCE_LAST
                 else f"  const Tensor input = {x}.contiguous();")
    return lines


def _reduction_outputs(spec: LaunchSpec, given: list[str]) -> tuple[list[str], list[str], str]:
    """(the lines allocating or taking each output and returning early when it is empty, the
    output names, what the function returns: "" for a structured op or a stub kernel)."""
    x = spec.inputs[0].arg
    taken = dict(zip((o.name for o in spec.outputs), given))

    def declare(o: OutputSpec) -> str:
        if spec.stub is not None:  # the result itself when the kernel can write it as laid out
            return (f"Tensor {o.name} = result.is_contiguous() ? result.view(out_sizes) : "
                    f"at::empty(out_sizes, result.options());")
        if given:
            return f"const Tensor& {o.name} = {taken[o.name]};"
        sizes = "out_sizes" if o.shape is OutShape.REDUCED else f"{x}.sizes()"
        return f"Tensor {o.name} = at::empty({sizes}, {x}.options().dtype({output_dtype(spec, o.dtype)}));"

    lines, names, ret = output_lines(spec, declare, returns=not (given or spec.stub))
    return [*lines, f"  const int64_t num_slices = {names[0]}.numel();"], names, ret


def _reduction_launch(spec: LaunchSpec, names: list[str], types: dict[str, str]) -> list[str]:
    """The kernel name and the launches of whole slices, at most 2^31-1 elements each, encoded on
    the current stream: 1-D over the slices, or one threadgroup per slice (per window)."""
    # The kernel name: `<kernel>_<type of each input>_<type of each output>`.
    lines = [kernel_name_line(spec.kernel_name, ["input", *names])]
    lines += ["  // Whole slices per launch, so every index the kernel computes stays within 32 bits.",
              "  const int64_t per_launch = std::max<int64_t>(",
              "      1, std::numeric_limits<int32_t>::max() / std::max<int64_t>(reduce_size, 1));",
              "  const Tensor input_flat = input.view(-1);",
              *[f"  const Tensor {n}_flat = {n}.view(-1);" for n in names]]
    # Each param for a launch of `count` slices, sizes narrowed by a checked cast.
    params, values = param_lines(spec.params, types, {**{d: d for d in DERIVED}, "num_slices": "count"},
                                 indent="        ", narrow=True)
    tensors = ["input_flat.narrow(0, start * reduce_size, count * reduce_size)",
               *[f"{n}_flat.narrow(0, start, count)" for n in names]]
    return lines + encoded(["      for (int64_t start = 0; start < num_slices; start += per_launch) {",
                            "        const int64_t count = std::min(per_launch, num_slices - start);", *params,
                            *launch_lines(spec, [*tensors, *values], "count", "        "), "      }"], "input")


_PREAMBLE = """#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/mps/MPSProfiler.h>
#include <ATen/native/mps/OperationUtils.h>
#include <c10/util/irange.h>
#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/empty.h>
#include <ATen/ops/{op}_native.h>
#endif

namespace at::native {{
{library}
// A size narrowed to the kernel's 32-bit type, refusing values that do not fit.
template <typename T>
static T checked_narrow(int64_t value, const char* what) {{
  TORCH_CHECK(value >= 0 && value <= static_cast<int64_t>(std::numeric_limits<T>::max()),
              what, " = ", value, " does not fit the kernel's 32-bit index");
  return static_cast<T>(value);
}}

"""


# Helpers a generated host function may call and the header that declares them (found missing by
# the host check: a per-operator build includes nothing it does not name).
_DECLARED_IN = (("at::native::resize_output(", "#include <ATen/native/Resize.h>"),)


def _with_native_header(existing: str, op: str) -> str:
    """`existing` including the op's native declarations (the host function calls the op's CPU
    fallback, `at::native::foreach_tensor_x_slow`): into its per-operator `#else` branch, else as
    the per-operator block after its first include block."""
    own = f"#include <ATen/ops/{op}_native.h>"
    if own in existing:
        return existing
    branch = re.search(r"^#else\n(?=#include <ATen/ops/)", existing, re.MULTILINE)
    if branch is not None:
        return existing[:branch.end()] + own + "\n" + existing[branch.end():]
    if "#include <ATen/NativeFunctions.h>" in existing:
        return existing
    scope = re.search(r"^namespace\b", existing, re.MULTILINE)
    head = existing[:scope.start()] if scope else existing
    first = list(re.finditer(r"^#include [<\"].*$", head, re.MULTILINE))
    at = first[-1].end() if first else 0
    block = f"\n#ifndef AT_PER_OPERATOR_HEADERS\n#include <ATen/NativeFunctions.h>\n#else\n{own}\n#endif"
    return existing[:at] + block + existing[at:]


def host_file_text(spec: LaunchSpec, func: str, existing: str | None) -> str:
    """The spec's host file after adding its function: a new file (preamble, function, closing
    namespace), or `existing` with the function inserted before its last `} // namespace`.

    SpecError when `existing` already defines the function (the contract wants it once)."""
    body = write_host(spec, func)
    includes = [f"#include <{spec.stub.header}>", "#include <ATen/native/TensorIterator.h>"] if spec.stub else []
    includes += [line for call, line in _DECLARED_IN if call in body]
    if existing is None:
        text = _PREAMBLE.format(op=spec.op, library=library_block(Path(spec.kernel_file).stem))
        anchor = "#include <ATen/native/mps/OperationUtils.h>\n"
        text = text.replace(anchor, anchor + "".join(f"{i}\n" for i in includes))
        if "at::tensor(" in body:  # a per-operator build declares at::tensor only in its own header
            text = text.replace("#include <ATen/ops/empty.h>\n", "#include <ATen/ops/empty.h>\n#include <ATen/ops/tensor.h>\n")
        return text + body + "\n} // namespace at::native\n"
    if "at::tensor(" in body:
        includes.append("#include <ATen/ops/tensor.h>")
    missing = [i for i in includes if i not in existing]
    if missing:  # after the file's first include block
        last = list(re.finditer(r"^#include [<\"].*$", existing, re.MULTILINE))
        at = last[0].end() if last else 0
        existing = existing[:at] + "".join(f"\n{i}" for i in missing) + existing[at:]
    existing = _with_native_header(existing, spec.op)
    if re.search(rf"\b{re.escape(spec.host_function)}\s*\(", existing):
        raise SpecError(f"spec {spec.op}: host.function: {spec.host_file} already defines {spec.host_function}",
                        location=spec.host_file, hint="remove the old definition or rename the host function")
    at = existing.rfind("} // namespace")
    if at < 0:
        raise SpecError(f"spec {spec.op}: host.file: {spec.host_file} has no closing '}} // namespace' to insert "
                        f"before", location=spec.host_file)
    return existing[:at] + body + "\n" + existing[at:]


def write_host_code(plan: PortPlan, root: Path, read: Callable[[str], str | None]) -> str | None:
    """The plan's host file after the port, or None when the port adds nothing to it: the one host
    writer, with a part per launch kind (Note [one port model] in port/plan/launch.py). `read` gives a
    file's current text (None: no such file yet); a new file is clang-formatted.

    An elementwise launch registers its TensorIterator stub (`_elementwise_host`); a spec launch
    adds its host function (`host_file_text`, which writes elementwise, dims and reduction specs).
    RecipeError for a plan with no host stub to register, SpecError for a spec it cannot write."""
    if not plan.launch_kind.by_spec:  # PENDING: no launch yet, refused as having no stub
        return _elementwise_host(plan, root, read)
    if plan.schema is None:
        raise SpecError(f"plan for {plan.op} has no func: schema for its launch spec")
    spec = load_spec(plan.launch or {})
    existing = read(spec.host_file)
    if existing is not None and f" {spec.host_function}(" in existing:
        return None
    text = host_file_text(spec, plan.schema, existing)
    return format_snippet(text, root, spec.host_file) if existing is None else text


def _elementwise_host(plan: PortPlan, root: Path, read: Callable[[str], str | None]) -> str | None:
    """The host file with the stub function launching the plan's kernel and its REGISTER_DISPATCH
    (`host.insert_stub`, in the file's idiom); None when the stub is registered already (natively,
    maybe by a macro: a second registration is a link error)."""
    if plan.stub_registered_at:
        return None
    launch = plan.elementwise
    text = read(plan.host_file) if plan.host_file else None
    if plan.stub and text is not None and re.search(rf"REGISTER_DISPATCH\(\s*{re.escape(plan.stub)}\s*,", text):
        return None
    if launch is None or not (plan.host_file and launch.stub and launch.stub_header and launch.host_family
                              and plan.kernel_file):
        raise RecipeError(f"the plan for {plan.op} has no host stub (stub {plan.stub or 'unknown'})",
                          hint="declare the op's dispatch stub in an ATen/native header, then re-plan")
    stub = HostStub(plan.op, launch.host_family, launch.stub, launch.stub_header,
                    launch.stub_params or "TensorIteratorBase& iter",
                    kernel=launch.kernel if launch.kernel != plan.op else None, extra_stubs=launch.extra_stubs,
                    natural_output=_natural_output(launch, root), shared_launcher=launch.shared_launcher,
                    scalars=plan.params, params_type=plan.params_type, params_struct=plan.params_struct,
                    params_header=plan.params_header,
                    params_source=plan.params_source if plan.params_header == plan.kernel_file else None,
                    dtypes=plan.dtypes)
    new = insert_stub(text, stub, kernel_basename=Path(plan.kernel_file).stem, path=plan.host_file)
    if text is None:
        return format_snippet(new, root, plan.host_file)
    if plan.params:  # Note [params route]: the struct-filling stub is long; its lines formatted in place
        from metalport.port.write.cformat import format_inserted

        return format_inserted(text, new, root, plan.host_file)
    return new


def _natural_output(launch: ElementwiseLaunch, root: Path) -> str | None:
    """`kBool` when the launch registers castout kernels and the tree's exec_binary_kernel takes a
    `natural_output_dtype` (MetalShaderLibrary.h) to route a differing `out=` dtype to them."""
    if not any(r.startswith(CASTOUT_MACRO + "(") for r in launch.registrations):
        return None
    header = root / "aten/src/ATen/native/mps/MetalShaderLibrary.h"
    if header.is_file() and "natural_output_dtype" in header.read_text(encoding="utf-8", errors="replace"):
        return "kBool"
    return None


def kernel_file_text(spec: LaunchSpec, kernel_source: str, existing: str | None) -> str:
    """The spec's kernel file after adding the recipe's kernel (a new file gets the Metal includes)."""
    if existing is None:
        return "#include <metal_stdlib>\nusing namespace metal;\n\n" + kernel_source
    if re.search(rf"\bkernel\s+void\s+{re.escape(spec.kernel_name)}\s*\(", existing):
        raise SpecError(f"spec {spec.op}: kernel.name: {spec.kernel_file} already defines kernel {spec.kernel_name}",
                        location=spec.kernel_file, hint="rename the recipe's kernel")
    return existing.rstrip("\n") + "\n\n" + kernel_source


__all__ = ["host_file_text", "kernel_file_text", "write_host", "write_host_code"]
