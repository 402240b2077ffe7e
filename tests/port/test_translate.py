"""The translate porter on CPU kernel files in ATen's shape: what translates, and what is declined and why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metalport.checkout.cpu_kernels import CPU_DIR, find_cpu_kernel
from metalport.port.translate import translate_stub

FIXTURES = Path(__file__).parent / "fixtures" / "cpu"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cpu-tree")
    (root / CPU_DIR).mkdir(parents=True)
    for path in FIXTURES.glob("*.cpp"):
        shutil.copyfile(path, root / CPU_DIR / path.name)
    return root


def test_the_reader_finds_the_registered_kernel_its_lambdas_and_their_branches(tree: Path) -> None:
    kernel = find_cpu_kernel(tree, "hardsigmoid_stub")
    assert kernel is not None and kernel.function == "hardsigmoid_kernel"
    assert [(lam.line, lam.branch, sorted(lam.dtypes)) for lam in kernel.lambdas] == [
        (39, "AT_DISPATCH_REDUCED_FLOATING_TYPES", ["bfloat16", "float16"]),
        (60, "AT_DISPATCH_FLOATING_TYPES", ["float32", "float64"])]
    assert kernel.lambdas[1].params == (("scalar_t", "self_val"),)
    helper = find_cpu_kernel(tree, "helper_stub")  # ALSO_REGISTER_AVX512_DISPATCH counts as a registration
    assert helper is not None and helper.function == "helper_kernel"
    assert find_cpu_kernel(tree, "absent_stub") is None
    v2 = find_cpu_kernel(tree, "square_like_stub")
    assert v2 is not None and [sorted(lam.dtypes) for lam in v2.lambdas] == [
        ["int16", "int32", "int64", "int8", "uint8"], ["bfloat16", "float16", "float32", "float64"]]


@pytest.mark.parametrize(("stub", "where", "dtypes", "lines"), [
    ("hardsigmoid_stub", "Activation.cpp:60", ("float32", "float16", "bfloat16"), [
        "static U cpp_max(const U a, const U b) {", "return a < b ? b : a;", "const float three = 3.0f;",
        "return static_cast<T>((cpp_min(cpp_max((self_val + three), zero), six) / six));"]),
    ("hardsigmoid_backward_stub", "Activation.cpp:81", ("float32", "float16", "bfloat16"), [
        "operator()(const T in0, const T in1) {", "const float grad_val = static_cast<float>(in0);",
        "const float one_sixth = (1.0f / 6.0f);",
        "((self_val > neg_three) && (self_val < three)) ? (static_cast<float>(grad_val) * one_sixth) : zero"]),
    ("gelu_erf_stub", "UnaryOpsKernel.cpp:28", ("float32", "float16", "bfloat16"), [
        "const float kAlpha = static_cast<float>(M_SQRT1_2_F);", "::c10::metal::erf((xo * kAlpha))",
        "const auto xo = static_cast<float>(x);"]),
    ("square_like_stub", "UnaryOpsKernel.cpp:45",
     ("float32", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64"), [
         "return static_cast<T>(((a * a) + static_cast<float>(1)));",
         "inline ::metal::enable_if_t<!::metal::is_floating_point_v<T>, T> operator()(const T in0) {",
         "return static_cast<T>(((a * a) + 1));"]),
    ("is_tiny_stub", "UnaryOpsKernel.cpp:54",
     ("float32", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64"), [
         "::metal::enable_if_t<::c10::metal::is_scalar_floating_point_v<T>, bool> operator()",
         "(::metal::fabs(a) < static_cast<float>(::metal::numeric_limits<T>::epsilon()))",
         "(::metal::abs(a) < ::metal::numeric_limits<T>::epsilon())"]),
    ("i0_like_stub", "UnaryOpsKernel.cpp:63", ("float32", "float16", "bfloat16"), [
        "return static_cast<T>(::c10::metal::i0(x));"]),
    ("log_one_plus_stub", "UnaryOpsKernel.cpp:73", ("float32", "float16", "bfloat16"), [
        "if ((a == static_cast<float>(0))) {", "return static_cast<T>(::c10::metal::log1p(a));"]),
    ("hardswish_backward_stub", "Activation.cpp:160", ("float32", "float16", "bfloat16"), [
        "const float zero = 0.0f;", "const float three = 3.0f;", "const float one_half = 0.5f;",
        "    if ((static_cast<float>(self_val) <= neg_three)) {\n      return static_cast<T>(zero);\n    } else {\n"
        "      if ((static_cast<float>(self_val) < three)) {\n"]),
    ("hypot_stub", "BinaryOpsKernel.cpp:83", ("float32", "float16", "bfloat16"), [
        "return static_cast<T>(cpp_hypot(a, b));", "    if (::metal::isinf(a) || ::metal::isinf(b)) {\n      return INFINITY;",
        "return ::c10::metal::hypot(::metal::fabs(a), ::metal::fabs(b));"]),
    ("xlogy_stub", "BinaryOpsKernel.cpp:53", ("float32", "float16", "bfloat16"), [
        "    if (::metal::isnan(y)) {\n      return static_cast<T>(NAN);\n    }",
        "return static_cast<T>((x * ::metal::precise::log(y)));"]),
    ("logaddexp2_stub", "BinaryOpsKernel.cpp:41", ("float32", "float16", "bfloat16"), [
        "const float inv_log_2 = static_cast<float>((1.0f / M_LN2_F));", "float m = cpp_max(a, b);",
        "::c10::metal::log1p(::metal::precise::exp2(-::metal::fabs((a - b)))) * inv_log_2"]),
    ("is_negative_like_stub", "UnaryOpsKernel.cpp:176", ("float32", "float16", "bfloat16"), [
        "::metal::enable_if_t<::c10::metal::is_scalar_floating_point_v<T>, bool> operator()(const T in0) {",
        "return static_cast<bool>(((a < static_cast<float>(0)) || ::metal::signbit(a)));"]),
    ("sinc_like_stub", "Activation.cpp:186", ("float32", "float16", "bfloat16"), [
        "float product = (M_PI_F * static_cast<float>(a));",
        "return static_cast<T>(static_cast<float>((::metal::precise::sin(product) / product)));"]),
])
def test_realistic_lambdas_translate(tree: Path, stub: str, where: str, dtypes: tuple[str, ...],
                                     lines: list[str]) -> None:
    t = translate_stub(tree, stub, stub.removesuffix("_stub"))
    assert t.declined is None and t.ok
    assert t.where == f"{CPU_DIR}/{where}" and t.dtypes == dtypes
    assert t.source is not None and t.source.startswith(f"struct {t.op}_functor {{\n")
    for line in lines:
        assert line in t.source
    assert "double" not in t.source and "std::" not in t.source


@pytest.mark.parametrize(("stub", "reason"), [
    ("glu_jvp_stub", "the lambda takes 4 operands; translated ports are unary or binary"),
    ("series_stub", "a loop or jump (for)"),
    ("checked_log_stub", "TORCH_CHECK in the lambda (a check the functor cannot make)"),
    ("helper_stub", "calls calc_something_odd, which has no Metal counterpart in the function map"),
    ("split_stub", "two outputs (the lambda returns a tuple)"),
    ("angle_like_stub", "angle_like_kernel: complex-only"),
    ("absent_stub", "no aten/src/ATen/native/cpu/*.cpp registers absent_stub (REGISTER_DISPATCH)"),
    ("pair_backward_stub", "two outputs (pair_backward_kernel calls cpu_kernel_multiple_outputs)"),
    ("macro_made_stub", f"macro_made_kernel ({CPU_DIR}/Activation.cpp:341) has no cpu_kernel scalar lambda"),
    ("ceil_like_stub", f"ceil_like_kernel ({CPU_DIR}/UnaryOpsKernel.cpp:169) has no cpu_kernel scalar lambda"),
])
def test_lambdas_outside_the_subset_are_declined_with_the_reason(tree: Path, stub: str, reason: str) -> None:
    t = translate_stub(tree, stub, stub.removesuffix("_stub"))
    assert not t.ok and t.source is None
    assert t.declined == reason


def test_captured_scalars_are_read_from_the_params_struct(tree: Path) -> None:
    # Note [translated scalars]: the kernel's arguments become fields of the op's params struct,
    # each captured name computed from them as the kernel computed it.
    t = translate_stub(tree, "softplus_stub", "softplus")
    assert t.ok and t.params_struct == "SoftplusParams"
    assert [(p.name, p.argument, p.captured) for p in t.params] == [
        ("beta", "const Scalar beta_", "beta"), ("threshold", "const Scalar threshold_", "threshold")]
    assert t.where == f"{CPU_DIR}/Activation.cpp:102" and "[beta, threshold](scalar_t a)" in (t.lambda_text or "")
    assert "operator()(const T in0, const SoftplusParams params) {" in (t.source or "")
    assert "const float beta = params.beta;" in (t.source or "")
    # fields named as the schema names the stub's scalars, not as the kernel's arguments
    t = translate_stub(tree, "hardtanh_backward_stub", "hardtanh_backward", fields=("min_val", "max_val"),
                       struct="HardtanhParams")
    assert [(p.name, p.argument) for p in t.params] == [("min_val", "const Scalar min"), ("max_val", "const Scalar max")]
    assert "const float min_val = params.min_val;" in (t.source or "")
    assert "operator()(const T in0, const T in1, const HardtanhParams params) {" in (t.source or "")


def test_a_stub_passing_other_scalars_than_the_kernel_takes_is_declined(tree: Path) -> None:
    t = translate_stub(tree, "softplus_stub", "softplus", fields=("beta",))
    assert not t.ok and t.declined == "softplus_kernel takes 2 scalar(s) (beta_, threshold_) but its stub passes 1 (beta)"


def test_a_scalar_of_the_element_type_is_rounded_to_it(tree: Path) -> None:
    # logit's `const scalar_t eps = eps_scalar.to<scalar_t>()` holds a half eps for half tensors
    t = translate_stub(tree, "logit_stub", "logit")
    assert t.ok, t.declined
    assert "const float lo = static_cast<float>(static_cast<T>(eps));" in (t.source or "")


def test_lambdas_picked_on_the_kernels_scalars_become_one_if_else_chain(tree: Path) -> None:
    # Note [lambdas picked at run time]: logit picks its lambda on eps; its vendor-library branch
    # (`at::hasMKL() && iter.is_contiguous()`) is left out.
    t = translate_stub(tree, "logit_stub", "logit")
    source = t.source or ""
    assert "hasMKL" not in source and "is_contiguous" not in source
    assert "    if ((eps < static_cast<float>(0))) {\n      const float x = static_cast<float>(in0);\n" in source
    assert "    } else {\n      float x = static_cast<float>(in0);\n      x = ((x < lo) ? lo : ((x > hi) ? hi : x));" in source
    assert t.lambda_text is not None and "// if (eps < scalar_t(0)): line 119" in t.lambda_text
    assert "// else: line 133" in t.lambda_text
    t = translate_stub(tree, "elu_like_backward_stub", "elu_like_backward")  # picked on a bool argument
    assert t.ok and "    if (params.is_result) {" in (t.source or "")


def test_a_vectorized_lambda_selecting_by_a_mask_is_translated_in_place_of_the_scalar_one(tree: Path) -> None:
    # Note [vector masks]: hardtanh_backward's scalar lambda passes grad at a NaN input, its
    # vectorized one (what contiguous inputs run) masks it to 0; the functor follows the mask.
    t = translate_stub(tree, "hardtanh_backward_stub", "hardtanh_backward", fields=("min_val", "max_val"),
                       struct="HardtanhParams")
    assert t.ok, t.declined
    assert t.where == f"{CPU_DIR}/Activation.cpp:287" and "the vectorized lambda" in (t.lambda_text or "")
    assert "(((self_val > min_val) && (self_val < max_val)) ? grad_val : static_cast<float>(0))" in (t.source or "")
    # logit_backward's blendv(nan_or_zero, quotient, in_range) becomes in_range ? quotient : nan_or_zero,
    # its captured one-value vectors the values
    t = translate_stub(tree, "logit_backward_stub", "logit_backward")
    assert t.ok, t.declined
    source = t.source or ""
    assert "((x_vec >= lo_vec) && (x_vec <= hi_vec)) ? (dy_vec / (x_vec * (kOneVec - x_vec))) : kZeroVec" in source
    assert "const float kNanVec = " in source and "quiet_NaN()" in source


def test_a_vectorized_lambda_without_a_mask_leaves_the_scalar_one(tree: Path) -> None:
    # hardsigmoid's vectorized lambda selects by no comparison mask: its scalar lambda is translated
    t = translate_stub(tree, "hardsigmoid_stub", "hardsigmoid")
    assert t.ok and t.where == f"{CPU_DIR}/Activation.cpp:60"
    assert "vectorized" not in (t.lambda_text or "")
