// metalport Metal-on-CPU shim, part 2: metal:: math, integer intrinsics, geometry, atomics.
// Float overloads are plain functions (ints and doubles convert as in MSL); half and bfloat are
// computed in float and rounded; vectors element-wise.  precise:: and fast:: alias the same code.
#pragma once
#include "metal_types.h"

#define NAN __builtin_nanf("")
#define INFINITY __builtin_inff()
#define HUGE_VALF __builtin_huge_valf()
#define MAXFLOAT FLT_MAX
#define HALF_MAX ((half)65504.0f)
#define HALF_MIN ((half)6.103515625e-05f)
#define HALF_EPSILON ((half)0.0009765625f)
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H ((half)M_E_F)
#define M_PI_H ((half)M_PI_F)
#define M_PI_2_H ((half)M_PI_2_F)
#define M_PI_4_H ((half)M_PI_4_F)
#define M_1_PI_H ((half)M_1_PI_F)
#define M_SQRT2_H ((half)M_SQRT2_F)
#define M_LN2_H ((half)M_LN2_F)
#define M_LOG2E_H ((half)M_LOG2E_F)

namespace mshim {
template <class A, class B>
using promote_t = std::conditional_t<
    std::is_integral<A>::value && std::is_integral<B>::value, std::common_type_t<A, B>,
    std::conditional_t<std::is_floating_point<A>::value || std::is_floating_point<B>::value, float,
                       std::conditional_t<std::is_same<A, half>::value || std::is_same<B, half>::value,
                                          half, bfloat>>>;
template <class A, class B>
constexpr bool mixed = is_scalar_v<A> && is_scalar_v<B> && !std::is_same<A, B>::value;
}  // namespace mshim

namespace mshim {
// Note [shim constants in double]: shaders are compiled with single-precision constants (an
// unsuffixed `0.5` is a float, as in Metal; see flags.py), so the shim spells a double constant
// as a long double literal converted to double.
constexpr double kPi = double(3.14159265358979323846264338327950288L);

// sin(pi x) and cos(pi x) as Metal's sinpi/cospi (and IEEE 754 sinPi/cosPi): exact at integers
// and half-integers, so sinpi(-3) is -0 (c10's lgamma of a negative integer is then inf) and
// cospi(n + 0.5) is +0.  x = k/2 + r with |r| <= 1/4 exactly; the rest runs in double.
inline double pi_part(float x, bool cosine) {
  if (!__builtin_isfinite(x)) return __builtin_nan("");
  if (__builtin_fabsf(x) >= 8388608.0f) {  // every float this large is an integer
    if (!cosine) return __builtin_copysign(0.0, double(x));
    return __builtin_fmodf(x, 2.0f) == 0.0f ? 1.0 : -1.0;
  }
  const float k = __builtin_rintf(2.0f * x);  // 2x is exact below 2^24
  const double r = double(x) - double(k) * double(0.5L);
  const int quadrant = int((long long)k & 3) + (cosine ? 1 : 0);
  const double a = kPi * r;
  double v = 0.0;
  switch (quadrant & 3) {
    case 0: v = __builtin_sin(a); break;
    case 1: v = __builtin_cos(a); break;
    case 2: v = -__builtin_sin(a); break;
    default: v = -__builtin_cos(a); break;
  }
  if (v == 0.0) return cosine ? 0.0 : __builtin_copysign(0.0, double(x));
  return v;
}
inline float sinpi(float x) { return float(pi_part(x, false)); }
inline float cospi(float x) { return float(pi_part(x, true)); }
// tan(pi x): +-0 at integers, +-inf at half-integers (sinpi over a +0 cospi).
inline float tanpi(float x) { return float(pi_part(x, false) / pi_part(x, true)); }
// Metal documents fmod(x, y) as x - y * trunc(x / y) (not C's exact remainder): the quotient is
// rounded, so a large |x / y| gives Metal's answer, and fmod(x, inf) is NaN.  One fused rounding
// for the multiply-subtract, as the shader build contracts (flags.py: -ffp-contract=fast).
inline float fmod(float x, float y) { return __builtin_fmaf(-y, __builtin_truncf(x / y), x); }
}  // namespace mshim

namespace metal {
#define MSHIM_F1(NAME, EXPR)                                                          \
  inline float NAME(float x) { return EXPR; }                                          \
  inline float NAME(double x) { return NAME(float(x)); }                               \
  inline half NAME(half x) { return half(NAME(float(x))); }                            \
  inline bfloat NAME(bfloat x) { return bfloat(NAME(float(x))); }                      \
  template <class T, int N> inline vec<T, N> NAME(const vec<T, N>& v) {                \
    vec<T, N> r;                                                                       \
    for (int i = 0; i < N; ++i) r[i] = NAME(v[i]);                                     \
    return r;                                                                          \
  }
#define MSHIM_F2(NAME, EXPR)                                                          \
  inline float NAME(float x, float y) { return EXPR; }                                 \
  inline half NAME(half x, half y) { return half(NAME(float(x), float(y))); }          \
  inline bfloat NAME(bfloat x, bfloat y) { return bfloat(NAME(float(x), float(y))); }  \
  template <class A, class B, std::enable_if_t<mshim::mixed<A, B>, int> = 0>           \
  inline mshim::promote_t<A, B> NAME(A x, B y) {                                       \
    return mshim::promote_t<A, B>(NAME(float(x), float(y)));                           \
  }                                                                                    \
  template <class T, int N> inline vec<T, N> NAME(const vec<T, N>& a, const vec<T, N>& b) { \
    vec<T, N> r;                                                                       \
    for (int i = 0; i < N; ++i) r[i] = NAME(a[i], b[i]);                               \
    return r;                                                                          \
  }

MSHIM_F1(sin, __builtin_sinf(x))
MSHIM_F1(cos, __builtin_cosf(x))
MSHIM_F1(tan, __builtin_tanf(x))
MSHIM_F1(asin, __builtin_asinf(x))
MSHIM_F1(acos, __builtin_acosf(x))
MSHIM_F1(atan, __builtin_atanf(x))
MSHIM_F1(sinh, __builtin_sinhf(x))
MSHIM_F1(cosh, __builtin_coshf(x))
MSHIM_F1(tanh, __builtin_tanhf(x))
MSHIM_F1(asinh, __builtin_asinhf(x))
MSHIM_F1(acosh, __builtin_acoshf(x))
MSHIM_F1(atanh, __builtin_atanhf(x))
MSHIM_F1(exp, __builtin_expf(x))
MSHIM_F1(exp2, __builtin_exp2f(x))
MSHIM_F1(exp10, __builtin_exp10f(x))
MSHIM_F1(log, __builtin_logf(x))
MSHIM_F1(log2, __builtin_log2f(x))
MSHIM_F1(log10, __builtin_log10f(x))
MSHIM_F1(logb, __builtin_logbf(x))
MSHIM_F1(sqrt, __builtin_sqrtf(x))
MSHIM_F1(rsqrt, 1.0f / __builtin_sqrtf(x))
MSHIM_F1(cbrt, __builtin_cbrtf(x))
MSHIM_F1(fabs, __builtin_fabsf(x))
MSHIM_F1(floor, __builtin_floorf(x))
MSHIM_F1(ceil, __builtin_ceilf(x))
MSHIM_F1(trunc, __builtin_truncf(x))
MSHIM_F1(round, __builtin_roundf(x))
MSHIM_F1(rint, __builtin_rintf(x))
MSHIM_F1(fract, __builtin_fminf(x - __builtin_floorf(x), 0x1.fffffep-1f))
MSHIM_F1(sinpi, mshim::sinpi(x))
MSHIM_F1(cospi, mshim::cospi(x))
MSHIM_F1(tanpi, mshim::tanpi(x))
MSHIM_F1(sign, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == x ? x : 0.0f)
MSHIM_F1(saturate, __builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f))
MSHIM_F2(pow, __builtin_powf(x, y))
MSHIM_F2(powr, __builtin_powf(x, y))
MSHIM_F2(atan2, __builtin_atan2f(x, y))
MSHIM_F2(fmod, mshim::fmod(x, y))
MSHIM_F2(fmin, __builtin_fminf(x, y))
MSHIM_F2(fmax, __builtin_fmaxf(x, y))
MSHIM_F2(fdim, __builtin_fdimf(x, y))
MSHIM_F2(copysign, __builtin_copysignf(x, y))
// nextafter steps one unit in the last place of the argument's own type.
inline float nextafter(float x, float y) { return __builtin_nextafterf(x, y); }
template <class T> inline T mshim_next16(T x, T y) {
  if (float(x) != float(x) || float(y) != float(y)) return T(__builtin_nanf(""));
  if (float(x) == float(y)) return y;
  uint16_t bits;
  __builtin_memcpy(&bits, &x, 2);
  if (float(x) == 0.0f) {
    bits = uint16_t(float(y) < 0.0f ? 0x8001u : 0x0001u);
  } else if ((float(x) < float(y)) == (float(x) > 0.0f)) {
    ++bits;
  } else {
    --bits;
  }
  __builtin_memcpy(&x, &bits, 2);
  return x;
}
inline half nextafter(half x, half y) { return mshim_next16(x, y); }
inline bfloat nextafter(bfloat x, bfloat y) { return mshim_next16(x, y); }
template <class A, class B, std::enable_if_t<mshim::mixed<A, B>, int> = 0>
inline mshim::promote_t<A, B> nextafter(A x, B y) {
  using R = mshim::promote_t<A, B>;
  return nextafter(R(x), R(y));
}
template <class T, int N> inline vec<T, N> nextafter(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = nextafter(a[i], b[i]);
  return r;
}
MSHIM_F2(step, y < x ? 0.0f : 1.0f)
MSHIM_F2(divide, x / y)

// abs: floating overloads plus integers (Metal's abs(int) wraps at INT_MIN like -fwrapv).
inline float abs(float x) { return __builtin_fabsf(x); }
inline float abs(double x) { return __builtin_fabsf(float(x)); }
inline half abs(half x) { return half(__builtin_fabsf(float(x))); }
inline bfloat abs(bfloat x) { return bfloat::from_bits(uint16_t(x.bits & 0x7fffu)); }
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T abs(T x) {
  if constexpr (std::is_signed<T>::value) return x < 0 ? T(-x) : x;
  else return x;
}
template <class T, int N> inline vec<T, N> abs(const vec<T, N>& v) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = abs(v[i]);
  return r;
}

// min/max: fmin/fmax semantics for floats (a NaN operand yields the other), ordinary for ints.
inline float min(float a, float b) { return __builtin_fminf(a, b); }
inline float max(float a, float b) { return __builtin_fmaxf(a, b); }
inline half min(half a, half b) { return half(__builtin_fminf(a, b)); }
inline half max(half a, half b) { return half(__builtin_fmaxf(a, b)); }
inline bfloat min(bfloat a, bfloat b) { return bfloat(__builtin_fminf(a, b)); }
inline bfloat max(bfloat a, bfloat b) { return bfloat(__builtin_fmaxf(a, b)); }
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T min(T a, T b) {
  return b < a ? b : a;
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T max(T a, T b) {
  return a < b ? b : a;
}
template <class A, class B, std::enable_if_t<mshim::mixed<A, B>, int> = 0>
inline mshim::promote_t<A, B> min(A a, B b) {
  using R = mshim::promote_t<A, B>;
  return min(R(a), R(b));
}
template <class A, class B, std::enable_if_t<mshim::mixed<A, B>, int> = 0>
inline mshim::promote_t<A, B> max(A a, B b) {
  using R = mshim::promote_t<A, B>;
  return max(R(a), R(b));
}
template <class T, int N> inline vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = min(a[i], b[i]);
  return r;
}
template <class T, int N> inline vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = max(a[i], b[i]);
  return r;
}
template <class T> inline T min3(T a, T b, T c) { return min(min(a, b), c); }
template <class T> inline T max3(T a, T b, T c) { return max(max(a, b), c); }
template <class T> inline T median3(T a, T b, T c) { return max(min(a, b), min(max(a, b), c)); }
template <class T, class L, class H> inline T clamp(T x, L lo, H hi) {
  return min(max(x, T(lo)), T(hi));
}

inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline half fma(half a, half b, half c) { return half(__builtin_fmaf(a, b, c)); }
inline bfloat fma(bfloat a, bfloat b, bfloat c) { return bfloat(__builtin_fmaf(a, b, c)); }
template <class A, class B, class C,
          std::enable_if_t<!(std::is_same<A, B>::value && std::is_same<B, C>::value) &&
                               mshim::is_scalar_v<A> && mshim::is_scalar_v<B> && mshim::is_scalar_v<C>,
                           int> = 0>
inline float fma(A a, B b, C c) { return __builtin_fmaf(float(a), float(b), float(c)); }
template <class T, int N>
inline vec<T, N> fma(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = fma(a[i], b[i], c[i]);
  return r;
}
template <class T, class U, class V> inline auto mad(T a, U b, V c) { return a * b + c; }
template <class T, class U, class V> inline T mix(T x, U y, V a) { return x + (y - x) * a; }
template <class T> inline T select(T a, T b, bool c) { return c ? b : a; }
template <class A, class B, std::enable_if_t<mshim::mixed<A, B>, int> = 0>
inline mshim::promote_t<A, B> select(A a, B b, bool c) {
  using R = mshim::promote_t<A, B>;
  return c ? R(b) : R(a);
}
template <class T, int N>
inline vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = c[i] ? b[i] : a[i];
  return r;
}
template <class T> inline T smoothstep(T e0, T e1, T x) {
  T t = clamp((x - e0) / (e1 - e0), T(0), T(1));
  return t * t * (T(3) - T(2) * t);
}

// Classification.
#define MSHIM_CLASS(NAME, EXPR)                                                        \
  inline bool NAME(float x) { return EXPR; }                                           \
  inline bool NAME(double x) { return NAME(float(x)); }                                \
  inline bool NAME(half x) { return NAME(float(x)); }                                  \
  inline bool NAME(bfloat x) { return NAME(float(x)); }                                \
  template <class T, int N> inline vec<bool, N> NAME(const vec<T, N>& v) {             \
    vec<bool, N> r;                                                                    \
    for (int i = 0; i < N; ++i) r[i] = NAME(v[i]);                                     \
    return r;                                                                          \
  }
MSHIM_CLASS(isnan, __builtin_isnan(x))
MSHIM_CLASS(isinf, __builtin_isinf(x))
MSHIM_CLASS(isfinite, __builtin_isfinite(x))
MSHIM_CLASS(isnormal, __builtin_isnormal(x))
MSHIM_CLASS(signbit, __builtin_signbit(x))
#undef MSHIM_CLASS
template <class A, class B> inline bool isunordered(A a, B b) {
  return isnan(float(a)) || isnan(float(b));
}
template <class A, class B> inline bool isordered(A a, B b) { return !isunordered(a, b); }

inline float ldexp(float x, int e) { return __builtin_ldexpf(x, e); }
inline half ldexp(half x, int e) { return half(__builtin_ldexpf(x, e)); }
inline bfloat ldexp(bfloat x, int e) { return bfloat(__builtin_ldexpf(x, e)); }
inline float frexp(float x, int& e) { return __builtin_frexpf(x, &e); }
inline half frexp(half x, int& e) { return half(__builtin_frexpf(x, &e)); }
inline int ilogb(float x) { return __builtin_ilogbf(x); }
inline float modf(float x, float& ip) { return __builtin_modff(x, &ip); }
inline half modf(half x, half& ip) {
  float f;
  half r = half(__builtin_modff(x, &f));
  ip = half(f);
  return r;
}
template <class T> inline T sincos(T x, T& c) {
  c = cos(x);
  return sin(x);
}

// Geometry and vector relations.
template <class T, int N> inline T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T r = a[0] * b[0];
  for (int i = 1; i < N; ++i) r += a[i] * b[i];
  return r;
}
template <class T, int N> inline T length_squared(const vec<T, N>& a) { return dot(a, a); }
template <class T, int N> inline T length(const vec<T, N>& a) { return sqrt(dot(a, a)); }
template <class T, int N> inline T distance(const vec<T, N>& a, const vec<T, N>& b) {
  return length(a - b);
}
template <class T, int N> inline vec<T, N> normalize(const vec<T, N>& a) { return a / length(a); }
template <class T> inline vec<T, 3> cross(const vec<T, 3>& a, const vec<T, 3>& b) {
  return vec<T, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
inline bool all(bool b) { return b; }
inline bool any(bool b) { return b; }
template <int N> inline bool all(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i) if (!v[i]) return false;
  return true;
}
template <int N> inline bool any(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i) if (v[i]) return true;
  return false;
}

// Integer intrinsics.
template <class T> using mshim_uint_t = std::make_unsigned_t<T>;
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T clz(T x) {
  using U = mshim_uint_t<T>;
  U u = U(x);
  if (u == 0) return T(sizeof(T) * 8);
  return T(__builtin_clzll((unsigned long long)u) - (64 - int(sizeof(T) * 8)));
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T ctz(T x) {
  using U = mshim_uint_t<T>;
  U u = U(x);
  if (u == 0) return T(sizeof(T) * 8);
  return T(__builtin_ctzll((unsigned long long)u));
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T popcount(T x) {
  return T(__builtin_popcountll((unsigned long long)mshim_uint_t<T>(x)));
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T reverse_bits(T x) {
  using U = mshim_uint_t<T>;
  U u = U(x), r = 0;
  for (unsigned i = 0; i < sizeof(T) * 8; ++i, u >>= 1) r = U((r << 1) | (u & 1u));
  return T(r);
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T rotate(T v, T i) {
  using U = mshim_uint_t<T>;
  constexpr unsigned bits = sizeof(T) * 8;
  unsigned s = unsigned(U(i)) % bits;
  U u = U(v);
  return s == 0 ? v : T(U(u << s) | U(u >> (bits - s)));
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T mulhi(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    using W = std::conditional_t<std::is_signed<T>::value, __int128, unsigned __int128>;
    return T((W(a) * W(b)) >> 64);
  } else {
    using W = std::conditional_t<std::is_signed<T>::value, long long, unsigned long long>;
    return T((W(a) * W(b)) >> (sizeof(T) * 8));
  }
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
inline T extract_bits(T x, uint offset, uint bits) {
  if (bits == 0) return T(0);
  using U = mshim_uint_t<T>;
  U u = U(U(x) << (sizeof(T) * 8 - offset - bits));
  if constexpr (std::is_signed<T>::value) return T(T(u) >> (sizeof(T) * 8 - bits));
  else return T(u >> (sizeof(T) * 8 - bits));
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
inline T insert_bits(T base, T insert, uint offset, uint bits) {
  using U = mshim_uint_t<T>;
  U mask = bits >= sizeof(T) * 8 ? U(~U(0)) : U(((U(1) << bits) - 1) << offset);
  return T((U(base) & ~mask) | ((U(insert) << offset) & mask));
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T absdiff(T a, T b) {
  return a > b ? T(a - b) : T(b - a);
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T hadd(T a, T b) {
  return T((a >> 1) + (b >> 1) + (a & b & 1));
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T rhadd(T a, T b) {
  return T((a >> 1) + (b >> 1) + ((a | b) & 1));
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T addsat(T a, T b) {
  T r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 || std::is_unsigned<T>::value
      ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
  return r;
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0> inline T subsat(T a, T b) {
  T r;
  if (__builtin_sub_overflow(a, b, &r)) return std::is_unsigned<T>::value || b > 0
      ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
  return r;
}
template <class T> inline T mul24(T a, T b) { return a * b; }
template <class T> inline T mad24(T a, T b, T c) { return a * b + c; }

// precise:: and fast:: hold float and float-vector candidates only, as in Metal: a half or
// bfloat argument converts to float there (`precise::pow(2, bfloat)` is unambiguous, float).
// Both compute what metal:: computes (no fast-math emulation).
#define MSHIM_P1(NAME)                                                                 \
  inline float NAME(float x) { return ::metal::NAME(x); }                              \
  template <int N> inline vec<float, N> NAME(const vec<float, N>& v) { return ::metal::NAME(v); }
#define MSHIM_P2(NAME)                                                                 \
  inline float NAME(float x, float y) { return ::metal::NAME(x, y); }                  \
  template <int N> inline vec<float, N> NAME(const vec<float, N>& a, const vec<float, N>& b) { \
    return ::metal::NAME(a, b);                                                        \
  }
#define MSHIM_PRECISE_MATH                                                             \
  MSHIM_P1(abs) MSHIM_P1(acos) MSHIM_P1(acosh) MSHIM_P1(asin) MSHIM_P1(asinh)          \
  MSHIM_P1(atan) MSHIM_P1(atanh) MSHIM_P1(cbrt) MSHIM_P1(ceil) MSHIM_P1(cos)           \
  MSHIM_P1(cosh) MSHIM_P1(cospi) MSHIM_P1(exp) MSHIM_P1(exp10) MSHIM_P1(exp2)          \
  MSHIM_P1(fabs) MSHIM_P1(floor) MSHIM_P1(fract) MSHIM_P1(log) MSHIM_P1(log10)         \
  MSHIM_P1(log2) MSHIM_P1(logb) MSHIM_P1(rint) MSHIM_P1(round) MSHIM_P1(rsqrt)         \
  MSHIM_P1(sin) MSHIM_P1(sinh) MSHIM_P1(sinpi) MSHIM_P1(sqrt) MSHIM_P1(tan)            \
  MSHIM_P1(tanh) MSHIM_P1(tanpi) MSHIM_P1(trunc) MSHIM_P1(saturate) MSHIM_P1(sign)     \
  MSHIM_P2(atan2) MSHIM_P2(copysign) MSHIM_P2(divide) MSHIM_P2(fdim) MSHIM_P2(fmax)    \
  MSHIM_P2(fmin) MSHIM_P2(fmod) MSHIM_P2(max) MSHIM_P2(min) MSHIM_P2(nextafter)        \
  MSHIM_P2(pow) MSHIM_P2(powr) MSHIM_P2(step)                                          \
  inline float fma(float a, float b, float c) { return ::metal::fma(a, b, c); }        \
  inline float clamp(float x, float lo, float hi) { return ::metal::clamp(x, lo, hi); } \
  inline float mix(float x, float y, float a) { return ::metal::mix(x, y, a); }        \
  inline float smoothstep(float a, float b, float x) { return ::metal::smoothstep(a, b, x); } \
  inline float sincos(float x, thread_ref_float c) { return ::metal::sincos(x, c); }   \
  template <int N> inline vec<float, N> sincos(const vec<float, N>& x, vec<float, N>& c) { \
    return ::metal::sincos(x, c);                                                      \
  }                                                                                    \
  inline float frexp(float x, int& e) { return ::metal::frexp(x, e); }                 \
  inline float ldexp(float x, int e) { return ::metal::ldexp(x, e); }                 \
  inline float modf(float x, float& i) { return ::metal::modf(x, i); }                 \
  using ::metal::isnan; using ::metal::isinf; using ::metal::isfinite;                 \
  using ::metal::dot; using ::metal::length; using ::metal::distance;                  \
  using ::metal::normalize;
using thread_ref_float = float&;
namespace precise {
MSHIM_PRECISE_MATH
}
namespace fast {
MSHIM_PRECISE_MATH
}
#undef MSHIM_PRECISE_MATH
#undef MSHIM_P1
#undef MSHIM_P2
#undef MSHIM_F1
#undef MSHIM_F2

// Atomics: metal::atomic<T> has std::atomic<T>'s layout, so a device buffer can be viewed as one.
enum memory_order { memory_order_relaxed = 0, memory_order_seq_cst = 5 };
template <class T> struct atomic { std::atomic<T> v; };
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<ulong> atomic_ulong;
typedef atomic<long> atomic_long;
template <class T> inline T atomic_load_explicit(const volatile atomic<T>* o, memory_order) {
  return const_cast<const atomic<T>*>(o)->v.load(std::memory_order_relaxed);
}
template <class T, class U> inline void atomic_store_explicit(volatile atomic<T>* o, U x, memory_order) {
  const_cast<atomic<T>*>(o)->v.store(T(x), std::memory_order_relaxed);
}
template <class T, class U> inline T atomic_exchange_explicit(volatile atomic<T>* o, U x, memory_order) {
  return const_cast<atomic<T>*>(o)->v.exchange(T(x), std::memory_order_relaxed);
}
template <class T, class U>
inline bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* o, T* expected, U desired,
                                                  memory_order, memory_order) {
  return const_cast<atomic<T>*>(o)->v.compare_exchange_weak(*expected, T(desired),
                                                            std::memory_order_relaxed);
}
template <class T, class U>
inline bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* o, T* expected, U desired,
                                                    memory_order, memory_order) {
  return const_cast<atomic<T>*>(o)->v.compare_exchange_strong(*expected, T(desired),
                                                              std::memory_order_relaxed);
}
#define MSHIM_ATOMIC_RMW(NAME, EXPR)                                                   \
  template <class T, class U>                                                          \
  inline T atomic_fetch_##NAME##_explicit(volatile atomic<T>* o, U arg, memory_order) { \
    auto& a = const_cast<atomic<T>*>(o)->v;                                            \
    T old = a.load(std::memory_order_relaxed);                                         \
    T x = T(arg);                                                                      \
    while (!a.compare_exchange_weak(old, T(EXPR), std::memory_order_relaxed)) {        \
    }                                                                                  \
    return old;                                                                        \
  }
MSHIM_ATOMIC_RMW(add, old + x)
MSHIM_ATOMIC_RMW(sub, old - x)
MSHIM_ATOMIC_RMW(and, old & x)
MSHIM_ATOMIC_RMW(or, old | x)
MSHIM_ATOMIC_RMW(xor, old ^ x)
MSHIM_ATOMIC_RMW(min, x < old ? x : old)
MSHIM_ATOMIC_RMW(max, old < x ? x : old)
#undef MSHIM_ATOMIC_RMW

enum mem_flags : unsigned { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4,
                            mem_threadgroup_imageblock = 8, mem_object_data = 16 };
constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) | unsigned(b)); }
}  // namespace metal
