"""The shim's Metal constructs, checked from inside a kernel: bfloat rounding, swizzle lvalues,
functional-cast vector constructors, as_type, integer intrinsics, limits, atomics."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest
import torch

from metalport.emulate import Compiler, ShaderLibrary, compile_shader

PROBES = """\
#include <metal_stdlib>
#include <metal_atomic>
using namespace metal;

constexpr float kInf = numeric_limits<float2>::infinity().x;  // a component in a constant expression

kernel void floats(device float* out [[buffer(0)]], constant float* x [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  if (i != 0) return;
  bfloat b = bfloat(x[0]);                  // round to nearest even
  out[0] = float(b);
  out[1] = float(b + bfloat(x[1]));         // bfloat op bfloat rounds again
  float4 v(1.0f, float2(2.0f, 3.0f), 4);    // flattening constructor
  v.zw = v.xy;                              // swizzle lvalue
  out[2] = v.x + 10 * v.y + 100 * v.z + 1000 * v.w;
  float2 c = float2(NAN, 0.5);              // two-scalar functional cast
  out[3] = isnan(c.x) ? c.y : -1.0f;
  out[4] = dot(float3(1, 2, 3), float3(4, 5, 6));
  out[5] = select(1.0f, 2.0f, all(float2(1, 2) < float2(3, 4))) + select(0, 0.5f, false);
  out[6] = clamp(x[2], 0.0f, 1.0f) + fract(-0.25f) + sign(-3.0f);
  out[7] = kInf;
  out[8] = precise::sin(x[3]) - fast::sin(x[3]);
  out[9] = as_type<float>(as_type<uint>(x[0]));
  half h = half(x[0]);
  out[10] = float(h * h);                   // half arithmetic rounds to half
  out[11] = float(numeric_limits<bfloat>::max());
  out[12] = float(0.5h * 3h + 0.25h);       // MSL half literals
  out[13] = exp10(x[2]);
  out[14] = float(nextafter(half(x[2]), half(2.0f)));    // one half ulp, not one float ulp
  out[15] = float(nextafter(bfloat(x[2]), bfloat(0.0f)));
  out[16] = float(sizeof(packed_float3)) + length(float3(packed_float3(float3(3, 4, 0))));
}

namespace extra {
kernel void twice(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] *= 2;
}
}  // namespace extra

[[kernel]] void sevens(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] = 7;
}

kernel void ints(device int* out [[buffer(0)]], device atomic_int* counter [[buffer(1)]],
                 constant int& big [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
  if (i != 0) return;
  out[0] = clz(1u);
  out[1] = ctz(8);
  out[2] = popcount(0xF0F0u);
  out[3] = mulhi(0x40000000, 8);
  out[4] = rotate(0x80000001u, 1u);
  out[5] = big * 2;                         // wraps like the GPU (-fwrapv)
  out[6] = extract_bits(0xABCDu, 4u, 8u) - extract_bits(0xABCD, 4u, 8u);  // signed sign-extends
  out[7] = max(-3, 7) + min(2u, 9u) + abs(-5);
  int2 p = int2(3, 4);
  p.yx = p;                                 // swizzle assignment from a vector
  out[8] = p.x * 10 + p.y;
}
"""


@pytest.fixture(scope="module")
def probes(gxx: Compiler, shader_cache: Path) -> ShaderLibrary:
    """The probe kernels, compiled once."""
    with compile_shader(PROBES, filename="probes.metal", compiler=gxx, cache_dir=shader_cache) as lib:
        yield lib


def _bfloat(value: float) -> float:
    """`value` rounded to bfloat16 by torch."""
    return torch.tensor(value).to(torch.bfloat16).item()


def test_float_constructs(probes: ShaderLibrary) -> None:
    x = torch.tensor([1.00390625 + 2**-9, 0.0078125, 1.7, 0.3], dtype=torch.float32)
    out = torch.zeros(17)
    probes.floats(out, x, threads=4)
    assert out[0].item() == _bfloat(x[0].item())
    assert out[1].item() == _bfloat(_bfloat(x[0].item()) + _bfloat(x[1].item()))
    assert out[2].item() == 1 + 20 + 100 + 2000
    assert out[3].item() == 0.5
    assert out[4].item() == 32
    assert out[5].item() == 2
    assert out[6].item() == pytest.approx(1 + 0.75 - 1)
    assert math.isinf(out[7].item())
    assert out[8].item() == 0
    assert out[9].item() == x[0].item()
    h = x[0].to(torch.float16)
    assert out[10].item() == (h * h).item()
    assert out[11].item() == torch.finfo(torch.bfloat16).max
    assert out[12].item() == 1.75
    assert out[13].item() == pytest.approx(10 ** x[2].item(), rel=2e-7)
    h2 = x[2].to(torch.float16)
    assert out[14].item() == (h2.view(torch.int16) + 1).view(torch.float16).item()
    b2 = x[2].to(torch.bfloat16)
    assert out[15].item() == (b2.view(torch.int16) - 1).view(torch.bfloat16).item()
    assert out[16].item() == 12 + 5  # packed_float3 is 12 bytes, converts to float3


def test_integer_constructs_and_atomics(probes: ShaderLibrary) -> None:
    out = torch.zeros(9, dtype=torch.int32)
    counter = torch.zeros(1, dtype=torch.int32)
    probes.ints(out, counter, 2**30 + 7, threads=5000)
    assert counter.item() == 5000
    wrapped = struct.unpack("<i", struct.pack("<I", ((2**30 + 7) * 2) & 0xFFFFFFFF))[0]
    assert out.tolist() == [31, 3, 8, 2, 3, wrapped, 0xBC - (0xBC - 256), 7 + 2 + 5, 43]


def test_kernel_inside_a_namespace(probes: ShaderLibrary) -> None:
    assert probes.kernels["twice"].template == "::extra::twice"
    x = torch.arange(5, dtype=torch.float32)
    probes.twice(x, threads=5)
    assert x.tolist() == [0, 2, 4, 6, 8]
    probes.sevens(x, threads=2)  # the [[kernel]] attribute spelling
    assert x.tolist() == [7, 7, 4, 6, 8]
