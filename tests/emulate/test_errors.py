"""What users see when things go wrong: a crashing kernel, bad arguments, compile diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from metalport.emulate import Compiler, ShaderLibrary, compile_file, compile_shader
from metalport.emulate.diagnostics import failures
from metalport.errors import CompileError, EmulateError, KernelArgumentError, KernelCrash, UnknownKernelError

PLAIN = """\
#include <metal_stdlib>
using namespace metal;

kernel void quotient(device int* out [[buffer(0)]], constant int* a [[buffer(1)]],
                     constant int& d [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = a[i] / d;
}

kernel void poke(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i + 0x7ffffff0u] = 1;
}

kernel void spin(device atomic_uint* counter [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  while (atomic_load_explicit(counter, memory_order_relaxed) != 7u) {
    atomic_fetch_add_explicit(counter, 2u, memory_order_relaxed);
  }
}

[[host_name("scale_inplace")]] kernel void scale(constant float& factor [[buffer(1)]], device float* data [[buffer(0)]],
                  uint2 pos [[thread_position_in_grid]], uint2 grid [[threads_per_grid]]) {
  data[pos.y * grid.x + pos.x] *= factor;
}
"""


@pytest.fixture(scope="module")
def plain(gxx: Compiler, shader_cache: Path) -> ShaderLibrary:
    """Two plain (non-template) kernels."""
    with compile_shader(PLAIN, filename="plain.metal", compiler=gxx, cache_dir=shader_cache) as lib:
        yield lib


def test_division_by_zero_is_reported_and_the_library_keeps_working(plain: ShaderLibrary) -> None:
    a = torch.arange(-8, 8, dtype=torch.int32)
    out = torch.zeros_like(a)
    with pytest.raises(KernelCrash) as info:
        plain.quotient(out, a, 0, threads=a.numel())
    message = str(info.value)
    assert "\n" not in message and "kernel quotient" in message and "SIGFPE" in message
    assert info.value.exit_code == 1
    plain.quotient(out, a, 3, threads=a.numel())
    assert torch.equal(out, torch.div(a, 3, rounding_mode="trunc"))


def test_out_of_range_write_is_a_sigsegv_report(plain: ShaderLibrary) -> None:
    with pytest.raises(KernelCrash, match=r"^kernel poke crashed the worker with SIGSEGV"):
        plain.poke(torch.zeros(4, dtype=torch.int32), threads=1)


def test_endless_kernel_is_stopped_after_the_time_limit(plain: ShaderLibrary) -> None:
    plain.timeout_s = 1
    try:
        with pytest.raises(KernelCrash, match=r"^kernel spin did not finish within 1 s"):
            plain.spin(torch.zeros(1, dtype=torch.int32), threads=1)
    finally:
        plain.timeout_s = 300
    out = torch.zeros(2, dtype=torch.int32)
    plain.quotient(out, torch.tensor([9, -9], dtype=torch.int32), 2, threads=2)
    assert out.tolist() == [4, -4]


def test_binding_follows_buffer_attributes_not_parameter_order(plain: ShaderLibrary) -> None:
    info = plain.kernels["scale_inplace"]  # a plain kernel's [[host_name]] renames it
    assert [a.name for a in info.buffers] == ["data", "factor"]
    data = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    plain.scale_inplace(data, 2.0, threads=(4, 3))
    assert info.template == "scale" and plain.function_names() == ["poke", "quotient", "scale_inplace", "spin"]
    assert torch.equal(data, torch.arange(12, dtype=torch.float32).reshape(3, 4) * 2)


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda lib, t: lib.quotinet(t, t, 1, threads=4), UnknownKernelError,
     "no kernel named 'quotinet' in the shader library; did you mean 'quotient'?"),
    (lambda lib, t: lib.quotient(t, t, threads=4), KernelArgumentError,
     "quotient takes 3 arguments (out [[buffer(0)]], a [[buffer(1)]], d [[buffer(2)]]), got 2"),
    (lambda lib, t: lib.quotient(t.float(), t, 1, threads=4), KernelArgumentError,
     "quotient argument out [[buffer(0)]]: tensor dtype float32 does not match the buffer's element type "
     "'int' (expects int32)"),
    (lambda lib, t: lib.quotient(t, t, 1, threads=5), KernelArgumentError,
     "quotient argument out [[buffer(0)]]: tensor has 4 elements but the kernel indexes it by thread position "
     "over 5 threads"),
    (lambda lib, t: lib.scale_inplace(t.float(), 2.0, threads=(5, 1)), KernelArgumentError,
     "scale_inplace: grid of 5 threads (5, 1, 1) is larger than the data (largest tensor argument has 4 elements)"),
    (lambda lib, t: lib.quotient(t, t[:3], 1, threads=4), KernelArgumentError,
     "quotient argument a [[buffer(1)]]: tensor has 3 elements but the kernel indexes it by thread position "
     "over 4 threads"),
    (lambda lib, t: lib.quotient(t, t, 1.5, threads=4), KernelArgumentError,
     "quotient argument d [[buffer(2)]]: 1.5 is a float but the parameter is 'int'"),
    (lambda lib, t: lib.quotient(t, t, 2**40, threads=4), KernelArgumentError,
     "quotient argument d [[buffer(2)]]: 1099511627776 does not fit 'int'"),
    (lambda lib, t: lib.quotient(t, t, [1, 2], threads=4), KernelArgumentError,
     "quotient argument d [[buffer(2)]]: 'int' needs 1 value, got 2"),
    (lambda lib, t: lib.quotient(t, t, "x", threads=4), KernelArgumentError,
     "expected a tensor, a number or a list of numbers, got str"),
    (lambda lib, t: lib.quotient(t, t, 1, threads=4, group_size=(64, 32)), KernelArgumentError,
     "quotient: group_size=(64, 32) must be positive and at most 1024 threads in all"),
    (lambda lib, t: lib.quotient(t, t, 1, threads=(1, 2, 3, 4)), KernelArgumentError,
     "quotient: threads=(1, 2, 3, 4) must be an int or 1-3 non-negative ints"),
])
def test_bad_arguments_are_one_line_errors(plain: ShaderLibrary, call, error, text: str) -> None:
    with pytest.raises(error) as info:
        call(plain, torch.zeros(4, dtype=torch.int32))
    assert text in str(info.value)
    assert "\n" not in str(info.value)


BROKEN = """\
#include <c10/metal/indexing.h>
using namespace metal;
using namespace c10::metal;

struct twice_functor {
  template <typename T>
  inline T operator()(const T x) {
    return x * 2 + undeclared_thing;
  }
};

REGISTER_UNARY_OP(twice, float, float);
"""


def test_diagnostics_point_at_the_metal_line(gxx: Compiler, shader_cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "twice.metal"
    source.write_text(BROKEN)
    with pytest.raises(CompileError) as info:
        compile_file(source, compiler=gxx, cache_dir=shader_cache)
    err = info.value
    assert err.exit_code == 1 and "\n" not in str(err)
    first = next(d for d in err.diagnostics if d.severity == "error")
    assert (first.file, first.line) == (str(source), 8)
    assert "undeclared_thing" in first.message
    assert str(err).startswith(f"{source}:8:")
    found = failures(err)
    assert found[0].kind == "compile-error" and found[0].file == str(source) and found[0].line == 8


def test_error_inside_a_header_is_placed_at_the_registering_line(gxx: Compiler, shader_cache: Path) -> None:
    source = """\
#include <c10/metal/indexing.h>
using namespace metal;
using namespace c10::metal;

struct narrow_functor {
  inline float operator()(const float x) { return x; }
  inline float operator()(const half x) { return x; }
};

REGISTER_UNARY_OP(narrow, float, float);
REGISTER_UNARY_OP(narrow, int, float);
"""
    with pytest.raises(CompileError) as info:
        compile_shader(source, filename="Narrow.metal", compiler=gxx, cache_dir=shader_cache)
    text = str(info.value)
    assert text.startswith("Narrow.metal:11:") and "is ambiguous [at " in text and "c10/metal/" in text
    assert any(d.file.endswith("c10/metal/utils.h") and d.severity == "error" for d in info.value.diagnostics)


def test_in_memory_source_maps_to_its_filename(gxx: Compiler, shader_cache: Path) -> None:
    source = PLAIN.replace("out[i] = a[i] / d;", "out[i] = a[i] / d\n  return;")
    with pytest.raises(CompileError) as info:
        compile_shader(source, filename="kernels/Plain.metal", compiler=gxx, cache_dir=shader_cache)
    first = next(d for d in info.value.diagnostics if d.severity == "error")
    assert first.file == "kernels/Plain.metal" and first.line in (6, 7)


def test_missing_header_is_a_diagnostic_at_the_include(gxx: Compiler, shader_cache: Path) -> None:
    with pytest.raises(CompileError) as info:
        compile_shader('#include <c10/metal/nonexistent.h>\n', filename="inc.metal", compiler=gxx,
                       cache_dir=shader_cache)
    first = info.value.diagnostics[0]
    assert (first.file, first.line, first.severity) == ("inc.metal", 1, "error")


def test_kernel_with_unbindable_parameter_is_skipped_with_a_reason(gxx: Compiler, shader_cache: Path) -> None:
    source = """\
#include <metal_stdlib>
using namespace metal;
kernel void staged(device float* out [[buffer(0)]], threadgroup float* scratch [[threadgroup(0)]],
                   uint i [[thread_position_in_grid]]) {
  out[i] = 1.0f;
}
kernel void ones(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = 1.0f;
}
"""
    with compile_shader(source, compiler=gxx, cache_dir=shader_cache) as lib:
        assert lib.function_names() == ["ones"]
        assert lib.problems == ("kernel 'staged': parameter scratch [[threadgroup]] cannot be bound by the "
                                "emulator; kernel skipped",)
        out = torch.zeros(3)
        lib.ones(out, threads=3)
        assert out.tolist() == [1.0, 1.0, 1.0]


def test_missing_file_and_bad_version(tmp_path: Path) -> None:
    with pytest.raises(EmulateError, match="no such shader file"):
        compile_file(tmp_path / "absent.metal")
    (tmp_path / "k.metal").write_text("")
    with pytest.raises(EmulateError, match="metal_version=200 is not supported; use 310 or 400"):
        compile_file(tmp_path / "k.metal", metal_version=200)
