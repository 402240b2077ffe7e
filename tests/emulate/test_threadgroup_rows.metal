// One threadgroup per row of a contiguous [rows, cols] matrix; each thread folds a strided slice of
// the row, then a reduction_utils.h helper combines the threads.
#include <c10/metal/reduction_utils.h>
#include <metal_stdlib>
using namespace metal;
using c10::metal::opmath_t;

#define ROW_PARAMS(T, O)                                   \
  constant T* x [[buffer(0)]], device O* out [[buffer(1)]], \
      constant uint& cols [[buffer(2)]],                   \
      uint row [[threadgroup_position_in_grid]],           \
      uint tid [[thread_position_in_threadgroup]],         \
      uint tptg [[threads_per_threadgroup]]

template <typename T>
kernel void row_sum(ROW_PARAMS(T, opmath_t<T>)) {
  threadgroup opmath_t<T> shared[32];
  opmath_t<T> acc = 0;
  for (uint c = tid; c < cols; c += tptg) acc += static_cast<opmath_t<T>>(x[row * cols + c]);
  auto total = c10::metal::threadgroup_sum(shared, acc, tid, tptg);
  if (tid == 0) out[row] = total;
}

template <typename T>
kernel void row_prod(ROW_PARAMS(T, opmath_t<T>)) {
  threadgroup opmath_t<T> shared[32];
  opmath_t<T> acc = 1;
  for (uint c = tid; c < cols; c += tptg) acc *= static_cast<opmath_t<T>>(x[row * cols + c]);
  auto total = c10::metal::threadgroup_prod(shared, acc, tid, tptg);
  if (tid == 0) out[row] = total;
}

template <typename T, template <typename> class Op>
kernel void row_extreme(ROW_PARAMS(T, T)) {
  threadgroup T shared[32];
  T acc = Op<T>::identity();
  for (uint c = tid; c < cols; c += tptg) {
    T v = x[row * cols + c];
    if (Op<T>::replace(v, acc)) acc = v;
  }
  auto total = Op<T>::threadgroup_reduce(shared, acc, tid, tptg);
  if (tid == 0) out[row] = total;
}

template <typename T, bool IsMax>
kernel void row_arg(ROW_PARAMS(T, long)) {
  threadgroup T best_val[32];
  threadgroup long best_idx[32];
  using Op = ::metal::conditional_t<IsMax, c10::metal::MaxOp<T>, c10::metal::MinOp<T>>;
  T acc = Op::identity();
  long idx = 0;
  for (uint c = tid; c < cols; c += tptg) {
    T v = x[row * cols + c];
    if (Op::replace(v, acc)) {
      acc = v;
      idx = c;
    }
  }
  long r = IsMax ? c10::metal::threadgroup_argmax(best_val, best_idx, acc, idx, tid, tptg)
                 : c10::metal::threadgroup_argmin(best_val, best_idx, acc, idx, tid, tptg);
  if (tid == 0) out[row] = r;
}

// cols == tptg: thread tid holds x[row, tid].  out: mean, m2, count from both Welford helpers,
// then the two sums of threadgroup_sum2 (x and x*x).
kernel void row_moments(ROW_PARAMS(float, float)) {
  threadgroup float values[1024];
  threadgroup float3 triples[1024];
  threadgroup float sa[32], sb[32];
  const float v = x[row * cols + tid];
  values[tid] = v;
  triples[tid] = float3(v, 0, 1);
  const float3 w = c10::metal::threadgroup_welford_reduce(values, tptg);
  const float3 c = c10::metal::threadgroup_welford_combine(triples, tptg);
  const auto s2 = c10::metal::threadgroup_sum2(sa, sb, v, v * v, tid, tptg);
  if (tid == 0) {
    for (int k = 0; k < 3; ++k) {
      out[row * 8 + k] = w[k];
      out[row * 8 + 3 + k] = c[k];
    }
    out[row * 8 + 6] = s2[0];
    out[row * 8 + 7] = s2[1];
  }
}

// One simdgroup per 32 elements: the 64-bit (shuffle) and complex paths of reduction_utils.h.
kernel void simd_long_ops(
    constant long* x [[buffer(0)]], device long* out [[buffer(1)]],
    uint pos [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  const long v = x[pos];
  const long s = c10::metal::simd_sum(v);
  const long p = c10::metal::simd_prod(v % 2 + 2);
  const long hi = c10::metal::simd_max(v);
  const long lo = c10::metal::simd_min(v);
  const long b = c10::metal::simd_broadcast(v, ushort(7));
  if (lane == 0) {
    const uint k = pos / 32 * 5;
    out[k] = s;
    out[k + 1] = p;
    out[k + 2] = hi;
    out[k + 3] = lo;
    out[k + 4] = b;
  }
}

kernel void simd_complex_ops(
    constant float2* x [[buffer(0)]], device float2* out [[buffer(1)]],
    uint pos [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  const float2 p = c10::metal::simd_prod(x[pos]);
  const float2 s = c10::metal::simd_sum(x[pos]);
  if (lane == 0) {
    out[pos / 32 * 2] = p;
    out[pos / 32 * 2 + 1] = s;
  }
}

// Threads return between collectives: each round keeps one thread per simdgroup of the last,
// and the lanes that returned are inactive in the next simd_sum / simd_max.
kernel void row_norm(ROW_PARAMS(float, float), constant float& p [[buffer(3)]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint simdgroup [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[32];
  float acc = 0.0f;
  for (uint c = tid; c < cols; c += tptg) {
    const float a = ::metal::abs(x[row * cols + c]);
    acc = p == INFINITY ? ::metal::max(acc, a) : acc + a * a;
  }
  uint alive = tptg;
  while (alive > 1) {
    acc = p == INFINITY ? simd_max(acc) : simd_sum(acc);
    alive = (alive + 31) / 32;
    if (alive > 1) {
      if (lane == 0) partial[simdgroup] = acc;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      if (tid >= alive) return;
      acc = partial[tid];
    }
  }
  if (tid == 0) out[row] = p == INFINITY ? acc : ::metal::sqrt(acc);
}

// The generic (template) collectives on vectors, half and bfloat, one simdgroup per 32 threads.
kernel void simd_vector_ops(
    constant float2* xy [[buffer(0)]], constant half* h [[buffer(1)]],
    constant bfloat* b [[buffer(2)]], device float* out [[buffer(3)]],
    uint pos [[thread_position_in_grid]]) {
  const float2 hi = ::metal::simd_max(xy[pos]);
  const int2 scan = ::metal::simd_prefix_inclusive_sum(int2(xy[pos] * 4.0f));
  const half4 hs = ::metal::simd_sum(half4(h[pos], h[pos], half(1), half(0)));
  const bfloat bx = ::metal::simd_shuffle_xor(b[pos], ushort(1));
  out[pos * 8 + 0] = hi.x;
  out[pos * 8 + 1] = hi.y;
  out[pos * 8 + 2] = scan.x;
  out[pos * 8 + 3] = scan.y;
  out[pos * 8 + 4] = hs.x;
  out[pos * 8 + 5] = hs.z;
  out[pos * 8 + 6] = float(bx);
  out[pos * 8 + 7] = float(::metal::simd_min(h[pos]));
}

#define REGISTER_ROW(NAME, KERNEL, T, O) \
  template [[host_name(NAME)]] kernel void KERNEL<T>(ROW_PARAMS(T, O))
#define REGISTER_EXTREME(NAME, T, OP) \
  template [[host_name(NAME)]] kernel void row_extreme<T, OP>(ROW_PARAMS(T, T))
#define REGISTER_ARG(NAME, T, IS_MAX) \
  template [[host_name(NAME)]] kernel void row_arg<T, IS_MAX>(ROW_PARAMS(T, long))

REGISTER_ROW("row_sum_float", row_sum, float, float);
REGISTER_ROW("row_sum_half", row_sum, half, float);
REGISTER_ROW("row_sum_bfloat", row_sum, bfloat, float);
REGISTER_ROW("row_sum_int", row_sum, int, int);
REGISTER_ROW("row_prod_float", row_prod, float, float);
REGISTER_EXTREME("row_max_float", float, c10::metal::MaxOp);
REGISTER_EXTREME("row_min_float", float, c10::metal::MinOp);
REGISTER_EXTREME("row_max_half", half, c10::metal::MaxOp);
REGISTER_EXTREME("row_max_int", int, c10::metal::MaxOp);
REGISTER_EXTREME("row_min_int", int, c10::metal::MinOp);
REGISTER_ARG("row_argmax_float", float, true);
REGISTER_ARG("row_argmin_float", float, false);
REGISTER_ARG("row_argmax_int", int, true);
