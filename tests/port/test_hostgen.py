"""Host code from a launch spec: PyTorch's idiom, deterministic, formatted by the tree's
.clang-format; specs the writer does not cover are refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metalport.errors import SpecError
from metalport.port.write.cformat import format_snippet
from metalport.port.write.hostgen import host_file_text, kernel_file_text, write_host
from metalport.port.plan.rows import registry_row
from metalport.port.spec.model import load_spec
from metalport.port.spec.recipes import spec_recipes

MODE = "mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)"
POWSUM = ("linalg__powsum(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None) -> Tensor")


def test_mode_host_function_launches_one_thread_per_slice_with_its_buffers_in_spec_order() -> None:
    text = write_host(spec_recipes()["mode"].spec, MODE)
    assert "std::tuple<Tensor, Tensor> mode_mps(const Tensor& self, int64_t dim, bool keepdim) {" in text
    assert text == write_host(spec_recipes()["mode"].spec, MODE)  # deterministic
    for idiom in ("dispatch_sync_with_rethrow(stream->queue(), ^() {", "lib.getPipelineStateForFunc(kernel)",
                  "mtl_dispatch1DJob(encoder, pso, count);", "self.permute(perm).contiguous()",
                  "if (values.numel() == 0) {", "return std::make_tuple(values, indices);",
                  'checked_narrow<uint32_t>(reduce_size, "reduce_size")',
                  "std::numeric_limits<int32_t>::max() / std::max<int64_t>(reduce_size, 1)"):
        assert idiom in text, idiom
    order = ["input_flat.narrow", "values_flat.narrow", "indices_flat.narrow", "reduce_size_arg", "num_slices_arg"]
    call = text[text.index("mtl_setArgs(encoder,"):]
    assert [call.index(x) for x in order] == sorted(call.index(x) for x in order)
    assert 'const std::string kernel = "mode_" + scalarToMetalTypeString(input)' in text


def test_powsum_host_registers_its_stub_packs_its_struct_and_dispatches_threadgroups() -> None:
    text = write_host(spec_recipes()["linalg__powsum"].spec, POWSUM)
    assert "struct PowSumParams {\n  float ord;\n  uint32_t reduce_size;\n};" in text
    # Note [stub reductions]: the stub's kernel reads the reduced dims off its iterator's operands
    # and writes the result (through a contiguous copy when the result is not laid out densely).
    assert "static void powsum_kernel_mps(TensorIterator& iter, const Scalar& ord) {" in text
    assert "reduced[d] = result.size(d) == 1 && self.size(d) != 1;" in text
    assert "Tensor out0 = result.is_contiguous() ? result.view(out_sizes) : at::empty(out_sizes, result.options());" in text
    assert text.rstrip().endswith("}\n\nREGISTER_DISPATCH(powsum_stub, &powsum_kernel_mps)")
    assert "[encoder dispatchThreadgroups:MTLSizeMake(count, 1, 1)" in text
    assert "threadsPerThreadgroup:MTLSizeMake(256, 1, 1)];" in text
    assert "ord.to<float>()" in text


def test_new_host_file_is_formatted_with_the_trees_clang_format() -> None:
    real = os.environ.get("METALPORT_REAL_TREE")
    if not real:
        pytest.skip("METALPORT_REAL_TREE is not set: no tree .clang-format to format with")
    rel = "aten/src/ATen/native/mps/operations/Mode.mm"
    text = format_snippet(host_file_text(spec_recipes()["mode"].spec, MODE, None), Path(real), rel)
    assert text.startswith("#define TORCH_ASSERT_ONLY_METHOD_OPERATORS\n")
    assert "static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();" in text
    assert text.rstrip().endswith("} // namespace at::native")
    assert format_snippet(text, Path(real), rel) == text  # already in the tree's format
    assert max(len(line) for line in text.splitlines()) <= 120


def test_existing_host_file_gets_the_function_before_its_namespace_end_once() -> None:
    spec = spec_recipes()["mode"].spec
    existing = "namespace at::native {\nint other();\n} // namespace at::native\n"
    text = host_file_text(spec, MODE, existing)
    assert text.index("mode_mps(") < text.index("} // namespace at::native")
    with pytest.raises(SpecError, match=r"Mode.mm: spec mode: host.function: .* already defines mode_mps"):
        host_file_text(spec, MODE, text)
    assert kernel_file_text(spec, "kernel void x() {}\n", None).startswith("#include <metal_stdlib>\n")


def test_registry_row_is_added_after_the_entry_and_refused_when_mps_is_routed() -> None:
    spec = spec_recipes()["mode"].spec
    assert registry_row(spec, [(4175, "    CPU, CUDA: mode")]) == (4175, "    MPS: mode_mps")
    with pytest.raises(SpecError, match=r"the row already routes MPS \(CPU, CUDA, MPS: mode\)"):
        registry_row(spec, [(4175, "    CPU, CUDA, MPS: mode")])


def test_spec_shapes_the_writer_does_not_cover_are_refused() -> None:
    data = spec_recipes()["mode"].spec.to_dict()
    data["geometry"] = {"grid": "per-output-element", "threads": "num_slices * 2"}
    with pytest.raises(SpecError, match=r"^spec mode: geometry: hostgen writes per-output-element"):
        write_host(load_spec(data), MODE)


HASH_OUT = ("hash_tensor.out(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0, Tensor(a!) out) "
            "-> Tensor(a!)")


def test_argument_checks_open_the_host_function_as_torch_checks() -> None:
    text = write_host(spec_recipes()["hash_tensor"].spec, HASH_OUT)
    head = text.split("{", 1)[1].lstrip().splitlines()
    assert head[:2] == ["using namespace mps;", '  TORCH_CHECK(mode == 0, "Unknown hash_tensor mode: ", mode);']
    data = spec_recipes()["logspace"].spec.to_dict()
    data["checks"] = [{"require": "steps >= 0 and not (base < 0)", "message": "number of steps must be non-negative"}]
    text = write_host(load_spec(data), "logspace(Scalar start, Scalar end, int steps, float base=10.0, *, "
                      "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor")
    assert '  TORCH_CHECK(steps >= 0 && !(base < 0), "number of steps must be non-negative");' in text


def test_dims_host_allocates_from_expressions_passes_lengths_as_a_tensor_and_launches_per_sequence() -> None:
    spec = spec_recipes()["_ctc_loss"].spec
    func = ("_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, int blank=0, "
            "bool zero_infinity=False) -> (Tensor, Tensor)")
    text = write_host(spec, func)
    assert "std::tuple<Tensor,Tensor> ctc_loss_mps(const Tensor & log_probs, const Tensor & targets, " \
           "IntArrayRef input_lengths, IntArrayRef target_lengths, int64_t blank, bool zero_infinity) {" in text
    assert "Tensor out1 = at::empty({log_probs.size(1), log_probs.size(0), (2 * (target_lengths.empty() ? " \
           "int64_t{0} : *std::max_element(target_lengths.begin(), target_lengths.end()))) + 1}" in text
    # int[] arguments reach the kernel as a tensor: setBytes carries at most 4 KB.
    assert "const Tensor input_lengths_arg = at::tensor(input_lengths, log_probs.options().dtype(kLong));" in text
    assert "TORCH_CHECK(targets.dim() == 2 || targets.size(0) == std::accumulate(target_lengths.begin(), " \
           "target_lengths.end(), int64_t{0}), \"Expected tensor to have size \"" in text
    assert "mtl_setArgs(encoder, log_probs_in, targets_in, out0, out1, input_lengths_arg, target_lengths_arg, p_arg);" in text
    assert "[encoder dispatchThreadgroups:MTLSizeMake(out0.numel(), 1, 1)" in text
    assert text.index("TORCH_CHECK(log_probs.numel() > 0") < text.index("at::empty(")
