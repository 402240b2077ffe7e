"""Functor sources of the recipe table, written for this project in c10/metal style.

Each functor has explicit branches picked by `enable_if` on the element type: scalar floating
point, integral, bool where the op accepts it, and complex (`float2`/`half2`, picked by
`c10::metal::is_complex_v`) where MPS supports the op for complex today. Integral inputs of
float-valued ops return `float`.
"""

from __future__ import annotations

_FLOAT = "::metal::enable_if_t<::c10::metal::is_scalar_floating_point_v<T>, T>"
_FLOAT_BOOL = "::metal::enable_if_t<::c10::metal::is_scalar_floating_point_v<T>, bool>"
_COMPLEX = "::metal::enable_if_t<::c10::metal::is_complex_v<T>, T>"
_INT_FLOAT = "::metal::enable_if_t<!::metal::is_floating_point_v<T>, float>"
_INT = "::metal::enable_if_t<!::metal::is_floating_point_v<T>, T>"
_INT_BOOL = "::metal::enable_if_t<!::metal::is_floating_point_v<T>, bool>"


def _float_valued_unary(name: str, body: str, complex_body: str = "") -> str:
    """A unary functor whose float branch computes `body` (of `v`, a float) and whose integral
    branch converts to float first; `complex_body` (statements on `z`, a float2, returning a
    float2 `r`) adds a `float2`/`half2` branch with the complex helpers (`_COMPLEX_HELPERS`)."""
    complex_branch = (
        f"{_COMPLEX_HELPERS}"
        f"  template <typename T>\n"
        f"  inline {_COMPLEX} operator()(const T x) {{\n"
        f"    const float2 z = float2(x);\n"
        f"{complex_body}"
        f"    return T(r);\n"
        f"  }}\n"
    ) if complex_body else ""
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
        f"{complex_branch}"
        f"}};\n"
    )


# Complex helpers kept inside each functor (static members), so every port stays one
# self-contained block and two ports of one file never define a helper twice. The modulus is
# taken after scaling by the larger part (no overflow or underflow of |w|^2).
_COMPLEX_HELPERS = (
    "  // log|w| + i arg(w).\n"
    "  static float2 clog(const float2 w) {\n"
    "    const float m = ::metal::max(::metal::fabs(w.x), ::metal::fabs(w.y));\n"
    "    if (m == 0.0f || ::metal::isinf(m)) {  // w / m is NaN at an infinite part\n"
    "      return float2(m == 0.0f ? -INFINITY : INFINITY, ::metal::precise::atan2(w.y, w.x));\n"
    "    }\n"
    "    const float2 s = w / m;\n"
    "    return float2(::metal::precise::log(m) + 0.5f * ::metal::precise::log(::metal::dot(s, s)),\n"
    "                  ::metal::precise::atan2(w.y, w.x));\n"
    "  }\n"
    "  // log(1 + u), keeping the digits of a small u.\n"
    "  static float2 clog1p(const float2 u) {\n"
    "    if (::metal::max(::metal::fabs(u.x), ::metal::fabs(u.y)) >= 0.5f) {\n"
    "      return clog(float2(1.0f + u.x, u.y));\n"
    "    }\n"
    "    return float2(0.5f * ::c10::metal::log1p(u.x * (2.0f + u.x) + u.y * u.y),\n"
    "                  ::metal::precise::atan2(u.y, 1.0f + u.x));\n"
    "  }\n"
    "  // The principal square root; the part computed second is a quotient, not a difference.\n"
    "  static float2 csqrt(const float2 w) {\n"
    "    const float ax = ::metal::fabs(w.x);\n"
    "    const float m = ::metal::max(ax, ::metal::fabs(w.y));\n"
    "    if (m == 0.0f) {\n"
    "      return float2(0.0f, w.y);\n"
    "    }\n"
    "    const float2 s = w / m;\n"
    "    const float r = m * ::metal::precise::sqrt(::metal::dot(s, s));\n"
    "    const float t = ::metal::precise::sqrt(0.5f * r + 0.5f * ax);\n"
    "    if (w.x >= 0.0f) {\n"
    "      return float2(t, w.y / (2.0f * t));\n"
    "    }\n"
    "    return float2(::metal::fabs(w.y) / (2.0f * t), ::metal::copysign(t, w.y));\n"
    "  }\n"
)

# acosh(z) = 2 log(sqrt((z + 1) / 2) + sqrt((z - 1) / 2)) (Kahan's form: the right branch on
# the cut (-inf, 1] for either sign of zero). Near z = 1 the sum is 1 + u with
# u = h / (a + 1) + b, h = (z - 1) / 2, so log1p keeps u's digits. Past |z| = 2^13 it is
# log(2z) (sqrt(z + 1) sqrt(z - 1) is z to float precision): infinite parts keep arg z there,
# which the square roots of an infinity lose.
_ACOSH_COMPLEX = (
    "    if (::metal::max(::metal::fabs(z.x), ::metal::fabs(z.y)) > 8192.0f) {\n"
    "      return T(clog(z) + float2(M_LN2_F, 0.0f));\n"
    "    }\n"
    "    const float2 h = float2(0.5f * z.x - 0.5f, 0.5f * z.y);\n"
    "    const float2 a = csqrt(float2(0.5f * z.x + 0.5f, 0.5f * z.y));\n"
    "    const float2 b = csqrt(h);\n"
    "    float2 r;\n"
    "    if (::metal::max(::metal::fabs(h.x), ::metal::fabs(h.y)) < 0.25f) {\n"
    "      r = 2.0f * clog1p(::c10::metal::div(h, a + float2(1.0f, 0.0f)) + b);\n"
    "    } else {\n"
    "      r = 2.0f * clog(a + b);\n"
    "    }\n"
)

# asinh is odd, so it is computed for Re z >= 0 (+0 included) and the sign restored. There
# log(z + sqrt(1 + z^2)) = log1p(z + z^2 / (sqrt(1 + z^2) + 1)); past |z| = 2^13, where
# sqrt(1 + z^2) is z to float precision, it is log(2z) (and z^2 would overflow later on).
_ASINH_COMPLEX = (
    "    const bool flip = z.x < 0.0f || (z.x == 0.0f && ::metal::signbit(z.x));\n"
    "    const float2 w = flip ? -z : z;\n"
    "    float2 r;\n"
    "    if (::metal::max(::metal::fabs(w.x), ::metal::fabs(w.y)) > 8192.0f) {\n"
    "      r = clog(w) + float2(M_LN2_F, 0.0f);\n"
    "    } else {\n"
    "      const float2 w2 = ::c10::metal::mul(w, w);\n"
    "      const float2 s = csqrt(float2(1.0f + w2.x, w2.y));\n"
    "      r = clog1p(w + ::c10::metal::div(w2, s + float2(1.0f, 0.0f)));\n"
    "    }\n"
    "    r = flip ? -r : r;\n"
)

# atanh(z) = (log1p(z) - log1p(-z)) / 2: real part log(n / d) / 4 with n = (1 + x)^2 + y^2 and
# d = (1 - x)^2 + y^2, written log1p(4x / d) / 4 where 4x / d is small (near 0 and for large
# |z|, where n and d overflow); imaginary part atan2(2y, (1 - x)(1 + x) - y^2) / 2, both
# arguments halved so that 2y cannot overflow.
_ATANH_COMPLEX = (
    "    if (::metal::isinf(z.x) || ::metal::isinf(z.y)) {\n"
    "      // An infinite part: +-0 + i pi/2 with y's sign (the formulas below meet inf / inf there);\n"
    "      // an infinite real part with a NaN imaginary one keeps the NaN, as C99's catanh does.\n"
    "      const float im = ::metal::isinf(z.x) && ::metal::isnan(z.y) ? z.y : ::metal::copysign(M_PI_2_F, z.y);\n"
    "      return T(float2(::metal::copysign(0.0f, z.x), im));\n"
    "    }\n"
    "    const float d = (1.0f - z.x) * (1.0f - z.x) + z.y * z.y;\n"
    "    const float q = 4.0f * (z.x / d);  // not (4 x) / d: 4 x overflows near the largest floats\n"
    "    float2 r;\n"
    "    if (::metal::fabs(q) < 0.5f) {\n"
    "      r.x = 0.25f * ::c10::metal::log1p(q);\n"
    "    } else {\n"
    "      r.x = 0.25f * ::metal::precise::log(((1.0f + z.x) * (1.0f + z.x) + z.y * z.y) / d);\n"
    "    }\n"
    "    r.y = 0.5f * ::metal::precise::atan2(z.y, 0.5f * ((1.0f - z.x) * (1.0f + z.x) - z.y * z.y));\n"
)


def _float_only(name: str, params: str, body: str, complex_body: str = "") -> str:
    """A functor for an op whose OpInfo only takes floating types; `body` works on floats, and
    `complex_body` (if any) on `float2`/`half2`."""
    complex_branch = (
        f"  template <typename T>\n"
        f"  inline {_COMPLEX} operator()({params}) {{\n"
        f"{complex_body}"
        f"  }}\n"
    ) if complex_body else ""
    return (
        f"struct {name}_functor {{\n"
        f"  template <typename T>\n"
        f"  inline {_FLOAT} operator()({params}) {{\n"
        f"{body}"
        f"  }}\n"
        f"{complex_branch}"
        f"}};\n"
    )


def _logical(name: str, expr: str) -> str:
    """A binary functor giving bool from the truth values `l` and `r` of its operands.

    Truthiness is the tree's own `c10::metal::cast_to<bool>` (c10/metal/utils.h): `x != 0` for
    scalars, either component nonzero for complex, one template for every dtype (Note [reuse
    before writing] in port/tree/reuse.py)."""
    return (
        f"struct {name}_functor {{\n"
        f"  template <typename T>\n"
        f"  inline bool operator()(const T a, const T b) {{\n"
        f"    const bool l = ::c10::metal::cast_to<bool>(a);\n"
        f"    const bool r = ::c10::metal::cast_to<bool>(b);\n"
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


_SGN_COMPLEX = (
    "  // z / |z| (0 at 0). |z| is taken after scaling by the larger part, so it neither\n"
    "  // overflows nor underflows; an infinite part divides as is (inf / inf is NaN, x / inf 0).\n"
    "  template <typename T>\n"
    f"  inline {_COMPLEX} operator()(const T x) {{\n"
    "    if (x.x == 0 && x.y == 0) {\n"
    "      return T(0, 0);\n"
    "    }\n"
    "    const float2 v = float2(x);\n"
    "    const float m = ::metal::max(::metal::fabs(v.x), ::metal::fabs(v.y));\n"
    "    if (::metal::isinf(m)) {\n"
    "      return T(v / m);\n"
    "    }\n"
    "    const float2 u = v / m;\n"
    "    return T(u / ::metal::precise::sqrt(::metal::dot(u, u)));\n"
    "  }\n"
)


def _sign_like(name: str, *, complex_branch: bool = False) -> str:
    """sign and sgn agree on real types: -1, 0 or 1 (bool stays as is, NaN gives 0); sgn also takes
    complex numbers."""
    extra = _SGN_COMPLEX if complex_branch else ""
    return f"struct {name}_functor {{\n{_SIGN_FLOAT}{_SIGN_INT}{extra}}};\n"


def _float_via_eval(name: str, comment: str, eval_body: str) -> str:
    """A unary functor computing `static float eval(const float v)` (body `eval_body`) in float for
    every input type: floating inputs keep their type, integral ones give float."""
    return (
        f"struct {name}_functor {{\n"
        f"{comment}"
        f"  static float eval(const float v) {{\n"
        f"{eval_body}"
        f"  }}\n"
        f"  template <typename T>\n"
        f"  inline {_FLOAT} operator()(const T x) {{\n"
        f"    return static_cast<T>(eval(static_cast<float>(x)));\n"
        f"  }}\n"
        f"  template <typename T>\n"
        f"  inline {_INT_FLOAT} operator()(const T x) {{\n"
        f"    return eval(static_cast<float>(x));\n"
        f"  }}\n"
        f"}};\n"
    )


def _horner(var: str, coefficients: tuple[str, ...], indent: str = "    ", result: str = "r") -> str:
    """Statements leaving the polynomial in `var` (highest power first) in float `result`."""
    lines = [f"{indent}float {result} = {coefficients[0]};\n"]
    lines += [f"{indent}{result} = ::metal::fma({result}, {var}, {c});\n" for c in coefficients[1:]]
    return "".join(lines)


# Single-precision erfinv polynomials in w = -log((1 - y)(1 + y)) (two ranges of w), after
# M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011).
_ERFINV_LOW = ("2.81022636e-08f", "3.43273939e-07f", "-3.5233877e-06f", "-4.39150654e-06f", "0.00021858087f",
               "-0.00125372503f", "-0.00417768164f", "0.246640727f", "1.50140941f")
_ERFINV_HIGH = ("-0.000200214257f", "0.000100950558f", "0.00134934322f", "-0.00367342844f", "0.00573950773f",
                "-0.0076224613f", "0.00943887047f", "1.00167406f", "2.83297682f")
# Tail of the normal quantile as a rational function of q = sqrt(-2 log p), after P. J. Acklam's
# algorithm for the inverse normal CDF.
_TAIL_NUM = ("-7.784894002430293e-03f", "-3.223964580411365e-01f", "-2.400758277161838e+00f",
             "-2.549732539343734e+00f", "4.374664141464968e+00f", "2.938163982698783e+00f")
_TAIL_DEN = ("7.784695709041462e-03f", "3.224671290700398e-01f", "2.445134137142996e+00f",
             "3.754408661907416e+00f", "1.0f")

_NDTRI_EVAL = (
    "    if (!(v > 0.0f && v < 1.0f)) {\n"
    "      return v == 0.0f ? -INFINITY : (v == 1.0f ? INFINITY : NAN);\n"
    "    }\n"
    "    // -log(4p(1 - p)) is -log((1 - y)(1 + y)) for y = 2p - 1, without cancellation near 0 or 1.\n"
    "    float w = -::metal::precise::log(4.0f * v * (1.0f - v));\n"
    "    if (w > 16.0f) {\n"
    "      const float s = v < 0.5f ? v : 1.0f - v;\n"
    "      const float q = ::metal::precise::sqrt(-2.0f * ::metal::precise::log(s));\n"
    + _horner("q", _TAIL_NUM, "      ", "num")
    + _horner("q", _TAIL_DEN, "      ", "den")
    + "      return v < 0.5f ? num / den : -num / den;\n"
    "    }\n"
    "    if (w < 5.0f) {\n"
    "      w -= 2.5f;\n"
    + _horner("w", _ERFINV_LOW, "      ")
    + "      return M_SQRT2_F * r * (2.0f * v - 1.0f);\n"
    "    }\n"
    "    w = ::metal::precise::sqrt(w) - 3.0f;\n"
    + _horner("w", _ERFINV_HIGH)
    + "    return M_SQRT2_F * r * (2.0f * v - 1.0f);\n"
)

_LOG_NDTR_EVAL = (
    "    if (v < -2.0f || v > 2.0f) {\n"
    "      // The tail beyond |v|: log(phi(v) * R(|v|)) with the Mills ratio R as a continued fraction\n"
    "      // R(z) = 1 / (z + 1 / (z + 2 / (z + 3 / ...))), finite where erfc underflows; above 2 the CDF is\n"
    "      // 1 - tail, taken through log1p (1 - erf(...) would cancel the tail's digits).\n"
    "      const float z = ::metal::abs(v);\n"
    "      float acc = 0.0f;\n"
    "      for (int k = 20; k > 0; --k) {\n"
    "        acc = static_cast<float>(k) / (z + acc);\n"
    "      }\n"
    "      const float log_tail = -0.5f * v * v - 0.918938533f - ::metal::precise::log(z + acc);\n"
    "      return v < 0.0f ? log_tail : ::c10::metal::log1p(-::metal::precise::exp(log_tail));\n"
    "    }\n"
    "    const float e = ::c10::metal::erf(v * M_SQRT1_2_F);\n"
    "    return v > 0.0f ? ::c10::metal::log1p(-0.5f * (1.0f - e)) : ::metal::precise::log(0.5f * (1.0f + e));\n"
)


SOURCES: dict[str, str] = {
    "acosh": _float_valued_unary("acosh", "::metal::precise::acosh(v)", _ACOSH_COMPLEX),
    "asinh": _float_valued_unary("asinh", "::metal::precise::asinh(v)", _ASINH_COMPLEX),
    "atanh": _float_valued_unary("atanh", "::metal::precise::atanh(v)", _ATANH_COMPLEX),
    "special_ndtri": _float_via_eval(
        "special_ndtri", "  // The normal quantile: sqrt(2) * erfinv(2p - 1), and a rational tail in sqrt(-2 log p).\n",
        _NDTRI_EVAL),
    "special_log_ndtr": _float_via_eval(
        "special_log_ndtr", "  // log of the normal CDF, accurate in both tails.\n", _LOG_NDTR_EVAL),
    "sign": _sign_like("sign"),
    "sgn": _sign_like("sgn", complex_branch=True),
    "frac": _float_only("frac", "const T x", "    return x - ::metal::trunc(x);\n"),
    "mish": _float_only(
        "mish", "const T x",
        "    const float v = static_cast<float>(x);\n"
        "    // softplus through log1p: log(1 + e^v) loses e^v's digits for negative v.\n"
        "    return static_cast<T>(v * ::metal::precise::tanh(::c10::metal::log1p(::metal::exp(v))));\n"),
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
        "  template <typename T>\n"
        f"  inline {_COMPLEX} operator()(const T x) {{\n"
        "    return T(x.x, -x.y);\n"
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
        "  // Truthiness by the tree's c10::metal::cast_to<bool> (complex: either part nonzero).\n"
        "  template <typename T>\n"
        "  inline bool operator()(const T x) {\n"
        "    return !::c10::metal::cast_to<bool>(x);\n"
        "  }\n"
        "};\n"),
    "heaviside": (
        "struct heaviside_functor {\n"
        "  // 0 below zero, 1 above it, `values` at zero (either sign); NaN compares false\n"
        "  // both ways, so a NaN input gives 0 as on CPU. One template serves every type.\n"
        "  template <typename T>\n"
        "  inline T operator()(const T x, const T values) {\n"
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
        "    // CPU rounds each step to half for half tensors, and works in float otherwise.\n"
        "    if (::metal::is_same_v<T, half>) {\n"
        "      return grad * (static_cast<T>(1) - out) * out;\n"
        "    }\n"
        "    const float y = static_cast<float>(out);\n"
        "    return static_cast<T>(static_cast<float>(grad) * (1.0f - y) * y);\n",
        "    // grad * conj((1 - out) * out), as CPU computes it for complex types.\n"
        "    const float2 y = float2(out);\n"
        "    const float2 d = ::c10::metal::mul(float2(1, 0) - y, y);\n"
        "    return T(::c10::metal::mul(float2(grad), float2(d.x, -d.y)));\n"),
    "tanh_backward": _float_only(
        "tanh_backward", "const T grad, const T out",
        "    const float y = static_cast<float>(out);\n"
        "    return static_cast<T>(static_cast<float>(grad) * (1.0f - y * y));\n",
        "    // grad * conj(1 - out * out), as CPU computes it for complex types.\n"
        "    const float2 y = float2(out);\n"
        "    const float2 d = float2(1, 0) - ::c10::metal::mul(y, y);\n"
        "    return T(::c10::metal::mul(float2(grad), float2(d.x, -d.y)));\n"),
    "mish_backward": _float_only(
        "mish_backward", "const T grad, const T x",
        "    const float v = static_cast<float>(x);\n"
        "    const float t = ::metal::precise::tanh(::c10::metal::log1p(::metal::exp(v)));\n"
        "    const float s = 1.0f / (1.0f + ::metal::exp(-v));\n"
        "    return static_cast<T>(static_cast<float>(grad) * (t + v * s * (1.0f - t * t)));\n"),
    # REGISTER_TERNARY_ALPHA_OP (TERNARY_ALPHA_KERNELS) hands the functor the operands at opmath
    # precision (float for half and bfloat16, as CPU computes them) and `value` as the host sent it,
    # at the same precision; c10::metal::mul/div serve real and complex types alike.
    "addcmul": (
        "struct addcmul_functor {\n"
        "  // self + (value * t1) * t2, unfused and in CPU's order.\n"
        "  template <typename T, typename A>\n"
        "  inline T operator()(const T self, const T t1, const T t2, const A value) {\n"
        "    const T scaled = ::c10::metal::mul(static_cast<T>(value), t1);\n"
        "    return self + ::c10::metal::mul(scaled, t2);\n"
        "  }\n"
        "};\n"),
    "addcdiv": (
        "struct addcdiv_functor {\n"
        "  // self + (value * t1) / t2, in CPU's order.\n"
        "  template <typename T, typename A>\n"
        "  inline T operator()(const T self, const T t1, const T t2, const A value) {\n"
        "    const T scaled = ::c10::metal::mul(static_cast<T>(value), t1);\n"
        "    return self + quotient(scaled, t2);\n"
        "  }\n"
        "  template <typename T, ::metal::enable_if_t<!::c10::metal::is_complex_v<T>, bool> = true>\n"
        "  static inline T quotient(const T x, const T y) {\n"
        "    return ::c10::metal::div(x, y);\n"
        "  }\n"
        "  // A complex quotient scaled by the divisor's larger part, as CPU divides: 1e20-sized operands\n"
        "  // neither overflow |y|^2 nor turn NaN; a finite numerator over an infinite divisor is 0.\n"
        "  template <typename T, ::metal::enable_if_t<::c10::metal::is_complex_v<T>, bool> = true>\n"
        "  static inline T quotient(const T x, const T y) {\n"
        "    const float s = ::metal::max(::metal::fabs(static_cast<float>(y.x)), ::metal::fabs(static_cast<float>(y.y)));\n"
        "    const float2 xf = float2(x);\n"
        "    if (::metal::isinf(s) && ::metal::isfinite(xf.x) && ::metal::isfinite(xf.y)) {\n"
        "      return T(0, 0);\n"
        "    }\n"
        "    if (!(s > 0.0f) || !::metal::isfinite(s)) {\n"
        "      return ::c10::metal::div(x, y);\n"
        "    }\n"
        "    const float2 ys = float2(y) / s;\n"
        "    const float2 xs = xf / s;\n"
        "    return T(float2(::metal::dot(xs, ys), xs.y * ys.x - xs.x * ys.y) / ::metal::dot(ys, ys));\n"
        "  }\n"
        "};\n"),
    "sub": (
        "struct sub_functor {\n"
        "  // self - alpha * other; alpha arrives in the input's own type.\n"
        "  template <typename T, typename U>\n"
        f"  inline {_FLOAT} operator()(const T a, const T b, const U alpha) {{\n"
        "    return static_cast<T>(static_cast<float>(a) - static_cast<float>(alpha) * static_cast<float>(b));\n"
        "  }\n"
        "  template <typename T, typename U>\n"
        f"  inline {_INT} operator()(const T a, const T b, const U alpha) {{\n"
        "    return static_cast<T>(a - static_cast<T>(alpha) * b);\n"
        "  }\n"
        "  template <typename T, typename U>\n"
        f"  inline {_COMPLEX} operator()(const T a, const T b, const U alpha) {{\n"
        "    return T(float2(a) - ::c10::metal::mul(float2(alpha), float2(b)));\n"
        "  }\n"
        "};\n"),
}


TERNARY_ALPHA_MACRO = "REGISTER_TERNARY_ALPHA_OP"

# Note [ternary alpha kernels]: this PyTorch's c10/metal has ternary kernels without a scalar, and
# its exec_ternary_kernel passes none. Ops with one (addcmul's and addcdiv's `value`) get these two
# kernels in their own kernel file, launched by the host file's exec_ternary_kernel_with_alpha
# (host.py): kernels are picked by the iterator's common dtype, not the output's (a wider `out=`
# must not widen the computation): `dense` when every operand and the output are contiguous and of
# the common dtype, else `strided_cast`, which reads each input at its own type, computes at the
# common dtype and casts to the output's dtype on store (c10::metal::store_at_offs). Host names:
# <op>_dense_<common>_<common>_<alpha> and <op>_strided_cast_<common>_<alpha>.
TERNARY_ALPHA_KERNELS = (
    "// Ternary kernels taking a scalar argument (`value`), given to the functor with the\n"
    "// operands at opmath precision. c10/metal's ternary kernels take no scalar.\n"
    "template <typename T, typename A, typename F>\n"
    "kernel void ternary_alpha_dense(\n"
    "    device T* output [[buffer(0)]],\n"
    "    constant T* input [[buffer(1)]],\n"
    "    constant T* other1 [[buffer(2)]],\n"
    "    constant T* other2 [[buffer(3)]],\n"
    "    constant A& alpha [[buffer(4)]],\n"
    "    uint tid [[thread_position_in_grid]]) {\n"
    "  using om_t = ::c10::metal::opmath_t<T>;\n"
    "  F f;\n"
    "  output[tid] = static_cast<T>(\n"
    "      f(om_t(input[tid]), om_t(other1[tid]), om_t(other2[tid]), alpha));\n"
    "}\n"
    "\n"
    "template <typename T, typename A, typename F>\n"
    "kernel void ternary_alpha_strided_cast(\n"
    "    device void* output [[buffer(0)]],\n"
    "    constant void* input [[buffer(1)]],\n"
    "    constant void* other1 [[buffer(2)]],\n"
    "    constant void* other2 [[buffer(3)]],\n"
    "    constant A& alpha [[buffer(4)]],\n"
    "    constant long* sizes [[buffer(5)]],\n"
    "    constant long* output_strides [[buffer(6)]],\n"
    "    constant long* input_strides [[buffer(7)]],\n"
    "    constant long* other1_strides [[buffer(8)]],\n"
    "    constant long* other2_strides [[buffer(9)]],\n"
    "    constant uint4& ndim_types [[buffer(10)]],\n"
    "    constant uint& out_type [[buffer(11)]],\n"
    "    uint tid [[thread_position_in_grid]]) {\n"
    "  using om_t = ::c10::metal::opmath_t<T>;\n"
    "  using ::c10::metal::ScalarType;\n"
    "  F f;\n"
    "  const uint ndim = ndim_types.x;\n"
    "  int pos[::c10::metal::max_ndim];\n"
    "  ::c10::metal::pos_from_thread_index(int(tid), pos, sizes, ndim);\n"
    "  const auto a = ::c10::metal::val_at_offs<om_t>(\n"
    "      input,\n"
    "      ::c10::metal::offset_from_coord(pos, input_strides, ndim),\n"
    "      static_cast<ScalarType>(ndim_types.y));\n"
    "  const auto b = ::c10::metal::val_at_offs<om_t>(\n"
    "      other1,\n"
    "      ::c10::metal::offset_from_coord(pos, other1_strides, ndim),\n"
    "      static_cast<ScalarType>(ndim_types.z));\n"
    "  const auto c = ::c10::metal::val_at_offs<om_t>(\n"
    "      other2,\n"
    "      ::c10::metal::offset_from_coord(pos, other2_strides, ndim),\n"
    "      static_cast<ScalarType>(ndim_types.w));\n"
    "  // Computed at the common dtype T, cast to the output's dtype on store.\n"
    "  ::c10::metal::store_at_offs(\n"
    "      output,\n"
    "      ::c10::metal::offset_from_coord(pos, output_strides, ndim),\n"
    "      static_cast<ScalarType>(out_type),\n"
    "      static_cast<T>(f(a, b, c, alpha)));\n"
    "}\n"
    "\n"
    "#define REGISTER_TERNARY_ALPHA_OP(NAME, DTYPEI, DTYPEA, DTYPEO)             \\\n"
    "  static_assert(::metal::is_same_v<DTYPEI, DTYPEO>,                         \\\n"
    "                \"ternary ops with a scalar keep the input type\");          \\\n"
    "  template [[host_name(#NAME \"_dense_\" #DTYPEO \"_\" #DTYPEI                \\\n"
    "                             \"_\" #DTYPEA)]] kernel void                     \\\n"
    "  ternary_alpha_dense<DTYPEI, DTYPEA, NAME##_functor>(                      \\\n"
    "      device DTYPEI * output,                                               \\\n"
    "      constant DTYPEI * input,                                              \\\n"
    "      constant DTYPEI * other1,                                             \\\n"
    "      constant DTYPEI * other2,                                             \\\n"
    "      constant DTYPEA & alpha,                                              \\\n"
    "      uint tid);                                                            \\\n"
    "  template [[host_name(#NAME \"_strided_cast_\" #DTYPEO \"_\" #DTYPEA)]] kernel \\\n"
    "      void                                                                  \\\n"
    "      ternary_alpha_strided_cast<DTYPEI, DTYPEA, NAME##_functor>(           \\\n"
    "          device void* output,                                              \\\n"
    "          constant void* input,                                             \\\n"
    "          constant void* other1,                                            \\\n"
    "          constant void* other2,                                            \\\n"
    "          constant DTYPEA& alpha,                                           \\\n"
    "          constant long* sizes,                                             \\\n"
    "          constant long* output_strides,                                    \\\n"
    "          constant long* input_strides,                                     \\\n"
    "          constant long* other1_strides,                                    \\\n"
    "          constant long* other2_strides,                                    \\\n"
    "          constant uint4& ndim_types,                                       \\\n"
    "          constant uint& out_type,                                          \\\n"
    "          uint tid)\n"
)
