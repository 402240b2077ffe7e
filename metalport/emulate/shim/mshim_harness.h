// metalport harness helpers: bind kernel parameters to buffers and thread ids by declared type.
// Force-included after metal_shim.h; the generated kernel table at the end of the TU uses it.
#pragma once
#include "metal_shim.h"

namespace mshim_h {
template <int I, class... P> struct nth;
template <class H, class... T> struct nth<0, H, T...> { using type = H; };
template <int I, class H, class... T> struct nth<I, H, T...> : nth<I - 1, T...> {};
template <class F, int I> struct param;
template <class R, class... P, int I> struct param<R(P...), I> : nth<I, P...> {};
template <class F, int I> using param_t = typename param<F, I>::type;

// A [[buffer(n)]] parameter from the buffer's address: pointers as-is, references dereferenced.
template <class P> inline P arg(void* p) {
  if constexpr (std::is_pointer<P>::value) {
    return static_cast<P>(p);
  } else if constexpr (std::is_reference<P>::value) {
    return *static_cast<std::remove_reference_t<P>*>(p);
  } else {
    return *static_cast<std::remove_cv_t<P>*>(p);
  }
}
// A thread-id parameter (uint, uint2, uint3, ushort…) from three coordinates or one scalar.
template <class P> inline std::decay_t<P> pos(const unsigned* v) {
  using T = std::decay_t<P>;
  if constexpr (mshim::is_vec<T>::value) {
    T r;
    for (int i = 0; i < T::size; ++i) r[i] = typename T::value_type(v[i]);
    return r;
  } else {
    return T(v[0]);
  }
}
template <class P> inline std::decay_t<P> pos(unsigned v) { return std::decay_t<P>(v); }

template <class T> struct tname { static constexpr const char* value = "?"; };
#define MSHIM_TNAME(T, S) template <> struct tname<T> { static constexpr const char* value = S; };
#define MSHIM_TNAMES(T) MSHIM_TNAME(T, #T) MSHIM_TNAME(metal::T##2, #T "2") \
  MSHIM_TNAME(metal::T##3, #T "3") MSHIM_TNAME(metal::T##4, #T "4")
MSHIM_TNAMES(float) MSHIM_TNAMES(half) MSHIM_TNAMES(bfloat) MSHIM_TNAMES(int) MSHIM_TNAMES(uint)
MSHIM_TNAMES(short) MSHIM_TNAMES(ushort) MSHIM_TNAMES(char) MSHIM_TNAMES(uchar) MSHIM_TNAMES(long)
MSHIM_TNAMES(ulong) MSHIM_TNAMES(bool)
MSHIM_TNAME(void, "void") MSHIM_TNAME(signed char, "char")
#undef MSHIM_TNAMES
#undef MSHIM_TNAME
template <class P> using elem_t = std::remove_cv_t<std::remove_pointer_t<std::remove_reference_t<P>>>;
template <class P> constexpr const char* elem_name() { return tname<elem_t<P>>::value; }
template <class P> constexpr unsigned elem_size() {
  if constexpr (std::is_void<elem_t<P>>::value) return 0;
  else return sizeof(elem_t<P>);
}
struct ParamInfo { const char* type; unsigned size; };

// One thread of a kernel: the buffer table, its position in the grid and the grid size.
using Body = void (*)(void* ctx, const unsigned* pos, const unsigned* grid);
}  // namespace mshim_h

// Defined in mshim_runtime.cpp (compiled once per compiler): the parallel grid loop.
extern "C" void mshim_rt_grid(const unsigned* threads, mshim_h::Body body, void* ctx, unsigned workers);
// Flush-to-zero around a kernel run, as the GPU does (mshim_runtime.cpp: Note [float32 subnormals]).
extern "C" unsigned long mshim_rt_fp_enter();
extern "C" void mshim_rt_fp_leave(unsigned long old);
