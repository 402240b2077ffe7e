// metalport runtime: the one non-template threading function (see metal-on-cpu.md: per-kernel
// std::thread instantiation dominated compile time).  Compiled once per compiler and cached.
#include <algorithm>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace mshim_h {
using Body = void (*)(void* ctx, const unsigned* pos, const unsigned* grid);
}

static void run_range(const unsigned* t, mshim_h::Body body, void* ctx, unsigned long long begin,
                      unsigned long long end) {
  unsigned pos[3];
  const unsigned long long plane = (unsigned long long)t[0] * t[1];
  for (unsigned long long i = begin; i < end; ++i) {
    pos[2] = unsigned(i / plane);
    unsigned long long rem = i % plane;
    pos[1] = unsigned(rem / t[0]);
    pos[0] = unsigned(rem % t[0]);
    body(ctx, pos, t);
  }
}

extern "C" __attribute__((visibility("default"))) void mshim_rt_grid(
    const unsigned* threads, mshim_h::Body body, void* ctx, unsigned workers) {
  const unsigned long long total = (unsigned long long)threads[0] * threads[1] * threads[2];
  if (total == 0) return;
  unsigned n = workers ? workers : std::max(1u, std::thread::hardware_concurrency());
  if (total < 4096ull * n) n = unsigned(std::max<unsigned long long>(1, total / 4096));
  if (n <= 1) {
    run_range(threads, body, ctx, 0, total);
    return;
  }
  std::vector<std::thread> pool;
  const unsigned long long chunk = (total + n - 1) / n;
  for (unsigned w = 1; w < n; ++w) {
    const unsigned long long b = w * chunk, e = std::min(total, b + chunk);
    if (b < e) pool.emplace_back(run_range, threads, body, ctx, b, e);
  }
  run_range(threads, body, ctx, 0, std::min(total, chunk));
  for (auto& th : pool) th.join();
}

// Note [float32 subnormals]: Apple GPUs flush float32 subnormals to zero, on input and output
// (MSL spec, numerical compliance), so a kernel runs with the CPU's flush-to-zero and
// denormals-are-zero modes on: x86 MXCSR FTZ|DAZ, AArch64 FPCR.FZ.  Worker threads started
// inside inherit the mode.  Half values are unaffected (x86 F16C conversions ignore both bits,
// and a half subnormal is a normal float).  Returns the previous mode for mshim_rt_fp_leave.
extern "C" __attribute__((visibility("default"))) unsigned long mshim_rt_fp_enter() {
#if defined(__x86_64__) || defined(__i386__)
  const unsigned old = _mm_getcsr();
  _mm_setcsr(old | 0x8040u);
  return old;
#elif defined(__aarch64__)
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr | (1ul << 24)));
  return fpcr;
#else
  return 0;
#endif
}

extern "C" __attribute__((visibility("default"))) void mshim_rt_fp_leave(unsigned long old) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(unsigned(old));
#elif defined(__aarch64__)
  __asm__ volatile("msr fpcr, %0" : : "r"(old));
#else
  (void)old;
#endif
}
