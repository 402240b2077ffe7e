"""Functor sources of the recipe table, written for this project in c10/metal style.

Each functor has explicit branches picked by `enable_if` on the element type: floating point,
integral, and bool where the op accepts it. Integral inputs of float-valued ops return `float`.
"""

from __future__ import annotations

_FLOAT = "::metal::enable_if_t<::metal::is_floating_point_v<T>, T>"
_FLOAT_BOOL = "::metal::enable_if_t<::metal::is_floating_point_v<T>, bool>"
_INT_FLOAT = "::metal::enable_if_t<!::metal::is_floating_point_v<T>, float>"
_INT = "::metal::enable_if_t<!::metal::is_floating_point_v<T>, T>"
_INT_BOOL = "::metal::enable_if_t<!::metal::is_floating_point_v<T>, bool>"


def _float_valued_unary(name: str, body: str) -> str:
    """A unary functor whose float branch computes `body` (of `v`, a float) and whose integral
    branch converts to float first."""
    return (
        f"struct {name}_functor {{\n"
        f"  template <typename T>\n"
        f"  inline {_FLOAT} operator()(const T x) {{\n"
        f"    const float v = static_cast<float>(x);\n"
        f"    return static_cast<T>({body});\n"
        f"  }}\n"
        f"  template <typename T>\n"
        f"  inline {_INT_FLOAT} operator()(const T x) {{\n"
        f"    const float v = static_cast<float>(x);\n"
        f"    return {body};\n"
        f"  }}\n"
        f"}};\n"
    )


def _float_only(name: str, params: str, body: str) -> str:
    """A functor for an op whose OpInfo only takes floating types; `body` works on floats."""
    return (
        f"struct {name}_functor {{\n"
        f"  template <typename T>\n"
        f"  inline {_FLOAT} operator()({params}) {{\n"
        f"{body}"
        f"  }}\n"
        f"}};\n"
    )


def _logical(name: str, expr: str) -> str:
    """A binary functor giving bool from the truth values `l` and `r` of its operands."""
    return (
        f"struct {name}_functor {{\n"
        f"  template <typename T>\n"
        f"  inline {_FLOAT_BOOL} operator()(const T a, const T b) {{\n"
        f"    const bool l = a != static_cast<T>(0);\n"
        f"    const bool r = b != static_cast<T>(0);\n"
        f"    return {expr};\n"
        f"  }}\n"
        f"  template <typename T>\n"
        f"  inline {_INT_BOOL} operator()(const T a, const T b) {{\n"
        f"    const bool l = static_cast<bool>(a);\n"
        f"    const bool r = static_cast<bool>(b);\n"
        f"    return {expr};\n"
        f"  }}\n"
        f"}};\n"
    )


_SIGN_INT = (
    "  template <typename T>\n"
    f"  inline {_INT} operator()(const T x) {{\n"
    "    if (::metal::is_same_v<T, bool>) {\n"
    "      return x;\n"
    "    }\n"
    "    return static_cast<T>((static_cast<T>(0) < x) - (x < static_cast<T>(0)));\n"
    "  }\n"
)

_SIGN_FLOAT = (
    "  template <typename T>\n"
    f"  inline {_FLOAT} operator()(const T x) {{\n"
    "    if (::metal::isnan(x)) {\n"
    "      return static_cast<T>(0);\n"
    "    }\n"
    "    return static_cast<T>((static_cast<T>(0) < x) - (x < static_cast<T>(0)));\n"
    "  }\n"
)


def _sign_like(name: str) -> str:
    """sign and sgn agree on real types: -1, 0 or 1 (bool stays as is, NaN gives 0)."""
    return f"struct {name}_functor {{\n{_SIGN_FLOAT}{_SIGN_INT}}};\n"


SOURCES: dict[str, str] = {
    "acosh": _float_valued_unary("acosh", "::metal::precise::acosh(v)"),
    "asinh": _float_valued_unary("asinh", "::metal::precise::asinh(v)"),
    "atanh": _float_valued_unary("atanh", "::metal::precise::atanh(v)"),
    "special_ndtri": _float_valued_unary(
        "special_ndtri", "M_SQRT2_F * ::c10::metal::erfinv(2.0f * v - 1.0f)"),
    "special_log_ndtr": _float_valued_unary(
        "special_log_ndtr", "::metal::log(0.5f * ::c10::metal::erfc(-v * M_SQRT1_2_F))"),
    "sign": _sign_like("sign"),
    "sgn": _sign_like("sgn"),
    "frac": _float_only("frac", "const T x", "    return x - ::metal::trunc(x);\n"),
    "mish": _float_only(
        "mish", "const T x",
        "    const float v = static_cast<float>(x);\n"
        "    return static_cast<T>(v * ::metal::precise::tanh(::metal::log(1.0f + ::metal::exp(v))));\n"),
    "conj_physical": (
        "struct conj_physical_functor {\n"
        "  // Real and bool elements are their own conjugate.\n"
        "  template <typename T>\n"
        f"  inline {_FLOAT} operator()(const T x) {{\n"
        "    return x;\n"
        "  }\n"
        "  template <typename T>\n"
        f"  inline {_INT} operator()(const T x) {{\n"
        "    return x;\n"
        "  }\n"
        "};\n"),
    "signbit": (
        "struct signbit_functor {\n"
        "  template <typename T>\n"
        f"  inline {_FLOAT_BOOL} operator()(const T x) {{\n"
        "    return ::metal::signbit(x);\n"
        "  }\n"
        "  template <typename T>\n"
        f"  inline {_INT_BOOL} operator()(const T x) {{\n"
        "    if (::metal::is_signed_v<T>) {\n"
        "      return x < static_cast<T>(0);\n"
        "    }\n"
        "    return false;\n"
        "  }\n"
        "};\n"),
    "logical_not": (
        "struct logical_not_functor {\n"
        "  template <typename T>\n"
        f"  inline {_FLOAT_BOOL} operator()(const T x) {{\n"
        "    return x == static_cast<T>(0);\n"
        "  }\n"
        "  template <typename T>\n"
        f"  inline {_INT_BOOL} operator()(const T x) {{\n"
        "    return !static_cast<bool>(x);\n"
        "  }\n"
        "};\n"),
    "heaviside": (
        "struct heaviside_functor {\n"
        "  // 0 below zero, 1 above it, `values` at zero (either sign); NaN compares false\n"
        "  // both ways, so a NaN input gives 0 as on CPU.\n"
        "  template <typename T>\n"
        f"  inline {_FLOAT} operator()(const T x, const T values) {{\n"
        "    if (x == static_cast<T>(0)) {\n"
        "      return values;\n"
        "    }\n"
        "    return static_cast<T>(x > static_cast<T>(0));\n"
        "  }\n"
        "  template <typename T>\n"
        f"  inline {_INT} operator()(const T x, const T values) {{\n"
        "    if (x == static_cast<T>(0)) {\n"
        "      return values;\n"
        "    }\n"
        "    return static_cast<T>(x > static_cast<T>(0));\n"
        "  }\n"
        "};\n"),
    "logical_and": _logical("logical_and", "l && r"),
    "logical_or": _logical("logical_or", "l || r"),
    "logical_xor": _logical("logical_xor", "l != r"),
    "sigmoid_backward": _float_only(
        "sigmoid_backward", "const T grad, const T out",
        "    const float y = static_cast<float>(out);\n"
        "    return static_cast<T>(static_cast<float>(grad) * (1.0f - y) * y);\n"),
    "tanh_backward": _float_only(
        "tanh_backward", "const T grad, const T out",
        "    const float y = static_cast<float>(out);\n"
        "    return static_cast<T>(static_cast<float>(grad) * (1.0f - y * y));\n"),
    "mish_backward": _float_only(
        "mish_backward", "const T grad, const T x",
        "    const float v = static_cast<float>(x);\n"
        "    const float t = ::metal::precise::tanh(::metal::log(1.0f + ::metal::exp(v)));\n"
        "    const float s = 1.0f / (1.0f + ::metal::exp(-v));\n"
        "    return static_cast<T>(static_cast<float>(grad) * (t + v * s * (1.0f - t * t)));\n"),
    "addcmul": (
        "struct addcmul_functor {\n"
        "  // self + t1 * t2; the host stub has already folded `value` into t1, as CPU\n"
        "  // evaluates (value * t1) * t2.\n"
        "  template <typename T>\n"
        f"  inline {_FLOAT} operator()(const T self, const T t1, const T t2) {{\n"
        "    return self + t1 * t2;\n"
        "  }\n"
        "  template <typename T>\n"
        f"  inline {_INT} operator()(const T self, const T t1, const T t2) {{\n"
        "    return static_cast<T>(self + t1 * t2);\n"
        "  }\n"
        "};\n"),
    "addcdiv": _float_only(
        "addcdiv", "const T self, const T t1, const T t2",
        "    // self + t1 / t2; `value` is folded into t1 by the host stub.\n"
        "    return self + t1 / t2;\n"),
    "sub": (
        "struct sub_functor {\n"
        "  // self - alpha * other; alpha arrives in the input's own type.\n"
        "  template <typename T, typename U>\n"
        "  inline ::metal::enable_if_t<::metal::is_floating_point_v<T>, T> operator()(\n"
        "      const T a, const T b, const U alpha) {\n"
        "    return static_cast<T>(static_cast<float>(a) - static_cast<float>(alpha) * static_cast<float>(b));\n"
        "  }\n"
        "  template <typename T, typename U>\n"
        "  inline ::metal::enable_if_t<!::metal::is_floating_point_v<T>, T> operator()(\n"
        "      const T a, const T b, const U alpha) {\n"
        "    return static_cast<T>(a - static_cast<T>(alpha) * b);\n"
        "  }\n"
        "};\n"),
}
