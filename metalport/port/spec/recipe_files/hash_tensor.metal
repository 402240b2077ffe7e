// hash_tensor (mode 0): the XOR of the float64 bit patterns of each slice's elements. One
// threadgroup per slice of `reduce_size` contiguous elements (the host moved the reduced dims
// last): every thread XORs a strided run, simd_xor folds each simdgroup, the simdgroups meet in
// threadgroup memory, and thread 0 writes the slice's word. 64-bit words travel as two 32-bit
// halves through the simd collectives (XOR is bitwise, so the halves are independent).

// The float64 bits of a float with `exp_bits` exponent and `mant_bits` mantissa bits (given by
// its bits): Metal has no double, so the widening is done on the bits. NaNs come out quiet with
// their payload, as the CPU's conversion gives them.
template <uint exp_bits, uint mant_bits>
inline ulong hash_widen_float_bits(uint bits) {
  constexpr uint exp_mask = (1u << exp_bits) - 1;
  constexpr uint mant_mask = (1u << mant_bits) - 1;
  constexpr long bias = long(exp_mask >> 1);
  const ulong sign = ulong((bits >> (exp_bits + mant_bits)) & 1) << 63;
  const uint e = (bits >> mant_bits) & exp_mask;
  const uint m = bits & mant_mask;
  if (e == exp_mask) {
    const uint quiet = m != 0 ? (1u << (mant_bits - 1)) : 0u;
    return sign | (ulong(0x7ff) << 52) | (ulong(m | quiet) << (52 - mant_bits));
  }
  if (e == 0) {
    if (m == 0) {
      return sign;
    }
    // A subnormal is m * 2^(1 - bias - mant_bits): normalise around its top bit.
    const long top = 31 - long(clz(m));
    const ulong mant = (ulong(m) << (52 - top)) & ((ulong(1) << 52) - 1);
    return sign | (ulong(top + 1 - bias - long(mant_bits) + 1023) << 52) | mant;
  }
  return sign | (ulong(long(e) - bias + 1023) << 52) | (ulong(m) << (52 - mant_bits));
}

// Integers and bool: the two's-complement bits of the value as int64.
template <typename T>
inline ulong hash_bits(T x) {
  return as_type<ulong>(static_cast<long>(x));
}
template <>
inline ulong hash_bits(float x) {
  return hash_widen_float_bits<8, 23>(as_type<uint>(x));
}
template <>
inline ulong hash_bits(half x) {
  return hash_widen_float_bits<5, 10>(uint(as_type<ushort>(x)));
}
template <>
inline ulong hash_bits(bfloat x) {
  return hash_widen_float_bits<8, 23>(uint(as_type<ushort>(x)) << 16);
}

template <typename T>
kernel void hash_tensor(
    constant T* input [[buffer(0)]],
    device ulong* out0 [[buffer(1)]],
    constant long& reduce_size [[buffer(2)]],
    uint slice [[threadgroup_position_in_grid]],
    uint tid [[thread_position_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simdgroup [[simdgroup_index_in_threadgroup]],
    uint tptg [[threads_per_threadgroup]]) {
  threadgroup uint2 per_simdgroup[32];
  constant T* row = input + long(slice) * reduce_size;
  ulong acc = 0;
  for (long i = tid; i < reduce_size; i += tptg) {
    acc ^= hash_bits(row[i]);
  }
  uint2 halves = uint2(uint(acc), uint(acc >> 32));
  halves.x = simd_xor(halves.x);
  halves.y = simd_xor(halves.y);
  if (lane == 0) {
    per_simdgroup[simdgroup] = halves;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    uint2 total = uint2(0, 0);
    for (uint k = 0; k < (tptg + 31) / 32; ++k) {
      total ^= per_simdgroup[k];
    }
    out0[slice] = ulong(total.x) | (ulong(total.y) << 32);
  }
}

#define REGISTER_HASH_TENSOR(T)                                         \
  template [[host_name("hash_tensor_" #T "_ulong")]] kernel void        \
  hash_tensor<T>(constant T * input [[buffer(0)]],                      \
                 device ulong * out0 [[buffer(1)]],                     \
                 constant long & reduce_size [[buffer(2)]],             \
                 uint slice [[threadgroup_position_in_grid]],           \
                 uint tid [[thread_position_in_threadgroup]],           \
                 uint lane [[thread_index_in_simdgroup]],               \
                 uint simdgroup [[simdgroup_index_in_threadgroup]],     \
                 uint tptg [[threads_per_threadgroup]])

REGISTER_HASH_TENSOR(float);
REGISTER_HASH_TENSOR(half);
REGISTER_HASH_TENSOR(bfloat);
REGISTER_HASH_TENSOR(long);
REGISTER_HASH_TENSOR(int);
REGISTER_HASH_TENSOR(short);
REGISTER_HASH_TENSOR(char);
REGISTER_HASH_TENSOR(uchar);
REGISTER_HASH_TENSOR(bool);
