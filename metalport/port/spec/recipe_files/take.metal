// take: out[i] = self.flatten()[index[i]], negative indices counted from the end. `self` stays
// strided: its flat (row-major) position becomes an offset through its sizes and strides
// (innermost first). The host checks the indices' range before the launch.
template <typename T>
kernel void take(
    constant T* self [[buffer(0)]],
    constant long* index [[buffer(1)]],
    device T* out0 [[buffer(2)]],
    constant long& numel [[buffer(3)]],
    constant long& ndim [[buffer(4)]],
    constant long* sizes [[buffer(5)]],
    constant long* strides [[buffer(6)]],
    uint tid [[thread_position_in_grid]]) {
  long flat = index[tid];
  if (flat < 0) {
    flat += numel;
  }
  if (flat < 0 || flat >= numel) {
    return;  // never read outside `self`
  }
  long offset = 0;
  for (long d = 0; d < ndim; ++d) {
    offset += (flat % sizes[d]) * strides[d];
    flat /= sizes[d];
  }
  out0[tid] = self[offset];
}

#define REGISTER_TAKE(T)                                          \
  template [[host_name("take_" #T "_long_" #T)]] kernel void      \
  take<T>(constant T * self [[buffer(0)]],                        \
          constant long * index [[buffer(1)]],                    \
          device T * out0 [[buffer(2)]],                          \
          constant long & numel [[buffer(3)]],                    \
          constant long & ndim [[buffer(4)]],                     \
          constant long * sizes [[buffer(5)]],                    \
          constant long * strides [[buffer(6)]],                  \
          uint tid [[thread_position_in_grid]])

REGISTER_TAKE(float);
REGISTER_TAKE(half);
REGISTER_TAKE(bfloat);
REGISTER_TAKE(long);
REGISTER_TAKE(int);
REGISTER_TAKE(short);
REGISTER_TAKE(char);
REGISTER_TAKE(uchar);
REGISTER_TAKE(bool);
REGISTER_TAKE(float2);
