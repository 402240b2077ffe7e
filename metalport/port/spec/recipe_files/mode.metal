// mode: one thread per slice of `reduce_size` contiguous elements (the host moved the reduced dim
// last). The thread counts every value's occurrences; the winner has the highest count, ties going
// to the smaller value; its index is the last position holding it.
template <typename T>
kernel void mode(
    constant T* input [[buffer(0)]],
    device T* values [[buffer(1)]],
    device long* indices [[buffer(2)]],
    constant uint& reduce_size [[buffer(3)]],
    constant uint& num_slices [[buffer(4)]],
    uint slice [[thread_position_in_grid]]) {
  if (slice >= num_slices) {
    return;
  }
  constant T* row = input + static_cast<ulong>(slice) * reduce_size;
  uint best = 0;
  uint best_count = 0;
  for (uint i = 0; i < reduce_size; ++i) {
    const T v = row[i];
    uint count = 0;
    uint last = i;
    for (uint j = 0; j < reduce_size; ++j) {
      if (row[j] == v) {
        ++count;
        last = j;
      }
    }
    const bool better = count > best_count ||
        (count == best_count && v < row[best]);
    if (better) {
      best = last;
      best_count = count;
    }
  }
  values[slice] = row[best];
  indices[slice] = static_cast<long>(best);
}

#define REGISTER_MODE_OP(T)                                       \
  template [[host_name("mode_" #T "_" #T "_long")]] kernel void  \
  mode<T>(constant T * input [[buffer(0)]],                       \
          device T * values [[buffer(1)]],                        \
          device long * indices [[buffer(2)]],                    \
          constant uint & reduce_size [[buffer(3)]],              \
          constant uint & num_slices [[buffer(4)]],               \
          uint slice [[thread_position_in_grid]])

REGISTER_MODE_OP(float);
REGISTER_MODE_OP(half);
REGISTER_MODE_OP(bfloat);
REGISTER_MODE_OP(long);
REGISTER_MODE_OP(int);
REGISTER_MODE_OP(short);
REGISTER_MODE_OP(char);
REGISTER_MODE_OP(uchar);
REGISTER_MODE_OP(bool);
