// powsum: sum(|x|^ord) of each slice of `reduce_size` contiguous elements (the host moved the
// reduced dims last), one threadgroup per slice. Each thread sums a strided part of the slice in
// float, then the threadgroup halves its partial sums in threadgroup memory.
struct PowSumParams {
  float ord;
  uint reduce_size;
};

template <typename T, typename O>
kernel void powsum(
    constant T* input [[buffer(0)]],
    device O* output [[buffer(1)]],
    constant PowSumParams& params [[buffer(2)]],
    uint slice [[threadgroup_position_in_grid]],
    uint tid [[thread_position_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]]) {
  threadgroup float partial[1024];
  constant T* row = input + static_cast<ulong>(slice) * params.reduce_size;
  float acc = 0.0;
  for (uint i = tid; i < params.reduce_size; i += group_size) {
    acc += ::metal::pow(::metal::abs(static_cast<float>(row[i])), params.ord);
  }
  partial[tid] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = 512; stride > 0; stride /= 2) {
    if (tid < stride && tid + stride < group_size) {
      partial[tid] += partial[tid + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) {
    output[slice] = static_cast<O>(partial[0]);
  }
}

#define REGISTER_POWSUM_OP(T, O)                                   \
  template [[host_name("powsum_" #T "_" #O)]] kernel void         \
  powsum<T, O>(constant T * input [[buffer(0)]],                   \
               device O * output [[buffer(1)]],                    \
               constant PowSumParams & params [[buffer(2)]],       \
               uint slice [[threadgroup_position_in_grid]],        \
               uint tid [[thread_position_in_threadgroup]],        \
               uint group_size [[threads_per_threadgroup]])

REGISTER_POWSUM_OP(float, float);
REGISTER_POWSUM_OP(half, half);
REGISTER_POWSUM_OP(bfloat, bfloat);
REGISTER_POWSUM_OP(half, float);
REGISTER_POWSUM_OP(bfloat, float);
