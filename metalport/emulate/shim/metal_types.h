// metalport Metal-on-CPU shim, part 1: scalar types (half, bfloat), vectors, traits, limits.
// Included by metal_shim.h only.  No <cmath>: c10/metal/igamma.h calls expm1f unqualified
// after global using-directives, which glibc's ::expm1f would make ambiguous.
#pragma once
#include <atomic>
#include <cfloat>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
typedef _Float16 half;

// MSL half literals (`0.5h`); a suffix without '_' is reserved in C++, hence the pragmas.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wuser-defined-literals"
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wliteral-suffix"
#endif
constexpr half operator""h(long double v) { return half(v); }
constexpr half operator""h(unsigned long long v) { return half(v); }
#if defined(__clang__)
#pragma clang diagnostic pop
#else
#pragma GCC diagnostic pop
#endif

// bfloat: 16-bit storage; every operation is computed in float and rounded back
// (round to nearest even), like a GPU without native bfloat arithmetic.
struct bfloat {
  uint16_t bits;
  static constexpr uint16_t round(float f) {
    uint32_t u = __builtin_bit_cast(uint32_t, f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
  static constexpr bfloat from_bits(uint16_t b) { bfloat r{}; r.bits = b; return r; }
  bfloat() = default;
  // Metal converts float (and half) to bfloat only explicitly: `bfloat b = 0.5f;` is rejected
  // there ("cannot initialize a variable of type 'bfloat' with an rvalue of type 'float'"),
  // `bfloat(x)` and `static_cast<bfloat>(x)` are fine.  Explicit here too, which is also what
  // lets `cond ? bfloat_value : 0.5f` have one answer (float, as in Metal): with an implicit
  // constructor each operand would convert to the other's type and C++ rejects the `?:`.
  explicit constexpr bfloat(float f) : bits(round(f)) {}
  explicit constexpr bfloat(double d) : bits(round(float(d))) {}
  explicit constexpr bfloat(half h) : bits(round(float(h))) {}
  template <class U, std::enable_if_t<std::is_integral<U>::value, int> = 0>
  constexpr bfloat(U v) : bits(round(float(v))) {}
  constexpr operator float() const {
    return __builtin_bit_cast(float, uint32_t(bits) << 16);
  }
  constexpr bfloat operator-() const { return from_bits(uint16_t(bits ^ 0x8000u)); }
  constexpr bfloat operator+() const { return *this; }
  template <class U> bfloat& operator+=(U o) { return *this = bfloat(float(*this) + float(o)); }
  template <class U> bfloat& operator-=(U o) { return *this = bfloat(float(*this) - float(o)); }
  template <class U> bfloat& operator*=(U o) { return *this = bfloat(float(*this) * float(o)); }
  template <class U> bfloat& operator/=(U o) { return *this = bfloat(float(*this) / float(o)); }
  bfloat& operator++() { return *this += 1; }
  bfloat& operator--() { return *this -= 1; }
};

namespace mshim {
template <class T> struct is_fp16 : std::false_type {};
template <> struct is_fp16<half> : std::true_type {};
template <> struct is_fp16<bfloat> : std::true_type {};
template <class T>
constexpr bool is_scalar_v = std::is_arithmetic<T>::value || is_fp16<T>::value;
template <class A, class B>
constexpr bool bf_pair = (std::is_same<A, bfloat>::value || std::is_same<B, bfloat>::value) &&
                         is_scalar_v<A> && is_scalar_v<B>;
// bfloat op bfloat/integer -> bfloat; bfloat op float/double/half -> float.
template <class A, class B>
using bf_result = std::conditional_t<(std::is_same<A, bfloat>::value || std::is_integral<A>::value) &&
                                         (std::is_same<B, bfloat>::value || std::is_integral<B>::value),
                                     bfloat, float>;
}  // namespace mshim

#define MSHIM_BF_ARITH(OP)                                                        \
  template <class A, class B, std::enable_if_t<mshim::bf_pair<A, B>, int> = 0>     \
  constexpr mshim::bf_result<A, B> operator OP(A a, B b) {                         \
    return mshim::bf_result<A, B>(float(a) OP float(b));                           \
  }
#define MSHIM_BF_CMP(OP)                                                          \
  template <class A, class B, std::enable_if_t<mshim::bf_pair<A, B>, int> = 0>     \
  constexpr bool operator OP(A a, B b) { return float(a) OP float(b); }
MSHIM_BF_ARITH(+) MSHIM_BF_ARITH(-) MSHIM_BF_ARITH(*) MSHIM_BF_ARITH(/)
MSHIM_BF_CMP(<) MSHIM_BF_CMP(>) MSHIM_BF_CMP(<=) MSHIM_BF_CMP(>=) MSHIM_BF_CMP(==) MSHIM_BF_CMP(!=)
#undef MSHIM_BF_ARITH
#undef MSHIM_BF_CMP

namespace metal {
template <class T, int N> struct vec;
}

namespace mshim {
using std::enable_if_t;
template <class T, int N> struct arr { T v[N]{}; };
template <class T> struct is_vec : std::false_type {};
template <class T, int N> struct is_vec<metal::vec<T, N>> : std::true_type {};

// Swizzle proxy over the storage of a vec<T, N>: converts to vec<T, sizeof...(I)>, assignable.
// Kept to three member declarations: every vec<T, 4> instantiates 672 of these.
template <class T, int N, int... I>
struct swz {
  T d[N];
  constexpr operator metal::vec<T, sizeof...(I)>() const;
  swz& operator=(const metal::vec<T, sizeof...(I)>& v);
  swz& operator=(const swz& o);
};
template <class T, int N, int... I> constexpr metal::vec<T, sizeof...(I)> get(const swz<T, N, I...>& s);
template <class T> struct is_swz : std::false_type {};
template <class T, int N, int... I> struct is_swz<swz<T, N, I...>> : std::true_type {
  static constexpr int size = sizeof...(I);
};

template <class A> constexpr int ncomp() {
  if constexpr (is_vec<A>::value) return A::size;
  else if constexpr (is_swz<A>::value) return is_swz<A>::size;
  else return 1;
}
// A scalar broadcasts to a vector implicitly, except bfloat (a class here): its conversion to
// float is user-defined, so an implicit bfloat -> float2 would tie with bfloat -> float and make
// `log1p(bfloat)` ambiguous between c10's float and float2 overloads, which Metal resolves to float.
template <class U, class T>
using enable_scalar =
    enable_if_t<is_scalar_v<U> && !std::is_class<U>::value && !std::is_same<U, T>::value, int>;
template <class U, class T>
using enable_class_scalar =
    enable_if_t<is_scalar_v<U> && std::is_class<U>::value && !std::is_same<U, T>::value, int>;
template <class... A> constexpr int ncomps() { return (0 + ... + ncomp<A>()); }
template <int N, class... A>
using enable_flat = enable_if_t<ncomps<A...>() == N, int>;

template <class V> constexpr auto comp(const V& v, int i) {
  if constexpr (V::size == 2) return i == 0 ? v.x : v.y;
  else if constexpr (V::size == 3) return i == 0 ? v.x : i == 1 ? v.y : v.z;
  else return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
template <class T, int N, class A> constexpr void put(arr<T, N>& r, int& k, const A& a) {
  if constexpr (is_swz<A>::value) {
    put(r, k, get(a));
  } else if constexpr (is_vec<A>::value) {
    for (int i = 0; i < A::size; ++i) r.v[k++] = static_cast<T>(comp(a, i));
  } else {
    r.v[k++] = static_cast<T>(a);
  }
}
template <class T, int N, class... A> constexpr arr<T, N> flatten(const A&... a) {
  arr<T, N> r{};
  int k = 0;
  (put(r, k, a), ...);
  return r;
}
}  // namespace mshim

namespace metal {
#include "metal_vectors.inc"

#define MSHIM_VEC_TYPES(T)                                                        \
  typedef vec<T, 2> T##2;                                                          \
  typedef vec<T, 3> T##3;                                                          \
  typedef vec<T, 4> T##4;
MSHIM_VEC_TYPES(float) MSHIM_VEC_TYPES(half) MSHIM_VEC_TYPES(bfloat) MSHIM_VEC_TYPES(int)
MSHIM_VEC_TYPES(uint) MSHIM_VEC_TYPES(short) MSHIM_VEC_TYPES(ushort) MSHIM_VEC_TYPES(char)
MSHIM_VEC_TYPES(uchar) MSHIM_VEC_TYPES(long) MSHIM_VEC_TYPES(ulong) MSHIM_VEC_TYPES(bool)
#undef MSHIM_VEC_TYPES
// Packed vectors: 2- and 4-wide ones have the same size as the aligned types; a packed 3-vector
// is 3 elements (12 bytes for float), so it is its own type converting to and from vec<T, 3>.
template <class T> struct packed3 {
  T x, y, z;
  packed3() = default;
  constexpr packed3(T a, T b, T c) : x(a), y(b), z(c) {}
  constexpr packed3(const vec<T, 3>& v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator vec<T, 3>() const { return vec<T, 3>(x, y, z); }
  constexpr T& operator[](int i) { return (&x)[i]; }
  constexpr const T& operator[](int i) const { return (&x)[i]; }
};
typedef float2 packed_float2;
typedef packed3<float> packed_float3;
typedef float4 packed_float4;
typedef half2 packed_half2;
typedef packed3<half> packed_half3;
typedef half4 packed_half4;
typedef packed3<int> packed_int3;
typedef packed3<uint> packed_uint3;
using ::bfloat;
using ::half;
using ::uchar;
using ::uint;
using ::ulong;
using ::ushort;

// Type traits as in the Metal standard library: vectors count as floating point / integral.
template <class T> struct is_floating_point
    : std::integral_constant<bool, std::is_floating_point<T>::value || mshim::is_fp16<T>::value> {};
template <class T, int N> struct is_floating_point<vec<T, N>> : is_floating_point<T> {};
template <class T> struct is_integral : std::is_integral<T> {};
template <class T, int N> struct is_integral<vec<T, N>> : std::is_integral<T> {};
template <class T> struct is_scalar : std::integral_constant<bool, mshim::is_scalar_v<T>> {};
template <class T> struct is_vector : mshim::is_vec<T> {};
template <class T> struct is_arithmetic
    : std::integral_constant<bool, is_floating_point<T>::value || is_integral<T>::value> {};
template <class T> struct is_signed
    : std::integral_constant<bool, std::is_signed<T>::value || mshim::is_fp16<T>::value> {};
template <class T, int N> struct is_signed<vec<T, N>> : is_signed<T> {};
template <class T> struct is_unsigned : std::is_unsigned<T> {};
template <class T, int N> struct is_unsigned<vec<T, N>> : std::is_unsigned<T> {};
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> constexpr bool is_integral_v = is_integral<T>::value;
template <class T> constexpr bool is_scalar_v = is_scalar<T>::value;
template <class T> constexpr bool is_vector_v = is_vector<T>::value;
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> constexpr bool is_signed_v = is_signed<T>::value;
template <class T> constexpr bool is_unsigned_v = is_unsigned<T>::value;
using std::conditional;
using std::conditional_t;
using std::decay_t;
using std::declval;
using std::enable_if;
using std::enable_if_t;
using std::false_type;
using std::integral_constant;
using std::is_convertible;
using std::is_convertible_v;
using std::is_same;
using std::is_same_v;
using std::make_signed_t;
using std::make_unsigned_t;
using std::remove_const_t;
using std::remove_cv_t;
using std::remove_reference_t;
using std::true_type;
template <class T> struct vec_elements { using type = T; static constexpr int size = 1; };
template <class T, int N> struct vec_elements<vec<T, N>> { using type = T; static constexpr int size = N; };

template <class T> struct numeric_limits : std::numeric_limits<T> {};
template <> struct numeric_limits<half> {
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false;
  static constexpr bool has_infinity = true, has_quiet_NaN = true;
  static constexpr int digits = 11, max_exponent = 16, min_exponent = -13;
  static constexpr half min() { return half(6.103515625e-05f); }
  static constexpr half max() { return half(65504.0f); }
  static constexpr half lowest() { return half(-65504.0f); }
  static constexpr half epsilon() { return half(0.0009765625f); }
  static constexpr half infinity() { return half(__builtin_huge_valf()); }
  static constexpr half quiet_NaN() { return half(__builtin_nanf("")); }
  static constexpr half denorm_min() { return half(5.960464477539063e-08f); }
};
template <> struct numeric_limits<bfloat> {
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false;
  static constexpr bool has_infinity = true, has_quiet_NaN = true;
  static constexpr int digits = 8, max_exponent = 128, min_exponent = -125;
  static constexpr bfloat min() { return bfloat::from_bits(0x0080); }
  static constexpr bfloat max() { return bfloat::from_bits(0x7f7f); }
  static constexpr bfloat lowest() { return bfloat::from_bits(0xff7f); }
  static constexpr bfloat epsilon() { return bfloat::from_bits(0x3c00); }
  static constexpr bfloat infinity() { return bfloat::from_bits(0x7f80); }
  static constexpr bfloat quiet_NaN() { return bfloat::from_bits(0x7fc0); }
  static constexpr bfloat denorm_min() { return bfloat::from_bits(0x0001); }
};
template <class T, int N> struct numeric_limits<vec<T, N>> {
  static constexpr bool is_specialized = true;
  static constexpr vec<T, N> min() { return vec<T, N>(numeric_limits<T>::min()); }
  static constexpr vec<T, N> max() { return vec<T, N>(numeric_limits<T>::max()); }
  static constexpr vec<T, N> lowest() { return vec<T, N>(numeric_limits<T>::lowest()); }
  static constexpr vec<T, N> epsilon() { return vec<T, N>(numeric_limits<T>::epsilon()); }
  static constexpr vec<T, N> infinity() { return vec<T, N>(numeric_limits<T>::infinity()); }
  static constexpr vec<T, N> quiet_NaN() { return vec<T, N>(numeric_limits<T>::quiet_NaN()); }
};

template <class T, size_t N> struct array {
  T _elems[N ? N : 1];
  constexpr T& operator[](size_t i) { return _elems[i]; }
  constexpr const T& operator[](size_t i) const { return _elems[i]; }
  static constexpr size_t size() { return N; }
  T* data() { return _elems; }
};
}  // namespace metal

namespace mshim {
template <class T, int N, int... I> constexpr metal::vec<T, sizeof...(I)> get(const swz<T, N, I...>& s) {
  return metal::vec<T, sizeof...(I)>(arr<T, sizeof...(I)>{{s.d[I]...}});
}
template <class T, int N, int... I>
constexpr swz<T, N, I...>::operator metal::vec<T, sizeof...(I)>() const { return get(*this); }
template <class T, int N, int... I>
swz<T, N, I...>& swz<T, N, I...>::operator=(const metal::vec<T, sizeof...(I)>& v) {
  const metal::vec<T, sizeof...(I)> src = v;  // `p.yx = p` reads p before writing it
  int k = 0;
  ((d[I] = src[k++]), ...);
  return *this;
}
template <class T, int N, int... I>
swz<T, N, I...>& swz<T, N, I...>::operator=(const swz& o) { return *this = get(o); }
#define MSHIM_SWZ_OP(OP)                                                               \
  template <class T, int N, int... I, class U>                                          \
  auto operator OP(const swz<T, N, I...>& a, const U& b) { return get(a) OP b; }        \
  template <class U, class T, int N, int... I, enable_if_t<!is_swz<U>::value, int> = 0> \
  auto operator OP(const U& a, const swz<T, N, I...>& b) { return a OP get(b); }        \
  template <class T, int N, int... I, class U>                                          \
  swz<T, N, I...>& operator OP##=(swz<T, N, I...>& a, const U& b) { return a = get(a) OP b; }
MSHIM_SWZ_OP(+) MSHIM_SWZ_OP(-) MSHIM_SWZ_OP(*) MSHIM_SWZ_OP(/)
#undef MSHIM_SWZ_OP
template <class T, int N, int... I> auto operator-(const swz<T, N, I...>& a) { return -get(a); }
}  // namespace mshim


using metal::vec;
#define MSHIM_GLOBAL_VEC(T) using metal::T##2; using metal::T##3; using metal::T##4;
MSHIM_GLOBAL_VEC(float) MSHIM_GLOBAL_VEC(half) MSHIM_GLOBAL_VEC(bfloat) MSHIM_GLOBAL_VEC(int)
MSHIM_GLOBAL_VEC(uint) MSHIM_GLOBAL_VEC(short) MSHIM_GLOBAL_VEC(ushort) MSHIM_GLOBAL_VEC(char)
MSHIM_GLOBAL_VEC(uchar) MSHIM_GLOBAL_VEC(long) MSHIM_GLOBAL_VEC(ulong) MSHIM_GLOBAL_VEC(bool)
#undef MSHIM_GLOBAL_VEC
using metal::packed_float2;
using metal::packed_float3;
using metal::packed_float4;
using metal::packed_half2;
using metal::packed_half3;
using metal::packed_half4;
using metal::packed_int3;
using metal::packed_uint3;

// Bit reinterpretation between types of the same size.
template <class To, class From> inline To as_type(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of the same size");
  To to;
  std::memcpy(static_cast<void*>(&to), static_cast<const void*>(&from), sizeof(To));
  return to;
}
namespace metal {
using ::as_type;
}
