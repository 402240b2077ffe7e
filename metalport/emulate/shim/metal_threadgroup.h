// metalport Metal-on-CPU shim: the threadgroup execution model.
//
// Included at the end of metal_shim.h, but self-contained: it uses none of the shim's types, so
// every collective is a template on T (half, bfloat, vectors: whatever the shim defines).
//
// Model.  `mshim::run_threadgroups` runs a dispatchThreads-style grid.  Each threadgroup runs on
// one OS thread; its threads are fibers on pooled stacks.  A fiber runs until it reaches a
// threadgroup_barrier, a simd_* collective or returns (even groups run them first to last, odd
// groups last to first, so a missing barrier shows up).  When no fiber of the group can
// run, the scheduler resolves, in this order:
//   1. per simdgroup, the lanes waiting at a simd_*/quad_* collective: lanes waiting elsewhere, lanes
//      that returned and lanes past a partial group's end are inactive, as on the GPU;
//   2. otherwise the threadgroup barrier, once every thread still running waits at one.
// A thread that returned never blocks the others (the GPU behaves the same; Metal calls a barrier
// not reached by every thread undefined, so it is counted in RunReport), so nothing deadlocks.
// Threadgroup locals are rewritten (metalport/emulate/threadgroup.py) to `static thread_local`
// objects: one OS thread runs one group at a time, so its fibers share them.
#pragma once

#pragma push_macro("thread")
#pragma push_macro("device")
#pragma push_macro("constant")
#pragma push_macro("threadgroup")
#pragma push_macro("kernel")
#pragma push_macro("vertex")
#pragma push_macro("fragment")
#undef thread
#undef device
#undef constant
#undef threadgroup
#undef kernel
#undef vertex
#undef fragment
#include <sys/auxv.h>
#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

// x86-64 switches fibers with a few instructions; elsewhere (or with -DMSHIM_TG_UCONTEXT, or
// when shadow stacks are on) with ucontext, whose swapcontext costs a system call.
#if !defined(MSHIM_TG_UCONTEXT) && \
    !(defined(__x86_64__) && defined(__linux__) && !(defined(__CET__) && (__CET__ & 2)))
#define MSHIM_TG_UCONTEXT 1
#endif
#ifdef MSHIM_TG_UCONTEXT
#include <ucontext.h>
#endif
#pragma pop_macro("fragment")
#pragma pop_macro("vertex")
#pragma pop_macro("kernel")
#pragma pop_macro("threadgroup")
#pragma pop_macro("constant")
#pragma pop_macro("device")
#pragma pop_macro("thread")

#ifndef MSHIM_FIBER_STACK_BYTES
#define MSHIM_FIBER_STACK_BYTES (128u * 1024u)
#endif

#ifndef MSHIM_TG_UCONTEXT
// void mshim_tg_switch(void** save_sp, void* load_sp): push the callee-saved registers, store the
// stack pointer, load the other one and pop its registers.  The floating-point control state
// (mxcsr, x87 control word) is not switched: kernels never change it and saving it was 80% of the
// cost of a switch, so every fiber runs with its worker's.
__asm__(R"(
  .pushsection .text
  .weak mshim_tg_switch
  .hidden mshim_tg_switch
  .type mshim_tg_switch, @function
mshim_tg_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size mshim_tg_switch, .-mshim_tg_switch
  .popsection
)");
extern "C" void mshim_tg_switch(void** save_sp, void* load_sp);
#endif

namespace mshim {

// Built-in thread ids of one thread, as the [[...]] attributes of a kernel see them.  For a partial
// (edge) threadgroup, threads_per_threadgroup and simdgroups_per_threadgroup are the actual,
// clipped size (Metal's non-uniform dispatch); the dispatch_* fields keep the requested size.
struct ThreadIds {
  unsigned thread_position_in_grid[3], thread_position_in_threadgroup[3],
      threadgroup_position_in_grid[3], threads_per_threadgroup[3], threadgroups_per_grid[3],
      threads_per_grid[3];
  unsigned thread_index_in_threadgroup, thread_index_in_simdgroup, simdgroup_index_in_threadgroup,
      threads_per_simdgroup, simdgroups_per_threadgroup;
  unsigned dispatch_threads_per_threadgroup[3];
  unsigned dispatch_simdgroups_per_threadgroup, thread_execution_width;
  unsigned thread_index_in_quadgroup, quadgroup_index_in_threadgroup, quadgroups_per_threadgroup;
};
using ThreadBody = void (*)(void* ctx, const ThreadIds& ids);

// What a dispatch did; the counters of undefined behaviour are for the harness to report.
struct RunReport {
  unsigned long groups = 0, threads = 0, barriers = 0, simd_collectives = 0;
  unsigned long barriers_after_return = 0;  // a barrier released while some thread had returned
  unsigned long divergent_simd = 0;  // one simdgroup's lanes waited at different collectives
};

constexpr unsigned kSimdWidth = 32;
constexpr unsigned kMaxThreadsPerThreadgroup = 1024;

namespace tg {

// Messages spell "thread" "group" in two literals: metalport blanks the keyword in the
// preprocessed text, string literals included.
[[noreturn]] inline void fail(const char* what, const char* detail) {
  std::fprintf(stderr, "metalport: %s%s\n", what, detail);
  std::fflush(stderr);
  __builtin_abort();
}

enum class State : unsigned char { Ready, AtBarrier, AtSimd, Done };
struct Fiber;
// Resolves one collective for the lanes of one simdgroup: lanes[i] waits at it, or is nullptr.
using Resolve = void (*)(Fiber* const* lanes);

struct Context {
#ifdef MSHIM_TG_UCONTEXT
  ucontext_t uc;
#else
  void* sp = nullptr;
#endif
};

struct Fiber {
  Context ctx;
  ThreadIds ids;
  State state = State::Done;
  Resolve resolve = nullptr;
  const void* in = nullptr;
  const void* fill = nullptr;
  void* out = nullptr;
  unsigned arg = 0, arg2 = 0;
};

inline void switch_to(Context& save, Context& load) {
#ifdef MSHIM_TG_UCONTEXT
  if (swapcontext(&save.uc, &load.uc) != 0) fail("swapcontext failed", "");
#else
  mshim_tg_switch(&save.sp, load.sp);
#endif
}

struct Worker;
inline thread_local Worker* t_worker = nullptr;
// Counts the groups this OS thread has started: threadgroup locals are poisoned once per group.
inline thread_local unsigned long t_group_epoch = 0;

// Fibers and their stacks (a guard page below each), kept in a process-wide pool after a
// dispatch: mapping, guarding and first-touching 1024 stacks costs more than a small dispatch.
struct Stacks {
  unsigned capacity;
  Fiber* fibers;
  char* base = nullptr;
  std::size_t slot = 0, mapped = 0, stack_bytes = 0;

  explicit Stacks(unsigned n) : capacity(n), fibers(new Fiber[n]) {
    std::size_t page = getauxval(AT_PAGESZ);
    if (page == 0) page = 4096;
    stack_bytes = (MSHIM_FIBER_STACK_BYTES + page - 1) / page * page;
    slot = stack_bytes + page;
    mapped = slot * n;
    void* mem = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) fail("cannot map fiber stacks for a thread" "group", "");
    base = static_cast<char*>(mem);
    for (unsigned i = 0; i < n; ++i) mprotect(base + i * slot, page, PROT_NONE);
#ifdef MSHIM_TG_UCONTEXT
    for (unsigned i = 0; i < n; ++i)
      if (getcontext(&fibers[i].ctx.uc) != 0) fail("getcontext failed", "");
#endif
  }
  char* stack_top(unsigned i) const { return base + i * slot + slot; }
};

inline std::mutex g_stacks_mutex;
inline std::vector<Stacks*> g_stacks_pool;

inline Stacks* acquire_stacks(unsigned n) {
  {
    std::lock_guard<std::mutex> lock(g_stacks_mutex);
    for (std::size_t i = 0; i < g_stacks_pool.size(); ++i) {
      if (g_stacks_pool[i]->capacity < n) continue;
      Stacks* s = g_stacks_pool[i];
      g_stacks_pool.erase(g_stacks_pool.begin() + std::ptrdiff_t(i));
      return s;
    }
  }
  return new Stacks(n);
}

inline void release_stacks(Stacks* s) {
  std::lock_guard<std::mutex> lock(g_stacks_mutex);
  g_stacks_pool.push_back(s);
}

struct Worker {
  ThreadBody body;
  void* ctx;
  Stacks* stacks;
  Fiber* fibers;
  Fiber* current = nullptr;
  Context sched;
  RunReport report;
  std::vector<unsigned> ready;

  Worker(ThreadBody b, void* c, unsigned n)
      : body(b), ctx(c), stacks(acquire_stacks(n)), fibers(stacks->fibers) {
    ready.reserve(n);
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() { release_stacks(stacks); }
  char* stack_top(unsigned i) const { return stacks->stack_top(i); }
};

[[noreturn]] inline void fiber_main() {
  Worker* w = t_worker;
  Fiber* f = w->current;
  w->body(w->ctx, f->ids);
  f->state = State::Done;
  switch_to(f->ctx, w->sched);
  __builtin_unreachable();
}

inline void start_fiber(Worker& w, unsigned i) {
  Fiber& f = w.fibers[i];
  f.state = State::Ready;
#ifdef MSHIM_TG_UCONTEXT
  f.ctx.uc.uc_stack.ss_sp = w.stack_top(i) - w.stacks->stack_bytes;
  f.ctx.uc.uc_stack.ss_size = w.stacks->stack_bytes;
  f.ctx.uc.uc_link = nullptr;
  makecontext(&f.ctx.uc, reinterpret_cast<void (*)()>(&fiber_main), 0);
#else
  // The frame mshim_tg_switch pops: r15..rbp, then `ret` enters fiber_main with the stack
  // aligned as after a call (a zero return address above it).
  std::uintptr_t* sp = reinterpret_cast<std::uintptr_t*>(w.stack_top(i));
  *--sp = 0;
  *--sp = reinterpret_cast<std::uintptr_t>(&fiber_main);
  for (int r = 0; r < 6; ++r) *--sp = 0;
  f.ctx.sp = sp;
#endif
}

// Runs threadgroup `g` (linear, x fastest) of the dispatch to completion on this worker.
inline void run_group(Worker& w, unsigned long g, const unsigned threads[3],
                      const unsigned group[3], const unsigned ngroups[3]) {
  unsigned gp[3] = {unsigned(g % ngroups[0]), unsigned(g / ngroups[0] % ngroups[1]),
                    unsigned(g / ngroups[0] / ngroups[1])};
  unsigned a[3];
  for (int d = 0; d < 3; ++d) {
    unsigned left = threads[d] - gp[d] * group[d];
    a[d] = left < group[d] ? left : group[d];
  }
  const unsigned n = a[0] * a[1] * a[2];
  const unsigned nsg = (n + kSimdWidth - 1) / kSimdWidth;
  const unsigned dispatch_n = group[0] * group[1] * group[2];
  ++t_group_epoch;
  w.report.groups += 1;
  w.report.threads += n;
  w.ready.clear();
  for (unsigned i = 0; i < n; ++i) {
    ThreadIds& id = w.fibers[i].ids;
    unsigned local[3] = {i % a[0], i / a[0] % a[1], i / a[0] / a[1]};
    for (int d = 0; d < 3; ++d) {
      id.thread_position_in_threadgroup[d] = local[d];
      id.threadgroup_position_in_grid[d] = gp[d];
      id.thread_position_in_grid[d] = gp[d] * group[d] + local[d];
      id.threads_per_threadgroup[d] = a[d];
      id.dispatch_threads_per_threadgroup[d] = group[d];
      id.threadgroups_per_grid[d] = ngroups[d];
      id.threads_per_grid[d] = threads[d];
    }
    id.thread_index_in_threadgroup = i;
    id.thread_index_in_simdgroup = i % kSimdWidth;
    id.simdgroup_index_in_threadgroup = i / kSimdWidth;
    id.threads_per_simdgroup = kSimdWidth;
    id.thread_execution_width = kSimdWidth;
    id.simdgroups_per_threadgroup = nsg;
    id.dispatch_simdgroups_per_threadgroup = (dispatch_n + kSimdWidth - 1) / kSimdWidth;
    id.thread_index_in_quadgroup = i % 4;
    id.quadgroup_index_in_threadgroup = i / 4;
    id.quadgroups_per_threadgroup = (n + 3) / 4;
    start_fiber(w, i);
    w.ready.push_back(i);
  }
  // Odd groups run their ready fibers last to first: a kernel missing a barrier reads stale or
  // poisoned threadgroup memory in one of the two orders, as it would on some GPU schedule.
  const bool backwards = (g & 1) != 0;
  for (;;) {
    const std::size_t count = w.ready.size();
    for (std::size_t k = 0; k < count; ++k) {
      const unsigned i = w.ready[backwards ? count - 1 - k : k];
      w.current = &w.fibers[i];
      switch_to(w.sched, w.fibers[i].ctx);
    }
    w.current = nullptr;
    w.ready.clear();
    for (unsigned sg = 0; sg < nsg; ++sg) {
      Fiber* lanes[kSimdWidth] = {};
      Resolve op = nullptr;
      bool mixed = false;
      const unsigned base = sg * kSimdWidth;
      const unsigned width = n - base < kSimdWidth ? n - base : kSimdWidth;
      for (unsigned l = 0; l < width; ++l) {
        Fiber* f = &w.fibers[base + l];
        if (f->state != State::AtSimd) continue;
        if (op == nullptr) op = f->resolve;
        if (f->resolve == op)
          lanes[l] = f;
        else
          mixed = true;
      }
      if (op == nullptr) continue;
      op(lanes);
      w.report.simd_collectives += 1;
      w.report.divergent_simd += mixed;
      for (unsigned l = 0; l < width; ++l) {
        if (lanes[l] == nullptr) continue;
        lanes[l]->state = State::Ready;
        w.ready.push_back(base + l);
      }
    }
    if (!w.ready.empty()) continue;
    unsigned returned = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (w.fibers[i].state == State::AtBarrier) {
        w.fibers[i].state = State::Ready;
        w.ready.push_back(i);
      } else {
        returned += 1;
      }
    }
    if (w.ready.empty()) return;
    w.report.barriers += 1;
    w.report.barriers_after_return += returned != 0;
  }
}

inline Fiber* self(const char* what) {
  Worker* w = t_worker;
  if (w == nullptr || w->current == nullptr)
    fail(what, " called outside the thread" "group executor (the harness ran this kernel as a "
               "plain grid loop)");
  return w->current;
}

inline void block(Fiber* f, State s) {
  f->state = s;
  switch_to(f->ctx, t_worker->sched);
}

inline void barrier() { block(self("threadgroup_barrier"), State::AtBarrier); }

// One lane's side of a collective: publish the operands, wait, return what the resolver wrote.
template <class R>
inline R exchange(Resolve op, const void* in, const void* fill, unsigned arg, unsigned arg2,
                  const char* what) {
  Fiber* f = self(what);
  alignas(R) unsigned char buf[sizeof(R)];
  f->resolve = op;
  f->in = in;
  f->fill = fill;
  f->arg = arg;
  f->arg2 = arg2;
  f->out = buf;
  block(f, State::AtSimd);
  R* r = std::launder(reinterpret_cast<R*>(buf));
  R result = static_cast<R&&>(*r);
  r->~R();
  return result;
}

template <class T> inline const T& input(const Fiber* f) { return *static_cast<const T*>(f->in); }
template <class T> inline const T& filling(const Fiber* f) {
  return *static_cast<const T*>(f->fill);
}
template <class R> inline void output(Fiber* f, const R& v) { ::new (f->out) R(v); }

// Vector-like: a static integral `size` and operator[] (the shim's vec<T, N>).
template <class T, class = void> struct is_vector_like : std::false_type {};
template <class T>
struct is_vector_like<T, std::void_t<decltype(T::size + 0), decltype(std::declval<T&>()[0])>>
    : std::is_integral<decltype(T::size + 0)> {};

template <class T, bool = is_vector_like<T>::value> struct element { using type = T; };
template <class T> struct element<T, true> {
  using type = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<T&>()[0])>>;
};
template <class T> using element_t = typename element<T>::type;

template <class T> constexpr bool is_wide_v =
    sizeof(T) == 8 && (std::is_integral<T>::value || std::is_floating_point<T>::value);

template <class T> constexpr void check_type() {
  static_assert(!is_wide_v<element_t<T>>,
                "Metal has no simd_*/quad_* functions for 64-bit types; reinterpret as int2 with "
                "as_type, as c10/metal/reduction_utils.h does");
}

template <class Op, class T> inline T combine(const T& a, const T& b) {
  if constexpr (is_vector_like<T>::value) {
    T r = a;
    for (int i = 0; i < int(T::size); ++i) r[i] = combine<Op>(a[i], b[i]);
    return r;
  } else {
    return Op::apply(a, b);
  }
}
struct OpSum {
  template <class T> static T apply(const T& a, const T& b) { return static_cast<T>(a + b); }
  template <class T> static T identity() { return T(0); }
};
struct OpProduct {
  template <class T> static T apply(const T& a, const T& b) { return static_cast<T>(a * b); }
  template <class T> static T identity() { return T(1); }
};
struct OpMax {  // fmax-like: a NaN operand loses
  template <class T> static T apply(const T& a, const T& b) {
    return (b > a || a != a) ? b : a;
  }
};
struct OpMin {
  template <class T> static T apply(const T& a, const T& b) {
    return (b < a || a != a) ? b : a;
  }
};
struct OpAnd {
  template <class T> static T apply(const T& a, const T& b) { return static_cast<T>(a & b); }
};
struct OpOr {
  template <class T> static T apply(const T& a, const T& b) { return static_cast<T>(a | b); }
};
struct OpXor {
  template <class T> static T apply(const T& a, const T& b) { return static_cast<T>(a ^ b); }
};

// Reduction over the active lanes of each Seg-lane segment (32: simdgroup, 4: quadgroup), as a
// pairwise tree; every active lane of the segment gets the result.
template <class Op, class T, unsigned Seg> inline void resolve_reduce(Fiber* const* lanes) {
  for (unsigned base = 0; base < kSimdWidth; base += Seg) {
    T vals[Seg];
    bool has[Seg];
    for (unsigned l = 0; l < Seg; ++l) {
      has[l] = lanes[base + l] != nullptr;
      if (has[l]) vals[l] = input<T>(lanes[base + l]);
    }
    for (unsigned off = Seg / 2; off > 0; off /= 2)
      for (unsigned l = 0; l < off; ++l) {
        if (!has[l + off]) continue;
        vals[l] = has[l] ? combine<Op>(vals[l], vals[l + off]) : vals[l + off];
        has[l] = true;
      }
    for (unsigned l = 0; l < Seg; ++l)
      if (lanes[base + l]) output<T>(lanes[base + l], vals[0]);
  }
}

// Prefix over the active lanes of a segment in lane order; inactive lanes are skipped.
template <class Op, class T, bool Inclusive, unsigned Seg>
inline void resolve_prefix(Fiber* const* lanes) {
  for (unsigned base = 0; base < kSimdWidth; base += Seg) {
    T acc = Op::template identity<T>();
    bool any = false;
    for (unsigned l = 0; l < Seg; ++l) {
      Fiber* f = lanes[base + l];
      if (f == nullptr) continue;
      const T& v = input<T>(f);
      T next = any ? combine<Op>(acc, v) : v;
      output<T>(f, Inclusive ? next : acc);
      acc = next;
      any = true;
    }
  }
}

enum class Move { Index, First, Up, Down, Xor, RotateUp, RotateDown, FillUp, FillDown };

// Data movement within Seg-lane segments.  A lane reading an inactive lane gets T{} (Apple GPUs
// return 0 in practice; Metal leaves it undefined); up/down past the segment keep their own value.
template <class T, Move M, unsigned Seg> inline void resolve_move(Fiber* const* lanes) {
  for (unsigned base = 0; base < kSimdWidth; base += Seg) {
    int first = -1;
    for (unsigned l = 0; l < Seg && first < 0; ++l)
      if (lanes[base + l]) first = int(l);
    for (unsigned l = 0; l < Seg; ++l) {
      Fiber* f = lanes[base + l];
      if (f == nullptr) continue;
      const int d = int(f->arg);
      int mod = int(f->arg2);  // Metal allows 2, 4, 8, 16 or 32; anything else: the whole segment
      if (mod <= 0 || mod > int(Seg) || int(Seg) % mod != 0) mod = int(Seg);
      int src = -1;
      bool use_fill = false, keep = false;
      switch (M) {
        case Move::Index: src = d < int(Seg) ? d : -1; break;
        case Move::First: src = first; break;
        case Move::Up: src = int(l) - d; keep = src < 0; break;
        case Move::Down: src = int(l) + d; keep = src >= int(Seg); break;
        case Move::Xor: src = int(l) ^ d; keep = src >= int(Seg); break;
        case Move::RotateUp: src = ((int(l) - d) % int(Seg) + int(Seg)) % int(Seg); break;
        case Move::RotateDown: src = (int(l) + d) % int(Seg); break;
        case Move::FillUp: {
          const int seg0 = int(l) / mod * mod, j = int(l) % mod - d;
          use_fill = j < 0;
          src = seg0 + (use_fill ? j + mod : j);
          break;
        }
        case Move::FillDown: {
          const int seg0 = int(l) / mod * mod, j = int(l) % mod + d;
          use_fill = j >= mod;
          src = seg0 + (use_fill ? j - mod : j);
          break;
        }
      }
      if (keep) {
        output<T>(f, input<T>(f));
      } else if (src < 0 || src >= int(Seg) || lanes[base + src] == nullptr) {
        output<T>(f, T{});
      } else {
        Fiber* s = lanes[base + src];
        output<T>(f, use_fill ? filling<T>(s) : input<T>(s));
      }
    }
  }
}

enum class Vote { Any, All, Ballot, IsFirst, Active, Sync };

struct VoteResult {
  std::uint64_t bits, active;
};

template <Vote V, unsigned Seg> inline void resolve_vote(Fiber* const* lanes) {
  for (unsigned base = 0; base < kSimdWidth; base += Seg) {
    std::uint64_t bits = 0, active = 0;
    int first = -1;
    for (unsigned l = 0; l < Seg; ++l) {
      Fiber* f = lanes[base + l];
      if (f == nullptr) continue;
      if (first < 0) first = int(l);
      active |= std::uint64_t(1) << l;
      if (V != Vote::Sync && V != Vote::Active && V != Vote::IsFirst && input<bool>(f))
        bits |= std::uint64_t(1) << l;
    }
    for (unsigned l = 0; l < Seg; ++l) {
      Fiber* f = lanes[base + l];
      if (f == nullptr) continue;
      switch (V) {
        case Vote::Any: output<bool>(f, bits != 0); break;
        case Vote::All: output<bool>(f, bits == active); break;
        case Vote::IsFirst: output<bool>(f, int(l) == first); break;
        case Vote::Ballot: output<VoteResult>(f, VoteResult{bits, active}); break;
        case Vote::Active: output<VoteResult>(f, VoteResult{active, active}); break;
        case Vote::Sync: output<bool>(f, true); break;
      }
    }
  }
}

template <class Op, unsigned Seg, class T> inline T reduce(const T& x, const char* what) {
  check_type<T>();
  return exchange<T>(&resolve_reduce<Op, T, Seg>, &x, nullptr, 0, 0, what);
}
template <class Op, bool Inclusive, unsigned Seg, class T>
inline T prefix(const T& x, const char* what) {
  check_type<T>();
  return exchange<T>(&resolve_prefix<Op, T, Inclusive, Seg>, &x, nullptr, 0, 0, what);
}
template <Move M, unsigned Seg, class T>
inline T move(const T& x, const T* fill, unsigned arg, unsigned arg2, const char* what) {
  check_type<T>();
  return exchange<T>(&resolve_move<T, M, Seg>, &x, fill, arg, arg2, what);
}
template <Vote V, unsigned Seg, class R> inline R vote(bool x, const char* what) {
  return exchange<R>(&resolve_vote<V, Seg>, &x, nullptr, 0, 0, what);
}
template <class T> constexpr void check_integral() {
  static_assert(std::is_integral<element_t<T>>::value,
                "simd_and/simd_or/simd_xor take integer scalars or vectors");
}

// A deduction-free parameter: `filling_data` converts to the type of `data`, as in Metal.
template <class T> struct same { using type = T; };
template <class T> using same_t = typename same<T>::type;

}  // namespace tg

// Runs `body` for every thread of a grid of `threads` threads in groups of `group`, like
// dispatchThreads: edge groups are partial and threads outside the grid do not run.  Groups are
// spread over `workers` OS threads (0: one per core).
inline RunReport run_threadgroups(const unsigned threads[3], const unsigned group[3],
                                  ThreadBody body, void* ctx, unsigned workers) {
  RunReport total;
  unsigned long group_threads = 1, ngroups_total = 1;
  unsigned ngroups[3];
  for (int d = 0; d < 3; ++d) {
    if (group[d] == 0) tg::fail("thread" "group size has a zero dimension", "");
    group_threads *= group[d];
  }
  if (group_threads > kMaxThreadsPerThreadgroup)
    tg::fail("thread" "group larger than Metal's 1024 threads", "");
  if (tg::t_worker != nullptr) tg::fail("run_threadgroups called from inside a kernel", "");
  for (int d = 0; d < 3; ++d) {
    if (threads[d] == 0) return total;
    ngroups[d] = (threads[d] + group[d] - 1) / group[d];
    ngroups_total *= ngroups[d];
  }
  unsigned nw = workers ? workers : std::thread::hardware_concurrency();
  if (nw == 0) nw = 1;
  if (nw > ngroups_total) nw = unsigned(ngroups_total);
  std::atomic<unsigned long> next{0};
  std::vector<RunReport> reports(nw);
  auto work = [&](unsigned wi) {
    tg::Worker w(body, ctx, unsigned(group_threads));
    tg::t_worker = &w;
    for (unsigned long g; (g = next.fetch_add(1, std::memory_order_relaxed)) < ngroups_total;)
      tg::run_group(w, g, threads, group, ngroups);
    tg::t_worker = nullptr;
    reports[wi] = w.report;
  };
  std::vector<std::thread> pool;
  for (unsigned wi = 1; wi < nw; ++wi) pool.emplace_back(work, wi);
  work(0);
  for (std::thread& t : pool) t.join();
  for (const RunReport& r : reports) {
    total.groups += r.groups;
    total.threads += r.threads;
    total.barriers += r.barriers;
    total.simd_collectives += r.simd_collectives;
    total.barriers_after_return += r.barriers_after_return;
    total.divergent_simd += r.divergent_simd;
  }
  return total;
}

// Called where a `threadgroup` local is declared (see threadgroup.py): the first thread of each
// group to get there fills it with 0xff bytes (NaN, -1), so reading it before writing shows up.
template <class T> inline void threadgroup_local_enter(T& object, unsigned long& seen_epoch) {
  const unsigned long epoch = tg::t_group_epoch;
  if (seen_epoch == epoch) return;
  seen_epoch = epoch;
  if constexpr (std::is_trivially_copyable<T>::value)
    __builtin_memset(static_cast<void*>(&object), 0xff, sizeof(T));
}

}  // namespace mshim

namespace metal {

// Metal's ballot result.  Bits of inactive lanes are 0; all() looks at the active lanes only.
class simd_vote {
 public:
  using vote_t = std::uint64_t;
  explicit constexpr simd_vote(vote_t v = 0) : v_(v), active_((vote_t(1) << 32) - 1) {}
  constexpr simd_vote(vote_t v, vote_t active) : v_(v), active_(active) {}
  explicit constexpr operator vote_t() const { return v_; }
  constexpr bool any() const { return v_ != 0; }
  constexpr bool all() const { return (v_ & active_) == active_; }

 private:
  vote_t v_, active_;
};

template <class F> inline void threadgroup_barrier(F) { ::mshim::tg::barrier(); }
template <class F> inline void simdgroup_barrier(F) {
  ::mshim::tg::vote<::mshim::tg::Vote::Sync, 32, bool>(false, "simdgroup_barrier");
}

inline bool simd_any(bool x) { return ::mshim::tg::vote<::mshim::tg::Vote::Any, 32, bool>(x, "simd_any"); }
inline bool simd_all(bool x) { return ::mshim::tg::vote<::mshim::tg::Vote::All, 32, bool>(x, "simd_all"); }
inline bool quad_any(bool x) { return ::mshim::tg::vote<::mshim::tg::Vote::Any, 4, bool>(x, "quad_any"); }
inline bool quad_all(bool x) { return ::mshim::tg::vote<::mshim::tg::Vote::All, 4, bool>(x, "quad_all"); }
inline bool simd_is_first() {
  return ::mshim::tg::vote<::mshim::tg::Vote::IsFirst, 32, bool>(false, "simd_is_first");
}
inline bool quad_is_first() {
  return ::mshim::tg::vote<::mshim::tg::Vote::IsFirst, 4, bool>(false, "quad_is_first");
}
inline simd_vote simd_ballot(bool x) {
  auto r = ::mshim::tg::vote<::mshim::tg::Vote::Ballot, 32, ::mshim::tg::VoteResult>(x, "simd_ballot");
  return simd_vote(r.bits, r.active);
}
inline simd_vote simd_active_threads_mask() {
  auto r = ::mshim::tg::vote<::mshim::tg::Vote::Active, 32, ::mshim::tg::VoteResult>(
      false, "simd_active_threads_mask");
  return simd_vote(r.bits, r.active);
}

// Every data collective exists twice: non-template overloads for the built-in scalar types (as
// Metal declares them, so they win over c10::metal's templates of the same name exactly as on
// the GPU), and a generic template for half, bfloat and vectors.  The generic one has an empty
// trailing parameter pack, which makes it less specialised than any other template of the name.
#define MSHIM_TG_GENERIC template <class T, class... Mshim_none, \
    std::enable_if_t<sizeof...(Mshim_none) == 0, int> = 0>
#define MSHIM_TG_BUILTIN_SCALARS(X) \
  X(float) X(int) X(unsigned int) X(short) X(unsigned short) X(char) X(signed char) X(unsigned char)
#define MSHIM_TG_BUILTIN_INTEGERS(X) \
  X(int) X(unsigned int) X(short) X(unsigned short) X(char) X(signed char) X(unsigned char)

#define MSHIM_TG_REDUCE(NAME, OP, SEG, T) \
  inline T NAME(T x) { return ::mshim::tg::reduce<::mshim::tg::OP, SEG>(x, #NAME); }
#define MSHIM_TG_PREFIX(NAME, OP, INCL, SEG, T) \
  inline T NAME(T x) { return ::mshim::tg::prefix<::mshim::tg::OP, INCL, SEG>(x, #NAME); }
#define MSHIM_TG_MOVE1(NAME, MOVE, SEG, T)                                               \
  inline T NAME(T x, unsigned short d) {                                                \
    return ::mshim::tg::move<::mshim::tg::Move::MOVE, SEG>(x, (const T*)nullptr, d, 0, #NAME); \
  }
#define MSHIM_TG_MOVE0(NAME, MOVE, SEG, T)                                               \
  inline T NAME(T x) {                                                                  \
    return ::mshim::tg::move<::mshim::tg::Move::MOVE, SEG>(x, (const T*)nullptr, 0, 0, #NAME); \
  }
#define MSHIM_TG_FILL(NAME, MOVE, SEG, T)                                                     \
  inline T NAME(T x, ::mshim::tg::same_t<T> fill, unsigned short d) {                        \
    return ::mshim::tg::move<::mshim::tg::Move::MOVE, SEG>(x, &fill, d, SEG, #NAME);          \
  }                                                                                          \
  inline T NAME(T x, ::mshim::tg::same_t<T> fill, unsigned short d, unsigned short modulo) { \
    return ::mshim::tg::move<::mshim::tg::Move::MOVE, SEG>(x, &fill, d, modulo, #NAME);       \
  }

#define MSHIM_TG_DATA_OPS(T)                                                   \
  MSHIM_TG_REDUCE(simd_sum, OpSum, 32, T)                                      \
  MSHIM_TG_REDUCE(simd_product, OpProduct, 32, T)                              \
  MSHIM_TG_REDUCE(simd_max, OpMax, 32, T)                                      \
  MSHIM_TG_REDUCE(simd_min, OpMin, 32, T)                                      \
  MSHIM_TG_REDUCE(quad_sum, OpSum, 4, T)                                       \
  MSHIM_TG_REDUCE(quad_product, OpProduct, 4, T)                               \
  MSHIM_TG_REDUCE(quad_max, OpMax, 4, T)                                       \
  MSHIM_TG_REDUCE(quad_min, OpMin, 4, T)                                       \
  MSHIM_TG_PREFIX(simd_prefix_inclusive_sum, OpSum, true, 32, T)               \
  MSHIM_TG_PREFIX(simd_prefix_exclusive_sum, OpSum, false, 32, T)              \
  MSHIM_TG_PREFIX(simd_prefix_inclusive_product, OpProduct, true, 32, T)       \
  MSHIM_TG_PREFIX(simd_prefix_exclusive_product, OpProduct, false, 32, T)      \
  MSHIM_TG_PREFIX(quad_prefix_inclusive_sum, OpSum, true, 4, T)                \
  MSHIM_TG_PREFIX(quad_prefix_exclusive_sum, OpSum, false, 4, T)               \
  MSHIM_TG_PREFIX(quad_prefix_inclusive_product, OpProduct, true, 4, T)        \
  MSHIM_TG_PREFIX(quad_prefix_exclusive_product, OpProduct, false, 4, T)       \
  MSHIM_TG_MOVE1(simd_broadcast, Index, 32, T)                                 \
  MSHIM_TG_MOVE1(simd_shuffle, Index, 32, T)                                   \
  MSHIM_TG_MOVE1(simd_shuffle_up, Up, 32, T)                                   \
  MSHIM_TG_MOVE1(simd_shuffle_down, Down, 32, T)                               \
  MSHIM_TG_MOVE1(simd_shuffle_xor, Xor, 32, T)                                 \
  MSHIM_TG_MOVE1(simd_shuffle_rotate_up, RotateUp, 32, T)                      \
  MSHIM_TG_MOVE1(simd_shuffle_rotate_down, RotateDown, 32, T)                  \
  MSHIM_TG_MOVE0(simd_broadcast_first, First, 32, T)                           \
  MSHIM_TG_FILL(simd_shuffle_and_fill_up, FillUp, 32, T)                       \
  MSHIM_TG_FILL(simd_shuffle_and_fill_down, FillDown, 32, T)                   \
  MSHIM_TG_MOVE1(quad_broadcast, Index, 4, T)                                  \
  MSHIM_TG_MOVE1(quad_shuffle, Index, 4, T)                                    \
  MSHIM_TG_MOVE1(quad_shuffle_up, Up, 4, T)                                    \
  MSHIM_TG_MOVE1(quad_shuffle_down, Down, 4, T)                                \
  MSHIM_TG_MOVE1(quad_shuffle_xor, Xor, 4, T)                                  \
  MSHIM_TG_MOVE1(quad_shuffle_rotate_up, RotateUp, 4, T)                       \
  MSHIM_TG_MOVE1(quad_shuffle_rotate_down, RotateDown, 4, T)                   \
  MSHIM_TG_MOVE0(quad_broadcast_first, First, 4, T)                            \
  MSHIM_TG_FILL(quad_shuffle_and_fill_up, FillUp, 4, T)                        \
  MSHIM_TG_FILL(quad_shuffle_and_fill_down, FillDown, 4, T)
#define MSHIM_TG_BIT_OPS(T)                   \
  MSHIM_TG_REDUCE(simd_and, OpAnd, 32, T)     \
  MSHIM_TG_REDUCE(simd_or, OpOr, 32, T)       \
  MSHIM_TG_REDUCE(simd_xor, OpXor, 32, T)     \
  MSHIM_TG_REDUCE(quad_and, OpAnd, 4, T)      \
  MSHIM_TG_REDUCE(quad_or, OpOr, 4, T)        \
  MSHIM_TG_REDUCE(quad_xor, OpXor, 4, T)

MSHIM_TG_BUILTIN_SCALARS(MSHIM_TG_DATA_OPS)
MSHIM_TG_BUILTIN_INTEGERS(MSHIM_TG_BIT_OPS)

// The generic forms (T deduced: half, bfloat, vectors, and anything else the shim defines).
#define MSHIM_TG_G(...) MSHIM_TG_GENERIC __VA_ARGS__
#define MSHIM_TG_GREDUCE(NAME, OP, SEG) \
  MSHIM_TG_G(inline T NAME(T x) { return ::mshim::tg::reduce<::mshim::tg::OP, SEG>(x, #NAME); })
#define MSHIM_TG_GPREFIX(NAME, OP, INCL, SEG) \
  MSHIM_TG_G(inline T NAME(T x) {              \
    return ::mshim::tg::prefix<::mshim::tg::OP, INCL, SEG>(x, #NAME); })
#define MSHIM_TG_GMOVE1(NAME, MOVE, SEG)                                                \
  MSHIM_TG_G(inline T NAME(T x, unsigned short d) {                                      \
    return ::mshim::tg::move<::mshim::tg::Move::MOVE, SEG>(x, (const T*)nullptr, d, 0, #NAME); })
#define MSHIM_TG_GMOVE0(NAME, MOVE, SEG)                                                \
  MSHIM_TG_G(inline T NAME(T x) {                                                        \
    return ::mshim::tg::move<::mshim::tg::Move::MOVE, SEG>(x, (const T*)nullptr, 0, 0, #NAME); })
#define MSHIM_TG_GFILL(NAME, MOVE, SEG)                                                      \
  MSHIM_TG_G(inline T NAME(T x, ::mshim::tg::same_t<T> fill, unsigned short d) {              \
    return ::mshim::tg::move<::mshim::tg::Move::MOVE, SEG>(x, &fill, d, SEG, #NAME); })      \
  MSHIM_TG_G(inline T NAME(T x, ::mshim::tg::same_t<T> fill, unsigned short d,                \
                           unsigned short modulo) {                                          \
    return ::mshim::tg::move<::mshim::tg::Move::MOVE, SEG>(x, &fill, d, modulo, #NAME); })
#define MSHIM_TG_GBIT(NAME, OP, SEG)                                      \
  MSHIM_TG_G(inline T NAME(T x) {                                         \
    ::mshim::tg::check_integral<T>();                                     \
    return ::mshim::tg::reduce<::mshim::tg::OP, SEG>(x, #NAME); })

MSHIM_TG_GREDUCE(simd_sum, OpSum, 32)
MSHIM_TG_GREDUCE(simd_product, OpProduct, 32)
MSHIM_TG_GREDUCE(simd_max, OpMax, 32)
MSHIM_TG_GREDUCE(simd_min, OpMin, 32)
MSHIM_TG_GREDUCE(quad_sum, OpSum, 4)
MSHIM_TG_GREDUCE(quad_product, OpProduct, 4)
MSHIM_TG_GREDUCE(quad_max, OpMax, 4)
MSHIM_TG_GREDUCE(quad_min, OpMin, 4)
MSHIM_TG_GBIT(simd_and, OpAnd, 32)
MSHIM_TG_GBIT(simd_or, OpOr, 32)
MSHIM_TG_GBIT(simd_xor, OpXor, 32)
MSHIM_TG_GBIT(quad_and, OpAnd, 4)
MSHIM_TG_GBIT(quad_or, OpOr, 4)
MSHIM_TG_GBIT(quad_xor, OpXor, 4)
MSHIM_TG_GPREFIX(simd_prefix_inclusive_sum, OpSum, true, 32)
MSHIM_TG_GPREFIX(simd_prefix_exclusive_sum, OpSum, false, 32)
MSHIM_TG_GPREFIX(simd_prefix_inclusive_product, OpProduct, true, 32)
MSHIM_TG_GPREFIX(simd_prefix_exclusive_product, OpProduct, false, 32)
MSHIM_TG_GPREFIX(quad_prefix_inclusive_sum, OpSum, true, 4)
MSHIM_TG_GPREFIX(quad_prefix_exclusive_sum, OpSum, false, 4)
MSHIM_TG_GPREFIX(quad_prefix_inclusive_product, OpProduct, true, 4)
MSHIM_TG_GPREFIX(quad_prefix_exclusive_product, OpProduct, false, 4)
MSHIM_TG_GMOVE1(simd_broadcast, Index, 32)
MSHIM_TG_GMOVE1(simd_shuffle, Index, 32)
MSHIM_TG_GMOVE1(simd_shuffle_up, Up, 32)
MSHIM_TG_GMOVE1(simd_shuffle_down, Down, 32)
MSHIM_TG_GMOVE1(simd_shuffle_xor, Xor, 32)
MSHIM_TG_GMOVE1(simd_shuffle_rotate_up, RotateUp, 32)
MSHIM_TG_GMOVE1(simd_shuffle_rotate_down, RotateDown, 32)
MSHIM_TG_GMOVE0(simd_broadcast_first, First, 32)
MSHIM_TG_GFILL(simd_shuffle_and_fill_up, FillUp, 32)
MSHIM_TG_GFILL(simd_shuffle_and_fill_down, FillDown, 32)
MSHIM_TG_GMOVE1(quad_broadcast, Index, 4)
MSHIM_TG_GMOVE1(quad_shuffle, Index, 4)
MSHIM_TG_GMOVE1(quad_shuffle_up, Up, 4)
MSHIM_TG_GMOVE1(quad_shuffle_down, Down, 4)
MSHIM_TG_GMOVE1(quad_shuffle_xor, Xor, 4)
MSHIM_TG_GMOVE1(quad_shuffle_rotate_up, RotateUp, 4)
MSHIM_TG_GMOVE1(quad_shuffle_rotate_down, RotateDown, 4)
MSHIM_TG_GMOVE0(quad_broadcast_first, First, 4)
MSHIM_TG_GFILL(quad_shuffle_and_fill_up, FillUp, 4)
MSHIM_TG_GFILL(quad_shuffle_and_fill_down, FillDown, 4)

#undef MSHIM_TG_G
#undef MSHIM_TG_GREDUCE
#undef MSHIM_TG_GPREFIX
#undef MSHIM_TG_GMOVE1
#undef MSHIM_TG_GMOVE0
#undef MSHIM_TG_GFILL
#undef MSHIM_TG_GBIT
#undef MSHIM_TG_DATA_OPS
#undef MSHIM_TG_BIT_OPS
#undef MSHIM_TG_REDUCE
#undef MSHIM_TG_PREFIX
#undef MSHIM_TG_MOVE1
#undef MSHIM_TG_MOVE0
#undef MSHIM_TG_FILL
#undef MSHIM_TG_BUILTIN_SCALARS
#undef MSHIM_TG_BUILTIN_INTEGERS
#undef MSHIM_TG_GENERIC

}  // namespace metal
