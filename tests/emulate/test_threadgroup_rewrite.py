"""rewrite_threadgroup_locals and uses_threadgroup on tricky C++ text."""

from __future__ import annotations

import re

import pytest

from metalport.emulate.threadgroup import SHIM_DIR, rewrite_threadgroup_locals, uses_threadgroup
from metalport.errors import EmulateError


def shared_names(text: str) -> list[str]:
    """Names the rewrite made per-threadgroup (each gets a threadgroup_local_enter call)."""
    return re.findall(r"threadgroup_local_enter\((\w+),", text)


def test_kernel_locals_become_per_group_statics_with_types_and_extents_kept() -> None:
    src = """template <typename T, uint TG_X>
kernel void k(device T* out [[buffer(0)]], uint2 tid [[thread_position_in_threadgroup]]) {
  threadgroup T shmem[32][TG_X];
  threadgroup metal::array<float, 4> arr;
  threadgroup c10::metal::pair<T, ushort> best[TG_X / 32 + (TG_X % 32 != 0)];
  threadgroup float a[4], b, c[2][2];
}
"""
    out = rewrite_threadgroup_locals(src)
    assert "static thread_local T shmem[32][TG_X];" in out
    assert "static thread_local metal::array<float, 4> arr;" in out
    assert "static thread_local c10::metal::pair<T, ushort> best[TG_X / 32 + (TG_X % 32 != 0)];" in out
    assert "static thread_local float a[4], b, c[2][2];" in out
    assert shared_names(out) == ["shmem", "arr", "best", "a", "b", "c"]
    assert out.count("\n") == src.count("\n")
    assert not re.search(r"\bthreadgroup\b", out)


def test_pointers_references_parameters_casts_and_barriers_are_left_alone() -> None:
    src = """kernel void k(threadgroup float* scratch [[threadgroup(0)]],
              threadgroup float& one, uint tid [[thread_position_in_threadgroup]]) {
  threadgroup float* p = scratch;
  threadgroup float (&r)[4] = *reinterpret_cast<threadgroup float(*)[4]>(scratch);
  auto q = static_cast<threadgroup float*>(p);
  threadgroup auto& alias = one;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  foo((threadgroup float*)scratch, sizeof(threadgroup float));
}
"""
    assert rewrite_threadgroup_locals(src) == src


def test_nested_scopes_lambdas_member_functions_and_several_kernels() -> None:
    src = """struct Reducer {
  float run(uint tid) const noexcept {
    threadgroup float in_method[8];
    return in_method[tid];
  }
};
auto helper = [](uint tid) { threadgroup int in_lambda[4]; return in_lambda[tid]; };
kernel void a(uint tid [[thread_index_in_threadgroup]]) {
  if (tid < 4) {
    for (uint i = 0; i < 2; ++i) { threadgroup uint deep; deep = i; }
  }
  threadgroup float same[16];
}
kernel void b(uint tid [[thread_index_in_threadgroup]]) [[max_total_threads_per_threadgroup(64)]] {
  threadgroup float same[16];
  dispatch([&](uint j) { threadgroup float in_arg_lambda[2]; });
}
"""
    out = rewrite_threadgroup_locals(src)
    assert shared_names(out) == ["in_method", "in_lambda", "deep", "same", "same", "in_arg_lambda"]
    seen = re.findall(r"unsigned long (mshim_tg_seen_\w+)", out)
    assert len(seen) == len(set(seen)) == 6


def test_namespace_and_class_scope_text_is_not_rewritten() -> None:
    src = """namespace c10 { namespace metal {
constant float table[] = {1.0f, 2.0f};
struct S { float x[4]; };
enum class E : uint { A = 1 };
template <typename T> struct simd_type { using t = T; };
}}
"""
    assert rewrite_threadgroup_locals(src) == src


def test_comments_strings_and_preprocessed_line_markers() -> None:
    src = """# 1 "kernels/Reduce.metal"
// threadgroup float not_code[4];
/* threadgroup float also_not[4]; */
constant char* s = "threadgroup float in_string[4];";
# 40 "kernels/Reduce.metal"
kernel void k(uint tid [[thread_position_in_threadgroup]]) {
#pragma unroll
  threadgroup float real[4]; // threadgroup int tail[2];
}
"""
    out = rewrite_threadgroup_locals(src)
    assert shared_names(out) == ["real"]
    assert out.splitlines()[:4] == src.splitlines()[:4]


def test_initializer_is_a_metal_error_at_the_source_line() -> None:
    src = """# 1 "/tmp/k.metal"
kernel void k(uint tid [[thread_position_in_threadgroup]]) {

  threadgroup float total = 0;
}
"""
    with pytest.raises(EmulateError) as err:
        rewrite_threadgroup_locals(src)
    assert str(err.value).startswith(
        "/tmp/k.metal:3: a threadgroup variable cannot have an initializer")


def test_rewrite_is_idempotent() -> None:
    src = "kernel void k() { threadgroup float x[2]; }\n"
    once = rewrite_threadgroup_locals(src)
    assert rewrite_threadgroup_locals(once) == once


def test_uses_threadgroup_from_attributes_or_text_outside_the_shim() -> None:
    assert uses_threadgroup(["buffer", "thread_index_in_simdgroup"])
    assert not uses_threadgroup(["buffer", "thread_position_in_grid"], "out[i] = in[i] * 2;")
    assert uses_threadgroup(["thread_position_in_grid"], "float h(float x) { return simd_sum(x); }")
    assert uses_threadgroup([], "void f() { threadgroup_barrier(mem_flags::mem_none); }")
    assert uses_threadgroup([], "void f(threadgroup float* p) {}")
    shim_part = (f'# 1 "{SHIM_DIR / "metal_threadgroup.h"}"\n'
                 "inline float simd_sum(float x) { return x; }\n"
                 '# 7 "user.metal"\n')
    assert not uses_threadgroup([], shim_part + "out[i] = in[i];\n")
    assert uses_threadgroup([], shim_part + "out[i] = simd_max(in[i]);\n")


def test_each_shared_object_is_checked_against_metal_32k_limit() -> None:
    out = rewrite_threadgroup_locals("kernel void k() { threadgroup float a[8], b; }\n")
    assert out.count("static_assert(sizeof(a) <= 32768,") == 1
    assert out.count("static_assert(sizeof(b) <= 32768,") == 1
    assert not re.search(r"\bthreadgroup\b", out)


def test_nested_subscripts_templates_and_attributes_keep_the_scopes_right() -> None:
    src = """kernel void k(device int* idx [[buffer(0)]], uint t [[thread_index_in_threadgroup]])
    [[max_total_threads_per_threadgroup(256)]] {
  int v = idx[idx[t]];
  threadgroup metal::array<metal::array<int, 2>, 4> nested;
  [[maybe_unused]] threadgroup atomic_uint counter;
  threadgroup float tail[4] [[maybe_unused]];
}
"""
    out = rewrite_threadgroup_locals(src)
    assert shared_names(out) == ["nested", "counter", "tail"]
    assert "static thread_local metal::array<metal::array<int, 2>, 4> nested;" in out
    assert "static thread_local float tail[4] [[maybe_unused]];" in out
