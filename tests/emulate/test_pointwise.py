"""Our functors, registered with the real REGISTER_* macros through the wheel's indexing.h, run on
the CPU and compared with torch: dense and strided flavours, float32/float16/bfloat16/int32."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from metalport.emulate import Compiler, ShaderLibrary, compile_file
from metalport.errors import UnknownKernelError
from tests.emulate.conftest import FIXTURES, ulp_distance

DTYPES = {"float": torch.float32, "half": torch.float16, "bfloat": torch.bfloat16, "int": torch.int32}


@pytest.fixture(scope="module")
def lib(gxx: Compiler, shader_cache: Path) -> ShaderLibrary:
    """The pointwise fixture compiled once (g++, Metal 3.1)."""
    with compile_file(FIXTURES / "pointwise.metal", compiler=gxx, cache_dir=shader_cache) as library:
        yield library


def _sample(dtype: torch.dtype, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Random values that cross signs and, for integers, stay far from overflow."""
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.int32:
        return torch.randint(-1000, 1000, shape, generator=gen, dtype=dtype)
    return (torch.randn(shape, generator=gen) * 3).to(dtype)


def _assert_close(actual: torch.Tensor, expected: torch.Tensor, max_ulp: int) -> None:
    """Integers bit-exact; floats within `max_ulp`."""
    if actual.dtype.is_floating_point:
        assert ulp_distance(actual, expected) <= max_ulp
    else:
        assert torch.equal(actual, expected)


def _fused(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """a*b - c rounded once (an FMA), via float64."""
    return (a.double() * b.double() - c.double()).float()


def _byte_strides(t: torch.Tensor) -> list[int]:
    """Strides in bytes, innermost first (as the MPS host code passes them)."""
    return [s * t.element_size() for s in reversed(t.stride())]


@pytest.mark.parametrize("name", ["float", "half", "bfloat", "int"])
def test_unary_dense_ilp_and_scalar(lib: ShaderLibrary, name: str) -> None:
    dtype = DTYPES[name]
    out_name, out_dtype = ("float", torch.float32) if name == "int" else (name, dtype)
    x = _sample(dtype, (1003,), 1)
    expected = (x.float() / (1 + x.float().abs())).to(out_dtype)
    out = torch.full_like(x, float("nan"), dtype=out_dtype)
    lib.run(f"softsign_dense_{out_name}_{name}", out, x, x.numel(), threads=math.ceil(x.numel() / 4))
    _assert_close(out, expected, 0)
    out2 = torch.full_like(out, float("nan"))
    getattr(lib, f"softsign_dense_scalar_{out_name}_{name}")(out2, x, threads=x.numel())
    _assert_close(out2, expected, 0)


@pytest.mark.parametrize("name", ["float", "half", "bfloat", "int"])
def test_unary_strided_transposed_input(lib: ShaderLibrary, name: str) -> None:
    dtype = DTYPES[name]
    out_name, out_dtype = ("float", torch.float32) if name == "int" else (name, dtype)
    x = _sample(dtype, (37, 29), 2).t()  # a non-contiguous view
    out = torch.full(x.shape, float("nan"), dtype=out_dtype)
    sizes = list(reversed(x.shape))
    lib.run(f"softsign_strided_{out_name}_{name}", out, x, sizes, _byte_strides(x), _byte_strides(out),
            x.dim(), threads=(sizes[0], x.numel() // sizes[0]))
    _assert_close(out, (x.float() / (1 + x.float().abs())).to(out_dtype), 0)


@pytest.mark.parametrize("name", ["float", "half", "bfloat", "int"])
def test_binary_dense_ilp_and_strided_broadcast(lib: ShaderLibrary, name: str) -> None:
    dtype = DTYPES[name]
    a, b = _sample(dtype, (517,), 3), _sample(dtype, (517,), 4)
    expected = (a - b).abs()
    out = torch.zeros_like(a)
    lib.run(f"absdiff_dense_{name}_{name}", out, a, b, threads=a.numel())
    _assert_close(out, expected, 0)
    out = torch.zeros_like(a)
    lib.run(f"absdiff_dense_ilp4_{name}_{name}", out, a, b, a.numel(), threads=math.ceil(a.numel() / 4))
    _assert_close(out, expected, 0)
    # strided: a transposed lhs and a stride-0 (broadcast) rhs
    lhs = _sample(dtype, (13, 11), 5).t()
    rhs = _sample(dtype, (1, 13), 6).expand(11, 13)
    out = torch.zeros(11, 13, dtype=dtype)
    lib.run(f"absdiff_strided_{name}_{name}", out, lhs, rhs, list(reversed(out.shape)), _byte_strides(out),
            _byte_strides(lhs), _byte_strides(rhs), [2, 0, 0], threads=out.numel())
    _assert_close(out, (lhs - rhs).abs(), 0)


@pytest.mark.parametrize("name", ["float", "half", "bfloat", "int"])
def test_binary_alpha_dense_and_strided(lib: ShaderLibrary, name: str) -> None:
    dtype = DTYPES[name]
    a, b = _sample(dtype, (300,), 7), _sample(dtype, (300,), 8)
    alpha = 3 if name == "int" else 0.75

    def expected(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # float32: a - alpha*b contracts to one FMA, as torch's vectorised sub with alpha does;
        # half/bfloat: every operation rounds to the type
        return torch.sub(x, y, alpha=alpha) if name == "float" else x - y * torch.tensor(alpha, dtype=dtype)

    out = torch.zeros_like(a)
    lib.run(f"sub_scaled_dense_{name}_{name}_{name}", out, a, b, alpha, threads=a.numel())
    _assert_close(out, expected(a, b), 0 if name == "float" else 1)
    lhs = _sample(dtype, (10, 30), 9).t()
    out = torch.zeros(30, 10, dtype=dtype)
    lib.run(f"sub_scaled_strided_{name}_{name}_{name}", out, lhs, b.view(30, 10), alpha,
            list(reversed(out.shape)), _byte_strides(out), _byte_strides(lhs), _byte_strides(out),
            [2, 0, 0], threads=out.numel())
    _assert_close(out, expected(lhs, b.view(30, 10)), 0 if name == "float" else 1)


@pytest.mark.parametrize("name", ["float", "half", "bfloat", "int"])
def test_ternary_dense_and_strided(lib: ShaderLibrary, name: str) -> None:
    dtype = DTYPES[name]
    a, b, c = (_sample(dtype, (257,), s) for s in (10, 11, 12))
    out = torch.zeros_like(a)
    lib.run(f"mulsub_dense_{name}_{name}", out, a, b, c, threads=a.numel())
    _assert_close(out, _fused(a, b, c) if name == "float" else a * b - c, 1)
    lhs = _sample(dtype, (8, 9), 13).t()
    mid, rhs = _sample(dtype, (9, 8), 14), _sample(dtype, (9, 1), 15).expand(9, 8)
    out = torch.zeros(9, 8, dtype=dtype)
    lib.run(f"mulsub_strided_{name}_{name}", out, lhs, mid, rhs, list(reversed(out.shape)),
            _byte_strides(out), _byte_strides(lhs), _byte_strides(mid), _byte_strides(rhs), 2,
            threads=out.numel())
    _assert_close(out, _fused(lhs, mid, rhs) if name == "float" else lhs * mid - rhs, 1)


def test_run_batch_chains_calls_in_one_round_trip(lib: ShaderLibrary) -> None:
    a, b = _sample(torch.float32, (64,), 16), _sample(torch.float32, (64,), 17)
    tmp, out = torch.zeros(64), torch.zeros(64)
    lib.run_batch([("absdiff_dense_float_float", (tmp, a, b), {"threads": 64}),
                   ("softsign_dense_scalar_float_float", (out, tmp), {"threads": 64})])
    d = (a - b).abs()
    assert ulp_distance(out, d / (1 + d)) == 0


def test_kernel_table_binds_by_attribute(lib: ShaderLibrary) -> None:
    info = lib.kernels["sub_scaled_strided_float_float_float"]
    assert info.template == "::c10::metal::binary_alpha_strided<float, float, sub_scaled_functor>"
    assert [(a.name, a.attribute, a.index) for a in info.args][:4] == [
        ("output", "buffer", 0), ("input", "buffer", 1), ("other", "buffer", 2), ("alpha", "buffer", 3)]
    assert info.args[-1].attribute == "thread_position_in_grid"
    assert info.args[3].c_type == "float" and not info.args[3].is_pointer
    assert info.args[4].c_type == "long" and info.args[4].is_pointer and info.args[4].address_space == "constant"
    assert info.args[0].address_space == "device" and info.args[0].c_type == "void"
    assert not info.uses_threadgroup and info.grid_indexed == ()
    assert lib.kernels["absdiff_dense_float_float"].grid_indexed == (0, 1, 2)  # out[tid], input[tid], other[tid]
    assert lib.kernels["absdiff_dense_ilp4_float_float"].grid_indexed == ()
    assert "softsign_strided_castout_int" in lib.function_names()


def test_selected_kernels_only(gxx: Compiler, shader_cache: Path) -> None:
    with compile_file(FIXTURES / "pointwise.metal", compiler=gxx, cache_dir=shader_cache,
                      kernels=["absdiff_dense_*_int", "softsign_dense_float_float"]) as lib:
        assert lib.function_names() == ["absdiff_dense_broadcast_cast_int_int", "absdiff_dense_broadcast_int_int",
                                        "absdiff_dense_broadcast_rhs_cast_int_int",
                                        "absdiff_dense_broadcast_rhs_int_int", "absdiff_dense_cast_int_int",
                                        "absdiff_dense_ilp4_int_int", "absdiff_dense_int_int",
                                        "absdiff_dense_scalar_cast_int_int", "absdiff_dense_scalar_int_int",
                                        "absdiff_dense_scalar_lhs_cast_int_int", "absdiff_dense_scalar_lhs_int_int",
                                        "softsign_dense_float_float"]
        a, b = _sample(torch.int32, (40,), 18), _sample(torch.int32, (40,), 19)
        out = torch.zeros_like(a)
        lib.absdiff_dense_int_int(out, a, b, threads=40)
        assert torch.equal(out, (a - b).abs())
        with pytest.raises(UnknownKernelError, match="no kernel named 'absdiff_dense_float_float'"):
            lib.absdiff_dense_float_float(out, a, b, threads=40)
