"""The scripted model's kernels and launch specs for two ops outside the spec recipe table: the
reduction `_aminmax.dim` (one threadgroup per slice, min and max halved in threadgroup memory) and
the custom kernel `channel_shuffle` (one thread per output element). Our own code, written for the
end-to-end tests; each also comes with a bad spec the port must refuse first."""

from __future__ import annotations

ARGMIN_SPEC = """\
op: argmin
kind: reduction-stub
opinfo: argmin
host: {function: argmin_kernel_mps, file: aten/src/ATen/native/mps/operations/ArgMin.mm}
kernel: {file: aten/src/ATen/native/mps/kernels/ArgMin.metal, name: argmin}
stub: {name: argmin_stub, header: ATen/native/ReduceOps.h, params: STUB_PARAMS}
inputs:
  - {arg: self, layout: reduce-last}
outputs:
  - {name: out0, shape: reduced, dtype: index}
reduce: {dim: dim, keepdim: keepdim}
params:
  - {name: reduce_size, from: reduce_size, type: uint}
  - {name: num_slices, from: num_slices, type: uint}
geometry: {grid: per-output-element, threadgroup: THREADGROUP}
dtypes:
  - [float, long]
  - [int, long]
cases: {ties: true}
"""
# Over the limit of 1024 threads: refused before anything is built.
ARGMIN_BAD_SPEC = ARGMIN_SPEC.replace("THREADGROUP", "2048").replace("STUB_PARAMS", "[]")
# argmin_stub takes the iterator only: a spec giving it a Scalar is refused at plan.
ARGMIN_BAD_STUB = ARGMIN_SPEC.replace("THREADGROUP", "256").replace("STUB_PARAMS", '["const Scalar& ord"]')
ARGMIN_SPEC = ARGMIN_SPEC.replace("THREADGROUP", "256").replace("STUB_PARAMS", "[]")

ARGMIN_KERNEL = """\
// argmin: the index of the first smallest element of each slice of `reduce_size` contiguous
// elements (the host moved the reduced dims last); the first NaN wins. One thread per slice.
template <typename T>
kernel void argmin(
    constant T* input [[buffer(0)]],
    device long* output [[buffer(1)]],
    constant uint& reduce_size [[buffer(2)]],
    constant uint& num_slices [[buffer(3)]],
    uint slice [[thread_position_in_grid]]) {
  if (slice >= num_slices || reduce_size == 0) {
    return;
  }
  constant T* row = input + static_cast<ulong>(slice) * reduce_size;
  T best = row[0];
  long at = 0;
  for (uint i = 1; i < reduce_size && best == best; ++i) {
    const T value = row[i];
    if (value != value || value < best) {
      best = value;
      at = i;
    }
  }
  output[slice] = at;
}

#define REGISTER_ARGMIN_OP(T)                                        \\
  template [[host_name("argmin_" #T "_long")]] kernel void         \\
  argmin<T>(constant T * input [[buffer(0)]],                        \\
            device long * output [[buffer(1)]],                      \\
            constant uint & reduce_size [[buffer(2)]],               \\
            constant uint & num_slices [[buffer(3)]],                \\
            uint slice [[thread_position_in_grid]])

REGISTER_ARGMIN_OP(float);
REGISTER_ARGMIN_OP(int);
"""

SHUFFLE_SPEC = """\
op: channel_shuffle
kind: custom-kernel
host: {function: channel_shuffle_mps, file: aten/src/ATen/native/mps/operations/ChannelShuffle.mm}
kernel: {file: aten/src/ATen/native/mps/kernels/ChannelShuffle.metal, name: channel_shuffle}
inputs:
  - {arg: self, layout: contiguous}
outputs:
  - {name: out0, shape: same, dtype: same}
params:
  - {name: groups, from: GROUPS, type: long}
  - {name: ndim, from: ndim, type: long}
  - {name: sizes, from: sizes, type: long}
geometry: {grid: per-output-element, threads: output_numel}
dtypes:
  - [float, float]
  - [int, int]
cases:
  random:
    - {self: {shape: [2, 6, 3]}, groups: 2}
    - {self: {shape: [1, 6, 2, 5]}, groups: 3}
    - {self: {shape: [3, 4, 5], transposed: true}, groups: 4}
    - {self: {shape: [2, 8, 2, 2, 2]}, groups: 8}
    - {self: {shape: [2, 5, 3]}, groups: 1}
    - {self: {shape: [0, 4, 3]}, groups: 2}
  held_out:
    - {label: "channels crossing threadgroups", self: {shape: [3, 12, 40]}, groups: 3}
"""
# Names an argument the schema does not have (`group`): refused against the op's schema.
SHUFFLE_BAD_SPEC = SHUFFLE_SPEC.replace("GROUPS", "group")
SHUFFLE_SPEC = SHUFFLE_SPEC.replace("GROUPS", "groups")
# Plans and builds, but hands the kernel the input's strides where it reads sizes: conformance fails
# until the spec itself is repaired (`respecify`).
SHUFFLE_STRIDES_SPEC = SHUFFLE_SPEC.replace("{name: sizes, from: sizes, type: long}", "{name: sizes, from: strides, type: long}")

SHUFFLE_KERNEL = """\
// channel_shuffle: output channel j * groups + g comes from input channel g * (C / groups) + j, for
// (N, C, *) contiguous tensors. One thread per output element; `sizes` is innermost first.
template <typename T>
kernel void channel_shuffle(
    constant T* input [[buffer(0)]],
    device T* output [[buffer(1)]],
    constant long& groups [[buffer(2)]],
    constant long& ndim [[buffer(3)]],
    constant long* sizes [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  long inner = 1;
  for (long d = 0; d < ndim - 2; ++d) {
    inner *= sizes[d];
  }
  const long channels = sizes[ndim - 2];
  const long per_group = channels / groups;
  const long o = static_cast<long>(index);
  const long s = o % inner;
  const long c_out = (o / inner) % channels;
  const long n = o / (inner * channels);
  const long c_in = (c_out % groups) * per_group + c_out / groups;
  output[o] = input[(n * channels + c_in) * inner + s];
}

#define REGISTER_CHANNEL_SHUFFLE_OP(T)                                        \\
  template [[host_name("channel_shuffle_" #T "_" #T)]] kernel void           \\
  channel_shuffle<T>(constant T * input [[buffer(0)]],                        \\
                     device T * output [[buffer(1)]],                         \\
                     constant long & groups [[buffer(2)]],                    \\
                     constant long & ndim [[buffer(3)]],                      \\
                     constant long * sizes [[buffer(4)]],                     \\
                     uint index [[thread_position_in_grid]])

REGISTER_CHANNEL_SHUFFLE_OP(float);
REGISTER_CHANNEL_SHUFFLE_OP(int);
"""

# The line a repair puts back when the scripted model's first kernel gathers from the wrong channel.
SHUFFLE_FIX = "const long c_in = (c_out % groups) * per_group + c_out / groups;"

# A tensor-list op no recipe covers: one launch over the list, chunked as the tree's _foreach_exp.
SQRT_SPEC = """\
op: _foreach_sqrt
kind: multi-tensor
opinfo: _foreach_sqrt
host: {function: foreach_tensor_sqrt_mps, inplace_function: foreach_tensor_sqrt_mps_,
       file: aten/src/ATen/native/mps/operations/ForeachSqrt.mm}
kernel: {file: aten/src/ATen/native/mps/kernels/ForeachSqrt.metal, name: foreach_sqrt}
inputs:
  - {arg: self, layout: contiguous}
outputs:
  - {name: out0, shape: same, dtype: same}
params:
  - {name: chunks, from: chunks, type: long}
  - {name: numels, from: numels, type: long}
geometry: {grid: per-chunk, threadgroup: 128}
dtypes:
  - [float, float]
  - [half, half]
cases:
  random:
    - {self: {list: [[3, 4], [1], [7, 5, 2], []]}}
    - {self: {list: [[200], [0, 3], [2, 129]]}}
  held_out:
    - {label: "tensors spanning several chunks", self: {list: [[513], [3, 300]]}}
"""

SQRT_KERNEL = """\
// _foreach_sqrt: one launch over a list; row y of the grid is chunk y ((tensor, first element) in
// `chunks`), thread x one element of it; the tensors arrive as arrays of device addresses.
template <typename T>
struct SqrtAddress {
  device T* data;
};

template <typename T>
kernel void foreach_sqrt(
    constant SqrtAddress<T>* self [[buffer(0)]],
    constant SqrtAddress<T>* out0 [[buffer(1)]],
    constant long2* chunks [[buffer(2)]],
    constant long* numels [[buffer(3)]],
    uint2 pos [[thread_position_in_grid]]) {
  const long tensor = chunks[pos.y].x;
  const long i = chunks[pos.y].y + long(pos.x);
  if (i >= numels[tensor]) {
    return;
  }
  out0[tensor].data[i] = static_cast<T>(precise::sqrt(static_cast<float>(self[tensor].data[i])));
}

#define REGISTER_FOREACH_SQRT(T)                                       \\
  template [[host_name("foreach_sqrt_" #T "_" #T)]] kernel void        \\
  foreach_sqrt<T>(constant SqrtAddress<T> * self [[buffer(0)]],        \\
                  constant SqrtAddress<T> * out0 [[buffer(1)]],        \\
                  constant long2 * chunks [[buffer(2)]],               \\
                  constant long * numels [[buffer(3)]],                \\
                  uint2 pos [[thread_position_in_grid]])

REGISTER_FOREACH_SQRT(float);
REGISTER_FOREACH_SQRT(half);
"""
