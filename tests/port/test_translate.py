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
        "const auto inv_log_2 = static_cast<float>((1.0f / M_LN2_F));", "float m = cpp_max(a, b);",
        "::c10::metal::log1p(::metal::precise::exp2(-::metal::fabs((a - b)))) * inv_log_2"]),
    ("is_negative_like_stub", "UnaryOpsKernel.cpp:128", ("float32", "float16", "bfloat16"), [
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
    ("softplus_stub", "captures scalars beta, threshold: needs the params route"),
    ("elu_like_backward_stub", "elu_like_backward_kernel picks one of 2 scalar lambdas at run time (lines 116, 118)"),
    ("series_stub", "a loop or jump (for)"),
    ("checked_log_stub", "TORCH_CHECK in the lambda (a check the functor cannot make)"),
    ("helper_stub", "calls calc_something_odd, which has no Metal counterpart in the function map"),
    ("split_stub", "two outputs (the lambda returns a tuple)"),
    ("angle_like_stub", "angle_like_kernel: complex-only"),
    ("absent_stub", "no aten/src/ATen/native/cpu/*.cpp registers absent_stub (REGISTER_DISPATCH)"),
    ("pair_backward_stub", "two outputs (pair_backward_kernel calls cpu_kernel_multiple_outputs)"),
    ("macro_made_stub", f"macro_made_kernel ({CPU_DIR}/Activation.cpp:202) has no cpu_kernel scalar lambda"),
    ("ceil_like_stub", f"ceil_like_kernel ({CPU_DIR}/UnaryOpsKernel.cpp:121) has no cpu_kernel scalar lambda"),
])
def test_lambdas_outside_the_subset_are_declined_with_the_reason(tree: Path, stub: str, reason: str) -> None:
    t = translate_stub(tree, stub, stub.removesuffix("_stub"))
    assert not t.ok and t.source is None
    assert t.declined == reason


def test_captured_scalars_are_listed_as_params_for_the_params_route(tree: Path) -> None:
    t = translate_stub(tree, "softplus_stub", "softplus")
    assert [(p.name, p.metal_type, p.source) for p in t.params] == [
        ("beta", "float", "beta_.to<opmath_t>()"), ("threshold", "float", "threshold_.to<opmath_t>()")]
    assert t.where == f"{CPU_DIR}/Activation.cpp:102" and "[beta, threshold](scalar_t a)" in (t.lambda_text or "")
