// _ctc_loss (forward): for each sequence b, the CTC forward variables alpha_t(s) in log space over
// the extended label sequence l' (blanks around and between the labels, 2 * L_b + 1 states), then
// the negative log likelihood from the last two states at the last input step. A scan over time:
// step t depends on step t - 1, so one threadgroup owns a sequence and walks t in order, its
// threads spread over the states, a barrier between steps (the row just written is read back
// from device memory by other threads, hence mem_device). Entries torch's CPU kernel leaves
// unset (t >= input length, s > 2 * L_b) are written as -inf.

struct CtcLossParams {
  long max_time; // log_probs.size(0)
  long batch; // log_probs.size(1)
  long labels; // log_probs.size(2)
  long states; // log_alpha.size(2): 2 * (longest target length) + 1
  long target_row; // padded targets: elements per row; concatenated targets: 0
  long blank;
};

// The label of extended state s of a sequence whose labels start at `labels`: blank for even s.
template <typename I>
inline long ctc_state_label(constant I* labels, long s, long blank) {
  return (s % 2 == 0) ? blank : static_cast<long>(labels[s / 2]);
}

// log(exp(a) + exp(b) + exp(c)) with the largest term factored out; all -inf stays -inf.
inline float ctc_log_sum3(float a, float b, float c) {
  float top = metal::max(a, metal::max(b, c));
  if (top == -metal::numeric_limits<float>::infinity()) {
    return top;
  }
  return metal::log(metal::exp(a - top) + metal::exp(b - top) + metal::exp(c - top)) + top;
}

template <typename T, typename I>
kernel void ctc_loss(
    constant T* log_probs [[buffer(0)]],
    constant I* targets [[buffer(1)]],
    device T* neg_log_likelihood [[buffer(2)]],
    device T* log_alpha [[buffer(3)]],
    constant long* input_lengths [[buffer(4)]],
    constant long* target_lengths [[buffer(5)]],
    constant CtcLossParams& p [[buffer(6)]],
    uint b [[threadgroup_position_in_grid]],
    uint tid [[thread_position_in_threadgroup]],
    uint tptg [[threads_per_threadgroup]]) {
  constexpr float neg_inf = -metal::numeric_limits<float>::infinity();
  const long input_length = input_lengths[b];
  const long target_length = target_lengths[b];
  const long used = 2 * target_length + 1;
  long first = long(b) * p.target_row;
  if (p.target_row == 0) { // concatenated targets: this sequence starts after the earlier ones
    first = 0;
    for (uint k = 0; k < b; ++k) {
      first += target_lengths[k];
    }
  }
  constant I* labels = targets + first;
  // log_probs is (time, batch, labels); log_alpha is (batch, time, states).
  constant T* probs = log_probs + long(b) * p.labels;
  const long time_step = p.batch * p.labels;
  device T* alpha = log_alpha + long(b) * p.max_time * p.states;
  for (long s = tid; s < p.states; s += tptg) {
    float value = neg_inf;
    if (input_length > 0 && s == 0) {
      value = float(probs[p.blank]);
    } else if (input_length > 0 && s == 1 && target_length > 0) {
      value = float(probs[ctc_state_label(labels, 1, p.blank)]);
    }
    alpha[s] = T(value);
  }
  for (long t = 1; t < p.max_time; ++t) {
    threadgroup_barrier(mem_flags::mem_device);
    device T* previous = alpha + (t - 1) * p.states;
    device T* current = alpha + t * p.states;
    for (long s = tid; s < p.states; s += tptg) {
      if (t >= input_length || s >= used) {
        current[s] = T(neg_inf);
        continue;
      }
      const long label = ctc_state_label(labels, s, p.blank);
      const float stay = float(previous[s]);
      const float next = s > 0 ? float(previous[s - 1]) : neg_inf;
      const bool skip = s > 1 && ctc_state_label(labels, s - 2, p.blank) != label;
      const float jump = skip ? float(previous[s - 2]) : neg_inf;
      current[s] = T(ctc_log_sum3(stay, next, jump) + float(probs[t * time_step + label]));
    }
  }
  threadgroup_barrier(mem_flags::mem_device);
  if (tid != 0) {
    return;
  }
  float likelihood = target_length == 0 ? 0.0 : neg_inf;
  if (input_length > 0) {
    device T* last = alpha + (input_length - 1) * p.states;
    const float end_blank = float(last[2 * target_length]);
    const float end_label = target_length > 0 ? float(last[2 * target_length - 1]) : neg_inf;
    likelihood = ctc_log_sum3(end_blank, end_label, neg_inf);
  }
  neg_log_likelihood[b] = T(-likelihood);
}

#define REGISTER_CTC_LOSS(T, I)                                              \
  template [[host_name("ctc_loss_" #T "_" #I "_" #T "_" #T)]] kernel void   \
  ctc_loss<T, I>(constant T * log_probs [[buffer(0)]],                      \
                 constant I * targets [[buffer(1)]],                        \
                 device T * neg_log_likelihood [[buffer(2)]],               \
                 device T * log_alpha [[buffer(3)]],                        \
                 constant long* input_lengths [[buffer(4)]],                \
                 constant long* target_lengths [[buffer(5)]],               \
                 constant CtcLossParams& p [[buffer(6)]],                   \
                 uint b [[threadgroup_position_in_grid]],                   \
                 uint tid [[thread_position_in_threadgroup]],               \
                 uint tptg [[threads_per_threadgroup]])

REGISTER_CTC_LOSS(float, long);
REGISTER_CTC_LOSS(float, int);
