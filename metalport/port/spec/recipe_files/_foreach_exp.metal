// _foreach_exp: one launch over a list of tensors. Row y of the 2-D grid is chunk y of the
// tensors, (tensor, first element) in `chunks`; thread x handles one element of it. The tensors
// arrive as arrays of device addresses (an argument buffer of `device T*`).
template <typename T>
struct ForeachAddress {
  device T* data;
};

template <typename T>
kernel void foreach_exp(
    constant ForeachAddress<T>* self [[buffer(0)]],
    constant ForeachAddress<T>* out0 [[buffer(1)]],
    constant long2* chunks [[buffer(2)]],
    constant long* numels [[buffer(3)]],
    uint2 pos [[thread_position_in_grid]]) {
  const long tensor = chunks[pos.y].x;
  const long i = chunks[pos.y].y + long(pos.x);
  if (i >= numels[tensor]) {
    return;
  }
  out0[tensor].data[i] = static_cast<T>(precise::exp(static_cast<float>(self[tensor].data[i])));
}

#define REGISTER_FOREACH_EXP(T)                                        \
  template [[host_name("foreach_exp_" #T "_" #T)]] kernel void         \
  foreach_exp<T>(constant ForeachAddress<T> * self [[buffer(0)]],      \
                 constant ForeachAddress<T> * out0 [[buffer(1)]],      \
                 constant long2 * chunks [[buffer(2)]],                \
                 constant long * numels [[buffer(3)]],                 \
                 uint2 pos [[thread_position_in_grid]])

REGISTER_FOREACH_EXP(float);
REGISTER_FOREACH_EXP(half);
REGISTER_FOREACH_EXP(bfloat);
