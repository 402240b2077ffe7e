"""Metal semantics the shim reproduces, checked from inside kernels against what Metal documents:
exact sinpi/cospi/tanpi, fmod = x - y*trunc(x/y), float32 subnormals flushed, unsuffixed literals
are float, bfloat's conversions, and precise:: holding float candidates only."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from metalport.emulate import Compiler, ShaderLibrary, compile_shader
from metalport.errors import CompileError

RULES = """\
#include <c10/metal/special_math.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;

kernel void pi_funcs(device float* out [[buffer(0)]], constant float* x [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
  out[4 * i] = sinpi(x[i]);
  out[4 * i + 1] = cospi(x[i]);
  out[4 * i + 2] = tanpi(x[i]);
  out[4 * i + 3] = c10::metal::log_gamma(x[i]);
}

kernel void fmods(device float* out [[buffer(0)]], constant float* x [[buffer(1)]],
                  constant float* y [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = fmod(x[i], y[i]);
}

kernel void scale(device float* out [[buffer(0)]], constant float* x [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  out[i] = x[i] * 0.5f;
}

kernel void scale_half(device half* out [[buffer(0)]], constant half* x [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
  out[i] = x[i] * 0.5h;
}

kernel void literals(device float* out [[buffer(0)]], constant bfloat* b [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
  if (i != 0) return;
  out[0] = sizeof(0.5);                             // a float in Metal, not a double
  out[1] = b[0] > 0 ? b[0] : 0.5;                   // bfloat : float literal -> float
  out[2] = float(::precise::pow(2, b[1]));          // precise:: has float candidates only
  out[3] = c10::metal::log1p(b[1]);                 // bfloat -> float, not float2
  bfloat r = bfloat(0.25f);                         // explicit float -> bfloat is fine
  out[4] = float(r);
}
"""


@pytest.fixture(scope="module")
def rules(gxx: Compiler, shader_cache: Path) -> ShaderLibrary:
    """The rule kernels, compiled once."""
    with compile_shader(RULES, filename="rules.metal", compiler=gxx, cache_dir=shader_cache) as lib:
        yield lib


def _signed(values: list[float]) -> list[tuple[float, bool]]:
    """Each value with its sign bit, so -0.0 and +0.0 differ."""
    return [(v, math.copysign(1.0, v) < 0) for v in values]


def test_sinpi_cospi_tanpi_are_exact_at_integers_and_half_integers(rules: ShaderLibrary) -> None:
    x = torch.tensor([-3.0, -2.5, -1.0, 0.0, 0.5, 1.5, 2.0, 1e8, 16777215.0, 0.25])
    out = torch.full((x.numel() * 4,), 7.0)
    rules.pi_funcs(out, x, threads=x.numel())
    sin, cos, tan, lgamma = (c.tolist() for c in out.view(-1, 4).unbind(1))
    # IEEE 754 sinPi/cosPi, which Metal follows: sinpi(-n) = -0, sinpi(+n) = +0, cospi(n + 1/2) = +0.
    assert _signed(sin[:9]) == _signed([-0.0, -1.0, -0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 0.0])
    assert _signed(cos[:9]) == _signed([-1.0, 0.0, -1.0, 1.0, 0.0, 0.0, 1.0, 1.0, -1.0])
    assert sin[9] == pytest.approx(math.sqrt(0.5), rel=1e-7) and cos[9] == pytest.approx(math.sqrt(0.5), rel=1e-7)
    assert tan[0] == 0.0 and tan[9] == pytest.approx(1.0, rel=1e-7)
    assert math.isinf(tan[1]) and math.isinf(tan[4]) and math.isinf(tan[5])
    # c10's log_gamma reflects through sinpi: a pole at every non-positive integer.
    assert lgamma[0] == math.inf and lgamma[2] == math.inf
    assert lgamma[4] == pytest.approx(math.lgamma(0.5), rel=1e-6)


def test_fmod_is_x_minus_y_times_trunc_x_over_y(rules: ShaderLibrary) -> None:
    x = torch.tensor([5.5, -5.5, 1e8, 3.0, 7.0, math.inf])
    y = torch.tensor([2.0, 2.0, 0.75, 0.0, math.inf, 2.0])
    out = torch.empty_like(x)
    rules.fmods(out, x, y, threads=x.numel())
    assert out[:2].tolist() == [1.5, -1.5]
    # Metal's quotient is rounded to float: 1e8 / 0.75 -> 133333336, and 1e8 - 0.75 * 133333336 = -2
    # (C's fmod, and torch on the CPU, give 0.25).
    assert out[2].item() == -2.0 and torch.fmod(x[2], y[2]).item() == 0.25
    assert math.isnan(out[3].item()) and math.isnan(out[5].item())
    assert math.isnan(out[4].item())  # x - inf * trunc(7 / inf) = x - inf * 0


def test_float32_subnormals_are_flushed_half_subnormals_kept(rules: ShaderLibrary) -> None:
    tiny = torch.finfo(torch.float32).tiny
    x = torch.tensor([tiny / 4, -tiny / 4, 2 * tiny, tiny, 1.0])
    out = torch.full_like(x, 7.0)
    rules.scale(out, x, threads=x.numel())
    assert out[:2].tolist() == [0.0, 0.0]        # subnormal input reads as zero
    assert out[2].item() == tiny                  # a normal result stays
    assert out[3].item() == 0.0                   # tiny * 0.5 is subnormal: written as zero
    assert (x * 0.5)[3].item() != 0.0             # (the CPU keeps it)
    h = torch.tensor([2.0**-20, 2.0**-14], dtype=torch.float16)
    hout = torch.empty_like(h)
    rules.scale_half(hout, h, threads=2)
    assert hout.tolist() == [2.0**-21, 2.0**-15]  # half subnormals survive


def test_literal_and_bfloat_conversion_rules(rules: ShaderLibrary) -> None:
    b = torch.tensor([-1.0, 3.0], dtype=torch.bfloat16)
    out = torch.zeros(5)
    rules.literals(out, b, threads=1)
    assert out.tolist() == [4.0, 0.5, 8.0, pytest.approx(math.log1p(3.0), rel=1e-6), 0.25]


def test_implicit_float_to_bfloat_is_a_compile_error_as_in_metal(gxx: Compiler, shader_cache: Path) -> None:
    source = ("#include <metal_stdlib>\nusing namespace metal;\n"
              "kernel void k(device bfloat* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
              "  bfloat v = o[i] * 2.0f;\n  o[i] = v;\n}\n")
    with pytest.raises(CompileError) as err:
        compile_shader(source, filename="implicit.metal", compiler=gxx, cache_dir=shader_cache)
    assert err.value.location is not None and err.value.location.startswith("implicit.metal:4:")
