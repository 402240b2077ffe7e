// Test driver for metal_threadgroup.h on its own (no shim): built by test_threadgroup_executor.py
// after metalport.emulate.threadgroup.rewrite_threadgroup_locals has rewritten this file.
// Usage: driver CASE THREADS_X THREADS_Y THREADS_Z GROUP_X GROUP_Y GROUP_Z WORKERS
// Prints one line per grid thread ("gid v0 v1 ..."; "-" for a thread that wrote nothing) and a
// last line "report groups threads barriers simd_collectives barriers_after_return divergent".
#include "metal_threadgroup.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace metal {
enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2 };
}
#define threadgroup
using namespace metal;

constexpr int kCols = 48;
struct Ctx {
  std::vector<double> out;
  std::vector<char> wrote;
  unsigned width = 0;  // threads_per_grid.x, to linearise gids
};

static unsigned gid_of(const mshim::ThreadIds& ids) {
  const unsigned* p = ids.thread_position_in_grid;
  const unsigned* n = ids.threads_per_grid;
  return p[0] + n[0] * (p[1] + n[1] * p[2]);
}
static int value_of(unsigned gid) { return int((gid * 7u + 3u) % 23u) - 11; }
static bool returns_early(unsigned gid) { return gid % 7u == 3u; }

static void put(Ctx& c, unsigned gid, int col, double v) {
  c.out[gid * kCols + col] = v;
  c.wrote[gid] = 1;
}

// Every collective, on ints (exact) and a few on floats.  Threads with gid % 7 == 3 return first,
// so their lanes are inactive.
static void collectives(void* vctx, const mshim::ThreadIds& ids) {
  Ctx& c = *static_cast<Ctx*>(vctx);
  const unsigned gid = gid_of(ids);
  if (returns_early(gid)) return;
  const int v = value_of(gid);
  const unsigned lane = ids.thread_index_in_simdgroup;
  const int p = gid % 11u == 0 ? 2 : (gid % 3u == 0 ? -1 : 1);
  const unsigned u = (gid * 2654435761u) >> 7;
  const int fill = -1000 - int(lane);
  int col = 0;
  put(c, gid, col++, simd_sum(v));
  put(c, gid, col++, simd_product(p));
  put(c, gid, col++, simd_max(v));
  put(c, gid, col++, simd_min(v));
  put(c, gid, col++, simd_and(u));
  put(c, gid, col++, simd_or(u));
  put(c, gid, col++, simd_xor(u));
  put(c, gid, col++, simd_broadcast(v, 5));
  put(c, gid, col++, simd_broadcast_first(v));
  put(c, gid, col++, simd_shuffle(v, (lane * 7 + 3) % 32));
  put(c, gid, col++, simd_shuffle_up(v, 3));
  put(c, gid, col++, simd_shuffle_down(v, 3));
  put(c, gid, col++, simd_shuffle_xor(v, 5));
  put(c, gid, col++, simd_shuffle_rotate_up(v, 3));
  put(c, gid, col++, simd_shuffle_rotate_down(v, 3));
  put(c, gid, col++, simd_shuffle_and_fill_up(v, fill, 3));
  put(c, gid, col++, simd_shuffle_and_fill_down(v, fill, 3));
  put(c, gid, col++, simd_shuffle_and_fill_down(v, fill, 3, 8));
  put(c, gid, col++, simd_shuffle_and_fill_up(v, fill, 2, 4));
  put(c, gid, col++, simd_prefix_inclusive_sum(v));
  put(c, gid, col++, simd_prefix_exclusive_sum(v));
  put(c, gid, col++, simd_prefix_inclusive_product(p));
  put(c, gid, col++, simd_prefix_exclusive_product(p));
  put(c, gid, col++, simd_any(v > 8));
  put(c, gid, col++, simd_all(v != 0));
  simd_vote vote = simd_ballot(v > 0);
  put(c, gid, col++, double(static_cast<simd_vote::vote_t>(vote)));
  put(c, gid, col++, vote.all());
  put(c, gid, col++, simd_is_first());
  put(c, gid, col++, double(static_cast<simd_vote::vote_t>(simd_active_threads_mask())));
  put(c, gid, col++, quad_sum(v));
  put(c, gid, col++, quad_max(v));
  put(c, gid, col++, quad_shuffle(v, 2));
  put(c, gid, col++, quad_broadcast(v, 1));
  put(c, gid, col++, quad_shuffle_xor(v, 1));
  put(c, gid, col++, quad_prefix_exclusive_sum(v));
  put(c, gid, col++, quad_any(v > 5));
  put(c, gid, col++, quad_shuffle_down(v, 1));
  simdgroup_barrier(mem_flags::mem_threadgroup);
  const float f = float(v) * 0.5f;
  const float g = lane == 4 ? __builtin_nanf("") : f;
  put(c, gid, col++, simd_sum(f));
  put(c, gid, col++, simd_max(g));
  put(c, gid, col++, simd_min(g));
  const short s = short(v);
  put(c, gid, col++, simd_sum(s));
  put(c, gid, col++, simd_shuffle_down(s, 1));
}

// Threadgroup memory and barriers: a tree sum of the group and a rotation, with early returns
// of no thread.  Works for any (partial) group size.
static void barrier_sum(void* vctx, const mshim::ThreadIds& ids) {
  Ctx& c = *static_cast<Ctx*>(vctx);
  const unsigned gid = gid_of(ids);
  const unsigned tid = ids.thread_index_in_threadgroup;
  const unsigned n = ids.threads_per_threadgroup[0] * ids.threads_per_threadgroup[1] *
                     ids.threads_per_threadgroup[2];
  threadgroup int shared[1024];
  threadgroup int rotated[1024], unused_scalar;
  (void)unused_scalar;
  shared[tid] = value_of(gid);
  rotated[tid] = int(gid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const int next_gid = rotated[(tid + 1) % n];
  unsigned half = 1;
  while (half < n) half *= 2;
  for (half /= 2; half > 0; half /= 2) {
    if (tid < half && tid + half < n) shared[tid] += shared[tid + half];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  put(c, gid, 0, shared[0]);
  put(c, gid, 1, next_gid);
}

// Odd threads return before the barrier; even ones read what the odd ones stored.
static void early_return(void* vctx, const mshim::ThreadIds& ids) {
  Ctx& c = *static_cast<Ctx*>(vctx);
  const unsigned gid = gid_of(ids);
  const unsigned tid = ids.thread_index_in_threadgroup;
  threadgroup int slots[1024];
  slots[tid] = int(gid) * 10;
  if (tid % 2 == 1) return;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const unsigned n = ids.threads_per_threadgroup[0];
  put(c, gid, 0, tid + 1 < n ? slots[tid + 1] : -1);
  threadgroup_barrier(mem_flags::mem_threadgroup);
}

// Lanes below 16 sum, the others take the max: two collectives resolved one after the other.
static void divergent(void* vctx, const mshim::ThreadIds& ids) {
  Ctx& c = *static_cast<Ctx*>(vctx);
  const unsigned gid = gid_of(ids);
  const int v = value_of(gid);
  put(c, gid, 0, ids.thread_index_in_simdgroup < 16 ? simd_sum(v) : simd_max(v));
}

// Every thread id the executor hands out.
static void thread_ids(void* vctx, const mshim::ThreadIds& ids) {
  Ctx& c = *static_cast<Ctx*>(vctx);
  const unsigned gid = gid_of(ids);
  int col = 0;
  for (int d = 0; d < 3; ++d) put(c, gid, col++, ids.thread_position_in_threadgroup[d]);
  for (int d = 0; d < 3; ++d) put(c, gid, col++, ids.threadgroup_position_in_grid[d]);
  for (int d = 0; d < 3; ++d) put(c, gid, col++, ids.threads_per_threadgroup[d]);
  for (int d = 0; d < 3; ++d) put(c, gid, col++, ids.threadgroups_per_grid[d]);
  for (int d = 0; d < 3; ++d) put(c, gid, col++, ids.dispatch_threads_per_threadgroup[d]);
  put(c, gid, col++, ids.thread_index_in_threadgroup);
  put(c, gid, col++, ids.thread_index_in_simdgroup);
  put(c, gid, col++, ids.simdgroup_index_in_threadgroup);
  put(c, gid, col++, ids.simdgroups_per_threadgroup);
  put(c, gid, col++, ids.threads_per_simdgroup);
  put(c, gid, col++, ids.thread_index_in_quadgroup);
  put(c, gid, col++, ids.quadgroup_index_in_threadgroup);
}

// Thread 0 reads threadgroup memory nobody wrote in this group: the executor poisons it.
static void poison(void* vctx, const mshim::ThreadIds& ids) {
  Ctx& c = *static_cast<Ctx*>(vctx);
  const unsigned gid = gid_of(ids);
  threadgroup unsigned scratch[4];
  if (ids.thread_index_in_threadgroup == 0) {
    put(c, gid, 0, scratch[1]);
    scratch[1] = 7;
  }
}

// A race: each thread reads its neighbour's slot with no barrier after the writes.
static void missing_barrier(void* vctx, const mshim::ThreadIds& ids) {
  Ctx& c = *static_cast<Ctx*>(vctx);
  const unsigned gid = gid_of(ids);
  const unsigned tid = ids.thread_index_in_threadgroup;
  threadgroup unsigned slots[64];
  slots[tid] = gid;
  put(c, gid, 0, slots[(tid + 1) % ids.threads_per_threadgroup[0]]);
}

int main(int argc, char** argv) {
  if (argc != 9) return 2;
  const std::string which = argv[1];
  unsigned threads[3], group[3];
  for (int d = 0; d < 3; ++d) {
    threads[d] = unsigned(std::stoul(argv[2 + d]));
    group[d] = unsigned(std::stoul(argv[5 + d]));
  }
  const unsigned workers = unsigned(std::stoul(argv[8]));
  if (which == "outside") {
    std::printf("%d\n", simd_sum(1));
    return 0;
  }
  mshim::ThreadBody body = which == "collectives"    ? collectives
                           : which == "barrier_sum"  ? barrier_sum
                           : which == "early_return" ? early_return
                           : which == "divergent"    ? divergent
                           : which == "thread_ids"   ? thread_ids
                           : which == "poison"       ? poison
                           : which == "missing_barrier" ? missing_barrier
                                                     : nullptr;
  if (body == nullptr) return 2;
  Ctx c;
  const std::size_t n = std::size_t(threads[0]) * threads[1] * threads[2];
  c.out.assign(n * kCols, 0.0);
  c.wrote.assign(n, 0);
  c.width = threads[0];
  mshim::RunReport r = mshim::run_threadgroups(threads, group, body, &c, workers);
  for (std::size_t i = 0; i < n; ++i) {
    if (!c.wrote[i]) {
      std::printf("%zu -\n", i);
      continue;
    }
    std::printf("%zu", i);
    for (int k = 0; k < kCols; ++k) std::printf(" %.17g", c.out[i * kCols + k]);
    std::printf("\n");
  }
  std::printf("report %lu %lu %lu %lu %lu %lu\n", r.groups, r.threads, r.barriers,
              r.simd_collectives, r.barriers_after_return, r.divergent_simd);
  return 0;
}
