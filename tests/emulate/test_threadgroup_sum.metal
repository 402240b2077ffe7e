// Our own two-level sum: simd_sum within simdgroups, threadgroup memory across them.  The element
// index comes from thread_position_in_grid: threads_per_threadgroup is the clipped size of an edge
// group (non-uniform dispatch), so `group * tptg + tid` would be wrong there.
#include <metal_stdlib>
using namespace metal;

template <typename T, typename A>
kernel void chunk_sum(
    constant T* x [[buffer(0)]],
    device A* partial [[buffer(1)]],
    constant uint& n [[buffer(2)]],
    uint pos [[thread_position_in_grid]],
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_position_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simdgroup [[simdgroup_index_in_threadgroup]],
    uint tptg [[threads_per_threadgroup]]) {
  threadgroup A per_simdgroup[32];
  A v = pos < n ? static_cast<A>(x[pos]) : A(0);
  v = simd_sum(v);
  if (lane == 0) {
    per_simdgroup[simdgroup] = v;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simdgroup == 0) {
    A t = lane * 32 < tptg ? per_simdgroup[lane] : A(0);
    t = simd_sum(t);
    if (tid == 0) {
      partial[group] = t;
    }
  }
}

#define REGISTER_CHUNK_SUM(T, A)                                  \
  template [[host_name("chunk_sum_" #T "_" #A)]] kernel void      \
  chunk_sum<T, A>(constant T * x [[buffer(0)]],                   \
                  device A * partial [[buffer(1)]],               \
                  constant uint & n [[buffer(2)]],                \
                  uint pos [[thread_position_in_grid]],           \
                  uint group [[threadgroup_position_in_grid]],    \
                  uint tid [[thread_position_in_threadgroup]],    \
                  uint lane [[thread_index_in_simdgroup]],        \
                  uint simdgroup [[simdgroup_index_in_threadgroup]], \
                  uint tptg [[threads_per_threadgroup]])

REGISTER_CHUNK_SUM(float, float);
REGISTER_CHUNK_SUM(half, float);
REGISTER_CHUNK_SUM(int, int);
