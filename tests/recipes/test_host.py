"""Host stub insertion and legacy-code removal on `.mm` texts of our own."""

from __future__ import annotations

import pytest

from metalport.port.write.host import HostStub, insert_stub, remove_legacy
from metalport.errors import RecipeError

STUB = HostStub("wobble", "binary", "wobble_stub", "ATen/native/BinaryOps.h")
ALPHA = HostStub("nudge", "alpha", "nudge_stub", "ATen/native/BinaryOps.h",
                 "TensorIteratorBase& iter, const Scalar& alpha")

HOST = """#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/native/BinaryOps.h>
#include <ATen/native/mps/OperationUtils.h>

namespace at::native {
static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();

static void jiggle_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_binary_kernel(iter, "jiggle");
}

REGISTER_DISPATCH(jiggle_stub, &jiggle_mps_kernel);

} // namespace at::native
"""

LEGACY = """#include <ATen/native/mps/OperationUtils.h>
#include <ATen/ops/wobble_native.h>
#include <ATen/ops/jiggle_native.h>

namespace at::native {

static Tensor& keep_me(const Tensor& t) {
  return const_cast<Tensor&>(t);
}

TORCH_IMPL_FUNC(wobble_out_mps)
(const Tensor& self, const Tensor& other, const Tensor& output) {
  // a "}" in a string and a { in a comment must not end the block
  const char* label = "}";
  if (self.numel() == 0) {
    return;
  }
}

Tensor& jiggle_out_mps(const Tensor& self, Tensor& out) {
  return out;
}

} // namespace at::native
"""


def test_stub_source_matches_pytorch_shape() -> None:
    assert STUB.source() == ("static void wobble_mps_kernel(TensorIteratorBase& iter) {\n"
                             '  lib.exec_binary_kernel(iter, "wobble");\n}\n\n'
                             "REGISTER_DISPATCH(wobble_stub, &wobble_mps_kernel);\n")
    assert '  lib.exec_binary_kernel(iter, "nudge", alpha);\n' in ALPHA.source()
    assert ALPHA.source().startswith(
        "static void nudge_mps_kernel(TensorIteratorBase& iter, const Scalar& alpha) {\n")


def test_function_after_the_last_one_and_registration_after_the_last_one() -> None:
    out = insert_stub(HOST, STUB, kernel_basename="BinaryKernel")
    assert out == HOST.replace(
        "REGISTER_DISPATCH(jiggle_stub, &jiggle_mps_kernel);\n",
        "REGISTER_DISPATCH(jiggle_stub, &jiggle_mps_kernel);\nREGISTER_DISPATCH(wobble_stub, &wobble_mps_kernel);\n",
    ).replace('"jiggle");\n}\n', '"jiggle");\n}\n\n' + STUB.function_source())
    assert insert_stub(out, STUB, kernel_basename="BinaryKernel") == out


def test_registration_spelled_like_the_files_own() -> None:
    bare = HOST.replace("REGISTER_DISPATCH(jiggle_stub, &jiggle_mps_kernel);", "REGISTER_DISPATCH(jiggle_stub, jiggle_mps_kernel)")
    out = insert_stub(bare, STUB, kernel_basename="BinaryKernel")
    assert "REGISTER_DISPATCH(jiggle_stub, jiggle_mps_kernel)\nREGISTER_DISPATCH(wobble_stub, wobble_mps_kernel)\n" in out


UNARY_HOST = """#include <ATen/native/UnaryOps.h>

namespace at::native {
static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();

#define REGISTER_WIBBLE_DISPATCH(NAME)                      \\
  static void NAME##_kernel_mps(TensorIteratorBase& iter) { \\
    lib.exec_unary_kernel(iter, #NAME);                     \\
  }                                                         \\
  REGISTER_DISPATCH(NAME##_stub, NAME##_kernel_mps)

static void odd_kernel(TensorIteratorBase& iter) {
  lib.exec_unary_kernel(iter, "odd");
}

REGISTER_WIBBLE_DISPATCH(exp);
REGISTER_WIBBLE_DISPATCH(neg);
REGISTER_DISPATCH(odd_stub, odd_kernel);
} // namespace at::native
"""


def test_the_files_registration_macro_is_used_when_it_fits() -> None:
    unary = HostStub("wobble", "unary", "wobble_stub", "ATen/native/UnaryOps.h")
    out = insert_stub(UNARY_HOST, unary, kernel_basename="UnaryKernel")
    assert out == UNARY_HOST.replace("REGISTER_WIBBLE_DISPATCH(neg);\n",
                                     "REGISTER_WIBBLE_DISPATCH(neg);\nREGISTER_WIBBLE_DISPATCH(wobble);\n")
    assert insert_stub(out, unary, kernel_basename="UnaryKernel") == out
    odd_name = HostStub("wobble", "unary", "wobble_tensor_stub", "ATen/native/UnaryOps.h")
    assert "static void wobble_mps_kernel" in insert_stub(UNARY_HOST, odd_name, kernel_basename="UnaryKernel")


def test_missing_stub_header_is_included_where_include_sorting_puts_it() -> None:
    other = HostStub("wobble", "unary", "wobble_stub", "ATen/native/UnaryOps.h")
    out = insert_stub(HOST, other, kernel_basename="UnaryKernel")
    assert "#include <ATen/native/BinaryOps.h>\n#include <ATen/native/UnaryOps.h>\n#include <ATen/native/mps/" in out


def test_absent_host_file_is_created() -> None:
    out = insert_stub(None, STUB, kernel_basename="BinaryKernel")
    assert out.startswith("#define TORCH_ASSERT_ONLY_METHOD_OPERATORS\n#include <ATen/native/BinaryOps.h>\n")
    assert "#include <ATen/native/mps/BinaryKernel_metallib.h>\n" in out
    assert out.endswith(STUB.source() + "\n} // namespace at::native\n")


def test_no_namespace_end_is_a_structured_failure() -> None:
    with pytest.raises(RecipeError) as err:
        insert_stub("#include <x.h>\nint a;\n", STUB, kernel_basename="BinaryKernel", path="Odd.mm")
    assert str(err.value) == ("Odd.mm:3: no '} // namespace at::native' to insert the stub before; "
                              "close the namespace with that exact comment, then rerun")


def test_remove_torch_impl_func_block_and_its_header() -> None:
    out = remove_legacy(LEGACY, "wobble", "wobble_out_mps")
    start = LEGACY.index("TORCH_IMPL_FUNC")
    end = LEGACY.index("Tensor& jiggle_out_mps")
    expected = LEGACY[:start] + LEGACY[end:]
    assert out == expected.replace("#include <ATen/ops/wobble_native.h>\n", "")


def test_remove_plain_function() -> None:
    out = remove_legacy(LEGACY, "jiggle", "jiggle_out_mps")
    start = LEGACY.index("Tensor& jiggle_out_mps")
    end = LEGACY.index("} // namespace")
    expected = LEGACY[:start] + LEGACY[end:]
    assert out == expected.replace("#include <ATen/ops/jiggle_native.h>\n", "")


def test_prototype_is_not_taken_for_the_definition() -> None:
    text = "Tensor& jiggle_out_mps(Tensor& out);\nint x;\n\nTensor& jiggle_out_mps(Tensor& out) {\n  return out;\n}\n"
    assert remove_legacy(text, "jiggle", "jiggle_out_mps") == "Tensor& jiggle_out_mps(Tensor& out);\nint x;\n\n"


def test_missing_legacy_is_a_structured_failure() -> None:
    with pytest.raises(RecipeError) as err:
        remove_legacy(HOST, "wobble", "wobble_out_mps", path="BinaryOps.mm")
    assert str(err.value) == ("BinaryOps.mm:1: no TORCH_IMPL_FUNC(wobble_out_mps) or function "
                              "wobble_out_mps in the file; check the op's MPS dispatch row names "
                              "'wobble_out_mps'")


MACRO_LEGACY = """#include <ATen/native/mps/OperationUtils.h>
#include <ATen/ops/acosh_native.h>
#include <ATen/ops/asinh_native.h>

namespace at::native {
CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(acosh_out_mps, acosh)
CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(asinh_out_mps, asinh)
} // namespace at::native
"""


def test_macro_defined_legacy_is_one_line_to_remove() -> None:
    from metalport.port.write.host import has_legacy

    assert has_legacy(MACRO_LEGACY, "acosh_out_mps") and not has_legacy(MACRO_LEGACY, "atanh_out_mps")
    out = remove_legacy(MACRO_LEGACY, "acosh", "acosh_out_mps")
    assert out == MACRO_LEGACY.replace("#include <ATen/ops/acosh_native.h>\n", "").replace(
        "CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(acosh_out_mps, acosh)\n", "")
    kept = remove_legacy(MACRO_LEGACY, "acosh", "acosh_out_mps", drop_include=False)
    assert "#include <ATen/ops/acosh_native.h>" in kept and not has_legacy(kept, "acosh_out_mps")


def test_legacy_presence_follows_definitions_not_calls() -> None:
    from metalport.port.write.host import has_legacy

    assert has_legacy(LEGACY, "wobble_out_mps") and has_legacy(LEGACY, "jiggle_out_mps")
    calls_only = "void f() {\n  jiggle_out_mps(x, y);\n}\nTensor& jiggle_out_mps(const Tensor& self, Tensor& out);\n"
    assert not has_legacy(calls_only, "jiggle_out_mps")


MUL = HostStub("addcmul", "ternary_alpha", "addcmul_stub", "ATen/native/PointwiseOps.h",
               "TensorIteratorBase& iter, const Scalar& value")
DIV = HostStub("addcdiv", "ternary_alpha", "addcdiv_stub", "ATen/native/PointwiseOps.h",
               "TensorIteratorBase& iter, const Scalar& value")
GRAPH_ONLY = """#include <ATen/native/mps/OperationUtils.h>

namespace at::native {
TORCH_IMPL_FUNC(addcdiv_out_mps)
(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value, const Tensor& out) {
  run_graph(self, t1, t2, value, out);
}

} // namespace at::native
"""


def test_a_ternary_scalar_goes_to_the_kernel_and_both_ops_share_one_launcher() -> None:
    first = insert_stub(None, MUL, kernel_basename="PointwiseOps", path="PointwiseOps.mm")
    both = insert_stub(first, DIV, kernel_basename="PointwiseOps", path="PointwiseOps.mm")
    assert both.count("static void exec_ternary_kernel_with_alpha(") == 1
    assert '  exec_ternary_kernel_with_alpha(iter, "addcmul", value);\n' in both
    assert '  exec_ternary_kernel_with_alpha(iter, "addcdiv", value);\n' in both
    assert "mtl_setBytes(encoder, value, 4);" in both and "toOpMathType(common)" in both
    assert "const auto common = type_of(-1);" in both  # kernels by the common dtype, cast on store
    assert ".mul(" not in both and "TensorIteratorConfig" not in both  # no host-side temporary
    assert both.index("REGISTER_DISPATCH(addcmul_stub") < both.index("REGISTER_DISPATCH(addcdiv_stub")
    assert "#include <ATen/OpMathType.h>\n#include <ATen/native/PointwiseOps.h>\n" in both


def test_a_host_file_without_a_shader_library_gets_one_before_the_launcher() -> None:
    out = insert_stub(GRAPH_ONLY, DIV, kernel_basename="PointwiseOps", path="PointwiseOps.mm")
    assert out.count("getBundledLibrary()") == 1
    assert "#include <ATen/native/mps/PointwiseOps_metallib.h>" in out
    assert out.index("getBundledLibrary()") < out.index("static void exec_ternary_kernel_with_alpha(") \
        < out.index("static void addcdiv_mps_kernel(") < out.index("} // namespace at::native")
    assert GRAPH_ONLY.split("} // namespace")[0] in out  # the legacy code is the remover's job
