"""Gradients over halves: a backward whose input is split in two along `dim` and whose incoming
gradient has the halved shape (glu_backward).

Note [grad over halves]: glu's forward reads the two halves `a`, `b` of `self` and writes one
value per position of the halved shape; its backward reads `a`, `b` and the incoming gradient at
that position and writes two values, the gradients of `a` and of `b`, into the two halves of
`grad_input`. No iterator over equal shapes serves it (`bodies.elementwise_refusal` refuses it), and
CPU and CUDA share no stub for it (glu_backward_cpu_out and glu_backward_cuda_out), so, as upstream
ports it, its `MPS:` row stays and the MPSGraph body becomes two paths. Contiguous `self`, `grad_input`
and `grad_output` are one 2D launch of `<op>_dense_<T>` over rows as in Note [halves forward]. Any
other layout is one launch over the halved shape: a TensorIterator with that static shape over
(grad_input, self, grad_output) gives the byte strides of each, and each thread reaches the second
halves of `self` and `grad_input` a fixed byte offset on (the stride of `dim` times half its size),
through `<op>_halves_<T>`. Both kernels (`halves_backward_dense`, `halves_backward`, added to the
kernel file once, with the macro registering both per dtype) are ours; the functor is the model's:
it takes
`(a, b, grad)` and returns `vec2type_t<T>` {gradient of a, gradient of b}. The shape is read from
torch's CPU op (`halves_operands`), never from the op's name. Conformance launches the kernel as
this host does (`checks.host.elementwise.plan_halves_backward`, Note [halves] in checks/cases/samples.py).

Note [halves forward]: glu's forward has a stub (glu_stub), but the iterator its structured op builds
runs over the two halves of `self` as strided views: for the common last-dim split no launch through
the stub is a contiguous one. As upstream ports it (its `[MPS] Migrate GLU to Metal`), the `MPS:` row
and its out function stay and the MPSGraph body becomes two paths: a contiguous `self` (and output)
is read as rows of 2 * `run` elements (`run` = half the halved dim times every dim inside it, which
for a contiguous tensor is half its size times its stride there), one 2D launch of
`<op>_dense_<T>` over (run, rows), the second half a fixed `run` elements on; any other layout is a
binary TensorIterator over the two narrowed halves (named, as the iterator borrows them) launched
through `lib.exec_binary_kernel`. The halving checks stay in the structured meta function. The
dense kernel (`halves_dense`, added to the kernel file once, with `REGISTER_HALVES_DENSE_OP`
instantiating it per dtype) is ours and calls the model's binary functor, the same one the binary
kernels register, so both paths compute one function. The shape is read from torch's CPU op
(`shape.halves_reason`) and the row's MPSGraph function (`bodies.halves_forward`), never from the
op's name. Conformance models both paths (`checks.host.runner._plan_halves_forward`): a sample's
`x.chunk(2, dim)` halves are the contiguous `x` again and go through the dense kernel, other layouts
through the binary one.
"""

from __future__ import annotations

import re

HALVES_FAMILY = "halves"  # the host family of such a port
HALVES_MACRO = "REGISTER_HALVES_BACKWARD_OP"
HALVES_FLAVOUR = "halves"  # host names `<op>_halves_<T>`
DENSE_MACRO = "REGISTER_HALVES_DENSE_OP"  # Note [halves forward]: host names `<op>_dense_<T>`

# The kernel of Note [grad over halves], in the kernel file once, before the first functor using it.
HALVES_KERNELS = """\
// A backward over the two halves of its input along one dim (Note [grad over halves] in metalport):
// one thread per element of the halved shape reads both halves of `input` (the second
// `input_half` bytes on) and the incoming gradient there, and writes the gradients of both
// halves (the second `grad_input_half` bytes on), from F()(a, b, grad) = {grad of a, grad of b}.
template <typename T, typename F>
kernel void halves_backward(
    device void* grad_input [[buffer(0)]],
    constant void* input [[buffer(1)]],
    constant void* grad_output [[buffer(2)]],
    constant long* sizes [[buffer(3)]],
    constant long* grad_input_strides [[buffer(4)]],
    constant long* input_strides [[buffer(5)]],
    constant long* grad_output_strides [[buffer(6)]],
    constant long& grad_input_half [[buffer(7)]],
    constant long& input_half [[buffer(8)]],
    constant uint& ndim [[buffer(9)]],
    uint tid [[thread_position_in_grid]]) {
  long pos[max_ndim];
  pos_from_thread_index(static_cast<long>(tid), pos, sizes, ndim);
  const auto to_grad_input = offset_from_coord(pos, grad_input_strides, ndim);
  const auto to_input = offset_from_coord(pos, input_strides, ndim);
  const auto to_grad_output = offset_from_coord(pos, grad_output_strides, ndim);
  const auto grads = F()(val_at_offs<T>(input, to_input),
                         val_at_offs<T>(input, to_input + input_half),
                         val_at_offs<T>(grad_output, to_grad_output));
  ref_at_offs<T>(grad_input, to_grad_input) = grads.x;
  ref_at_offs<T>(grad_input, to_grad_input + grad_input_half) = grads.y;
}

// The same over contiguous tensors (Note [halves forward]'s rows): input and grad_input read as rows
// of 2 * `run` elements, grad_output as rows of `run`; thread (x, y) serves position x of row y.
template <typename T, typename F>
kernel void halves_backward_dense(
    device T* grad_input [[buffer(0)]],
    constant T* input [[buffer(1)]],
    constant T* grad_output [[buffer(2)]],
    constant long& run [[buffer(3)]],
    uint2 pos [[thread_position_in_grid]]) {
  const long row = static_cast<long>(pos.y);
  const long at = 2 * run * row + static_cast<long>(pos.x);
  const auto grads = F()(input[at], input[at + run], grad_output[run * row + static_cast<long>(pos.x)]);
  grad_input[at] = grads.x;
  grad_input[at + run] = grads.y;
}

// Both kernels of one op: `<op>_halves_<T>` (any layout) and `<op>_dense_<T>` (contiguous).
#define REGISTER_HALVES_BACKWARD_OP(NAME, DTYPE)                   \\
  template [[host_name(#NAME "_halves_" #DTYPE)]] kernel void     \\
  halves_backward<DTYPE, NAME##_functor>(                          \\
      device void* grad_input [[buffer(0)]],                       \\
      constant void* input [[buffer(1)]],                          \\
      constant void* grad_output [[buffer(2)]],                    \\
      constant long* sizes [[buffer(3)]],                          \\
      constant long* grad_input_strides [[buffer(4)]],             \\
      constant long* input_strides [[buffer(5)]],                  \\
      constant long* grad_output_strides [[buffer(6)]],            \\
      constant long& grad_input_half [[buffer(7)]],                \\
      constant long& input_half [[buffer(8)]],                     \\
      constant uint& ndim [[buffer(9)]],                           \\
      uint tid [[thread_position_in_grid]]);                       \\
  template [[host_name(#NAME "_dense_" #DTYPE)]] kernel void      \\
  halves_backward_dense<DTYPE, NAME##_functor>(                    \\
      device DTYPE * grad_input [[buffer(0)]],                     \\
      constant DTYPE * input [[buffer(1)]],                        \\
      constant DTYPE * grad_output [[buffer(2)]],                  \\
      constant long& run [[buffer(3)]],                            \\
      uint2 pos [[thread_position_in_grid]])
"""


# The contiguous kernel of Note [halves forward], in the kernel file once, before the first functor using it.
DENSE_KERNELS = """\
// A function of the two halves of a contiguous input along one dim (Note [halves forward] in
// metalport): the input read as rows of 2 * `run` elements whose second half starts `run` elements
// into the row; thread (x, y) reads position x of row y in both halves and writes out[y * run + x].
template <typename T, typename F>
kernel void halves_dense(
    device T* output [[buffer(0)]],
    constant T* input [[buffer(1)]],
    constant long& run [[buffer(2)]],
    uint2 pos [[thread_position_in_grid]]) {
  const long row = static_cast<long>(pos.y);
  const long at = 2 * run * row + static_cast<long>(pos.x);
  output[run * row + static_cast<long>(pos.x)] = F()(input[at], input[at + run]);
}

#define REGISTER_HALVES_DENSE_OP(NAME, DTYPE)                          \\
  template [[host_name(#NAME "_dense_" #DTYPE)]] kernel void          \\
  halves_dense<DTYPE, NAME##_functor>(                                 \\
      device DTYPE * output [[buffer(0)]],                             \\
      constant DTYPE * input [[buffer(1)]],                            \\
      constant long& run [[buffer(2)]],                                \\
      uint2 pos [[thread_position_in_grid]])
"""


def _dense_launch(op: str, output: str, inputs: list[str]) -> list[str]:
    """The 2D launch of `<op>_dense_<T>` (typed by the first of `inputs`) over (run, rows) on `stream`,
    writing `output` from `inputs`, as lines one level inside the host body."""
    full, tensors = inputs[0], ", ".join(inputs)
    return [
        "  dispatch_sync_with_rethrow(stream->queue(), ^() {",
        "    @autoreleasepool {",
        "      auto encoder = stream->commandEncoder();",
        f'      auto pso = lib.getPipelineStateForFunc(fmt::format("{op}_dense_{{}}", scalarToMetalTypeString({full})));',
        f'      getMPSProfiler().beginProfileKernel(pso, "{op}", {{{tensors}}});',
        "      [encoder setComputePipelineState:pso];",
        f"      mtl_setArgs(encoder, {output}, {tensors}, run);",
        "      mtl_dispatch2DJob(encoder, pso, run, rows);",
        "      getMPSProfiler().endProfileKernel(pso);",
        "    }",
        "  });",
    ]


def halves_forward_body(op: str, *, full: str, dim: str, output: str) -> str:
    """The new body (braces excluded) of a function of the two halves of `full` along `dim` writing
    `output` (Note [halves forward]): nothing for an empty output; a contiguous `full` and `output`
    read as rows by one 2D launch of `<op>_dense_<T>`; any other layout a binary TensorIterator over
    the two narrowed halves launched through `lib.exec_binary_kernel`. The structured meta function
    has checked the halving already."""
    lines = [
        "using namespace mps;",
        f"if ({output}.numel() == 0) {{",
        "  return;",
        "}",
        f"const auto wrap_dim = maybe_wrap_dim({dim}, {full}.dim());",
        f"const int64_t half = {full}.size(wrap_dim) / 2;",
        f"if ({full}.is_contiguous() && {output}.is_contiguous()) {{",
        "  // rows of 2 * run elements: the halved dim and every dim inside it",
        f"  const int64_t run = half * {full}.stride(wrap_dim);",
        f"  const int64_t rows = {full}.numel() / (2 * run);",
        "  auto stream = getCurrentMPSStream();",
        *_dense_launch(op, output, [full]),
        "  return;",
        "}",
        "// any other layout: the two halves as strided views (named: the iterator borrows them)",
        f"const auto first = {full}.narrow(wrap_dim, 0, half);",
        f"const auto second = {full}.narrow(wrap_dim, half, half);",
        f"auto iter = at::TensorIteratorConfig().add_output({output}).add_const_input(first).add_const_input(second).build();",
        f'lib.exec_binary_kernel(iter, "{op}");',
    ]
    return "\n" + "".join(f"  {line}\n" for line in lines)


def halves_operands(op: str) -> tuple[str, str, str] | None:
    """(the halved tensor, the gradient of the halved shape, the dim argument) of `op`, read from
    torch's CPU op: its schema has two tensors and an int `dim`, and called with one tensor of shape
    (4, 6), the other (4, 3) and dim 1 it returns (4, 6) in exactly one assignment (glu_backward:
    ("self", "grad_output", "dim")). None for any other op (Note [grad over halves])."""
    import torch

    packet = getattr(torch.ops.aten, op, None)
    func = getattr(packet, "default", None)
    if func is None:
        return None
    args = func._schema.arguments
    tensors = [a.name for a in args if str(a.type) == "Tensor"]
    dims = [a.name for a in args if str(a.type) == "int" and a.name == "dim"]
    if len(tensors) != 2 or len(dims) != 1 or len(args) != 3 or len(func._schema.returns) != 1:
        return None
    found = []
    for full in tensors:
        values = {full: torch.rand(4, 6) - 0.5, next(t for t in tensors if t != full): torch.rand(4, 3) - 0.5,
                  dims[0]: 1}
        try:
            out = func(*(values[a.name] for a in args))
        except (RuntimeError, ValueError, TypeError):
            continue
        if isinstance(out, torch.Tensor) and tuple(out.shape) == (4, 6):
            found.append(full)
    if len(found) != 1:
        return None
    return found[0], next(t for t in tensors if t != found[0]), dims[0]


def halves_body(op: str, old: str, *, full: str, grad: str, dim: str, output: str, returns: str) -> str:
    """The new body (braces excluded) of the out function writing `output` (Note [grad over halves]):
    the checks torch's CPU kernel makes (the 0-dim message the old body gives, if it gives one),
    `output` resized to `full`'s shape, then one launch of `<op>_halves_<T>` over the halved shape;
    `returns` is the function's final return statement."""
    said = re.search(rf"TORCH_CHECK\(\s*{re.escape(full)}\.dim\(\)\s*>\s*0\s*,\s*(\"[^\"\n]*\")\s*\)", old)
    message = said.group(1) if said else f'"{op} does not support 0-dimensional tensors"'
    lines = [
        "using namespace mps;",
        f"TORCH_CHECK({full}.dim() > 0, {message});",
        f"const auto wrap_dim = maybe_wrap_dim({dim}, {full}.dim());",
        f"const int64_t nIn = {full}.size(wrap_dim);",
        'TORCH_CHECK(nIn % 2 == 0, "Halving dimension must be even, but dimension ", wrap_dim, " is size ", nIn);',
        f"{output}.resize_({full}.sizes());",
        f"DimVector half_shape({full}.sizes());",
        "half_shape[wrap_dim] = nIn / 2;",
        f"TORCH_CHECK({grad}.sizes() == IntArrayRef(half_shape), \"{op}: {grad} must be half of {full} along dim\");",
        f"if ({output}.numel() == 0) {{",
        f"  {returns}",
        "}",
        "auto stream = getCurrentMPSStream();",
        f"if ({full}.is_contiguous() && {output}.is_contiguous() && {grad}.is_contiguous()) {{",
        "  // rows of 2 * run elements (run of the gradient): the halved dim and every dim inside it",
        f"  const int64_t run = (nIn / 2) * {full}.stride(wrap_dim);",
        f"  const int64_t rows = {full}.numel() / (2 * run);",
        *_dense_launch(op, output, [full, grad]),
        f"  {returns}",
        "}",
        "auto iter = at::TensorIteratorConfig()",
        f"                .add_output({output})",
        f"                .add_const_input({full})",
        f"                .add_const_input({grad})",
        "                .resize_outputs(false)",
        "                .declare_static_shape(half_shape)",
        "                .build();",
        f"const int64_t input_half = {full}.stride(wrap_dim) * (nIn / 2) * {full}.element_size();",
        f"const int64_t grad_input_half = {output}.stride(wrap_dim) * (nIn / 2) * {output}.element_size();",
        "TensorIteratorBase& it = iter;",
        "dispatch_sync_with_rethrow(stream->queue(), ^() {",
        "  @autoreleasepool {",
        "    auto encoder = stream->commandEncoder();",
        f'    auto pso = lib.getPipelineStateForFunc(fmt::format("{op}_{HALVES_FLAVOUR}_{{}}", '
        f"scalarToMetalTypeString({full})));",
        f'    getMPSProfiler().beginProfileKernel(pso, "{op}", {{{full}, {grad}}});',
        "    [encoder setComputePipelineState:pso];",
        "    bind_iter_tensors(encoder, it);",
        "    mtl_setArgs<3>(encoder, it.shape(), it.strides(0), it.strides(1), it.strides(2), grad_input_half,",
        "                   input_half, static_cast<uint32_t>(it.ndim()));",
        "    mtl_dispatch1DJob(encoder, pso, it.numel());",
        "    getMPSProfiler().endProfileKernel(pso);",
        "  }",
        "});",
        returns,
    ]
    return "\n" + "".join(f"  {line}\n" for line in lines)


__all__ = ["DENSE_KERNELS", "DENSE_MACRO", "HALVES_FAMILY", "HALVES_FLAVOUR", "HALVES_KERNELS", "HALVES_MACRO",
           "halves_body", "halves_forward_body", "halves_operands"]
