// adaptive_avg_pool3d: one thread per output element averages its window; along an extent of I
// cut into O outputs, output o covers [floor(o * I / O), ceil((o + 1) * I / O)). The input stays
// strided (sizes and strides innermost first: W, H, D, C[, N]); the output is contiguous.
inline long pool_window_start(long o, long out_size, long in_size) {
  return (o * in_size) / out_size;
}
inline long pool_window_end(long o, long out_size, long in_size) {
  return ((o + 1) * in_size + out_size - 1) / out_size;
}

template <typename T>
kernel void adaptive_avg_pool3d(
    constant T* self [[buffer(0)]],
    device T* out0 [[buffer(1)]],
    constant long& ndim [[buffer(2)]],
    constant long* sizes [[buffer(3)]],
    constant long* strides [[buffer(4)]],
    constant long* output_size [[buffer(5)]],
    uint tid [[thread_position_in_grid]]) {
  const long out_d = output_size[0], out_h = output_size[1], out_w = output_size[2];
  long rest = long(tid);
  const long ow = rest % out_w;
  rest /= out_w;
  const long oh = rest % out_h;
  rest /= out_h;
  const long od = rest % out_d;
  rest /= out_d;
  const long c = rest % sizes[3];
  const long n = rest / sizes[3];
  const long d0 = pool_window_start(od, out_d, sizes[2]), d1 = pool_window_end(od, out_d, sizes[2]);
  const long h0 = pool_window_start(oh, out_h, sizes[1]), h1 = pool_window_end(oh, out_h, sizes[1]);
  const long w0 = pool_window_start(ow, out_w, sizes[0]), w1 = pool_window_end(ow, out_w, sizes[0]);
  constant T* plane = self + c * strides[3] + (ndim == 5 ? n * strides[4] : 0);
  float sum = 0;
  for (long d = d0; d < d1; ++d) {
    for (long h = h0; h < h1; ++h) {
      constant T* row = plane + d * strides[2] + h * strides[1];
      for (long w = w0; w < w1; ++w) {
        sum += static_cast<float>(row[w * strides[0]]);
      }
    }
  }
  out0[tid] = static_cast<T>(sum / float((d1 - d0) * (h1 - h0) * (w1 - w0)));
}

#define REGISTER_ADAPTIVE_AVG_POOL3D(T)                                  \
  template [[host_name("adaptive_avg_pool3d_" #T "_" #T)]] kernel void   \
  adaptive_avg_pool3d<T>(constant T * self [[buffer(0)]],                \
                         device T * out0 [[buffer(1)]],                  \
                         constant long & ndim [[buffer(2)]],             \
                         constant long * sizes [[buffer(3)]],            \
                         constant long * strides [[buffer(4)]],          \
                         constant long * output_size [[buffer(5)]],      \
                         uint tid [[thread_position_in_grid]])

REGISTER_ADAPTIVE_AVG_POOL3D(float);
REGISTER_ADAPTIVE_AVG_POOL3D(half);
REGISTER_ADAPTIVE_AVG_POOL3D(bfloat);
