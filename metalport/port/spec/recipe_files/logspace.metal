// logspace: out[i] = base ^ (start + i * step), step = (end - start) / (steps - 1), start and end
// first converted to the output type as the CPU does. The second half counts back from `end`, so
// the last element is exactly base ^ end; integer outputs truncate toward zero, then wrap.
template <typename T>
kernel void logspace(
    device T* out0 [[buffer(0)]],
    constant float& start [[buffer(1)]],
    constant float& end [[buffer(2)]],
    constant long& steps [[buffer(3)]],
    constant float& base [[buffer(4)]],
    uint tid [[thread_position_in_grid]]) {
  const float first = static_cast<float>(static_cast<T>(start));
  const float last = static_cast<float>(static_cast<T>(end));
  const long i = long(tid);
  // One step: base ^ start with start as given, as the CPU fills it.
  float exponent = start;
  if (steps > 1) {
    const float step = (last - first) / float(steps - 1);
    exponent = i < steps / 2 ? first + step * float(i) : last - step * float(steps - 1 - i);
  }
  const float value = precise::pow(base, exponent);
  if (is_floating_point_v<T>) {
    out0[i] = static_cast<T>(value);
  } else {
    out0[i] = static_cast<T>(static_cast<long>(value));
  }
}

#define REGISTER_LOGSPACE(T)                                 \
  template [[host_name("logspace_" #T)]] kernel void         \
  logspace<T>(device T * out0 [[buffer(0)]],                 \
              constant float & start [[buffer(1)]],          \
              constant float & end [[buffer(2)]],            \
              constant long & steps [[buffer(3)]],           \
              constant float & base [[buffer(4)]],           \
              uint tid [[thread_position_in_grid]])

REGISTER_LOGSPACE(float);
REGISTER_LOGSPACE(half);
REGISTER_LOGSPACE(bfloat);
REGISTER_LOGSPACE(long);
REGISTER_LOGSPACE(int);
REGISTER_LOGSPACE(short);
REGISTER_LOGSPACE(char);
