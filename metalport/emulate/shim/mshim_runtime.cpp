// metalport runtime: the one non-template threading function (see metal-on-cpu.md: per-kernel
// std::thread instantiation dominated compile time).  Compiled once per compiler and cached.
#include <algorithm>
#include <thread>
#include <vector>

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
