"""Threadgroup kernels end to end through compile_shader: our own reduction kernel against
torch.sum, and kernels built on every helper of the wheel's c10/metal/reduction_utils.h."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from metalport.emulate import compile_shader
from metalport.errors import CompileError, EmulateError

# Our own kernels: a two-level sum (simd_sum + threadgroup memory), and row reductions built on
# every helper of c10/metal/reduction_utils.h.
KERNELS = [Path(__file__).resolve().parent / f"test_threadgroup_{name}.metal"
           for name in ("sum", "rows")]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> object:
    """Both kernel files in one library (one compile)."""
    source = "".join(path.read_text() for path in KERNELS)
    return compile_shader(source, cache_dir=tmp_path_factory.mktemp("tg-e2e"))


def sum_calls(x: torch.Tensor, acc: torch.dtype, group: int) -> tuple[list, torch.Tensor]:
    """The chunk_sum passes that sum x down to one value (each pass reads the previous output)."""
    names = {torch.float32: "float", torch.float16: "half", torch.int32: "int"}
    kernel = f"chunk_sum_{names[x.dtype]}_{names[acc]}"
    calls = []
    while True:
        partial = torch.full((math.ceil(x.numel() / group),), -7, dtype=acc)
        calls.append((kernel, (x, partial, x.numel()), {"threads": x.numel(), "group_size": group}))
        if partial.numel() == 1:
            return calls, partial
        x = partial
        kernel = f"chunk_sum_{names[acc]}_{names[acc]}"


def test_our_threadgroup_sum_matches_torch_sum(lib: object) -> None:
    assert lib.kernels["chunk_sum_float_float"].uses_threadgroup
    gen = torch.Generator().manual_seed(0)
    cases = [(torch.randn(n, generator=gen), torch.float32, group)
             for n in (1, 31, 32, 33, 1000, 4097, 100_003) for group in (32, 100, 256, 1024)]
    cases.append((torch.randn(5000, generator=gen).half(), torch.float32, 256))
    cases.append((torch.randint(-1000, 1000, (77_777,), dtype=torch.int32, generator=gen),
                  torch.int32, 1024))
    calls, results = [], []
    for x, acc, group in cases:
        more, result = sum_calls(x, acc, group)
        calls += more
        results.append(result)
    lib.run_batch(calls)
    for (x, _, _), got in zip(cases, results):
        if x.dtype == torch.int32:
            assert int(got[0]) == int(x.sum())
        else:
            want = x.double().sum().float()
            torch.testing.assert_close(got[0], want, rtol=1e-5, atol=1e-5 * x.numel() ** 0.5)


def run_rows(lib: object, name: str, x: torch.Tensor, out_dtype: torch.dtype, group: int,
             per_row: int = 1) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.full((rows * per_row,), -7, dtype=out_dtype)
    getattr(lib, name)(x.contiguous(), out, cols, threads=rows * group, group_size=group)
    return out


@pytest.mark.parametrize("group", [32, 96, 1024])
def test_reduction_utils_row_reductions(lib: object, group: int) -> None:
    gen = torch.Generator().manual_seed(group)
    x = torch.randn(6, 1500, generator=gen)
    x[2, 77] = float("nan")
    torch.testing.assert_close(run_rows(lib, "row_sum_float", x, torch.float32, group),
                               x.sum(1), equal_nan=True, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(run_rows(lib, "row_max_float", x, torch.float32, group),
                               x.amax(1), equal_nan=True)
    torch.testing.assert_close(run_rows(lib, "row_min_float", x, torch.float32, group),
                               x.amin(1), equal_nan=True)
    clean = torch.randn(6, 1500, generator=gen)
    assert run_rows(lib, "row_argmax_float", clean, torch.int64, group).tolist() == \
        clean.argmax(1).tolist()
    assert run_rows(lib, "row_argmin_float", clean, torch.int64, group).tolist() == \
        clean.argmin(1).tolist()
    near_one = 1 + 0.001 * torch.randn(6, 1500, generator=gen)
    torch.testing.assert_close(run_rows(lib, "row_prod_float", near_one, torch.float32, group),
                               near_one.prod(1), rtol=1e-5, atol=1e-5)
    h = torch.randn(6, 1500, generator=gen).half()
    torch.testing.assert_close(run_rows(lib, "row_sum_half", h, torch.float32, group),
                               h.float().sum(1), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(run_rows(lib, "row_max_half", h, torch.float16, group),
                               h.amax(1))
    b = torch.randn(6, 1500, generator=gen).bfloat16()
    torch.testing.assert_close(run_rows(lib, "row_sum_bfloat", b, torch.float32, group),
                               b.float().sum(1), rtol=1e-5, atol=1e-4)
    i = torch.randint(-10**6, 10**6, (6, 1500), dtype=torch.int32, generator=gen)
    assert run_rows(lib, "row_sum_int", i, torch.int32, group).tolist() == i.sum(1).tolist()
    assert run_rows(lib, "row_max_int", i, torch.int32, group).tolist() == i.amax(1).tolist()
    assert run_rows(lib, "row_min_int", i, torch.int32, group).tolist() == i.amin(1).tolist()
    assert run_rows(lib, "row_argmax_int", i, torch.int64, group).tolist() == \
        i.argmax(1).tolist()


@pytest.mark.parametrize("group", [32, 200, 1024])
def test_reduction_utils_welford_and_sum2(lib: object, group: int) -> None:
    x = torch.randn(3, group, generator=torch.Generator().manual_seed(1))
    got = run_rows(lib, "row_moments", x, torch.float32, group, per_row=8).view(3, 8)
    mean, m2 = x.mean(1), x.var(1, unbiased=False) * group
    count = torch.full((3,), float(group))
    for cols in ((0, 1, 2), (3, 4, 5)):
        torch.testing.assert_close(got[:, cols[0]], mean, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(got[:, cols[1]], m2, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(got[:, cols[2]], count)
    torch.testing.assert_close(got[:, 6], x.sum(1), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(got[:, 7], (x * x).sum(1), rtol=1e-5, atol=1e-4)


def test_reduction_utils_64bit_and_complex_simd_paths(lib: object) -> None:
    gen = torch.Generator().manual_seed(2)
    x = torch.randint(-2**40, 2**40, (96,), dtype=torch.int64, generator=gen)
    out = torch.zeros(15, dtype=torch.int64)
    lib.simd_long_ops(x, out, threads=96, group_size=64)
    chunks = x.view(3, 32)
    factors = torch.fmod(chunks, 2) + 2
    want = torch.stack([chunks.sum(1), factors.prod(1), chunks.amax(1), chunks.amin(1),
                        chunks[:, 7]], 1)
    assert out.view(3, 5).tolist() == want.tolist()
    z = torch.polar(1 + 0.01 * torch.randn(64, generator=gen), torch.randn(64, generator=gen))
    out_c = torch.zeros(4, dtype=torch.complex64)
    lib.simd_complex_ops(z, out_c, threads=64, group_size=64)
    zc = z.view(2, 32)
    torch.testing.assert_close(out_c.view(2, 2)[:, 0], zc.prod(1), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(out_c.view(2, 2)[:, 1], zc.sum(1), rtol=1e-5, atol=1e-5)


def test_group_larger_than_metal_allows_is_a_one_line_error(lib: object) -> None:
    x = torch.randn(4096)
    with pytest.raises(EmulateError, match="1024") as err:
        lib.chunk_sum_float_float(x, torch.zeros(2), 4096, threads=4096, group_size=2048)
    assert "\n" not in str(err.value)


def test_oversized_threadgroup_memory_is_a_compile_error_at_the_metal_line(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    source = ("#include <metal_stdlib>\nusing namespace metal;\n"
              "kernel void big(device float* out [[buffer(0)]],\n"
              "                uint tid [[thread_position_in_threadgroup]]) {\n"
              "  threadgroup float huge[16384];\n"
              "  huge[tid] = 1;\n  out[tid] = huge[tid];\n}\n")
    with pytest.raises(CompileError) as err:
        compile_shader(source, filename="big.metal", cache_dir=tmp_path_factory.mktemp("tg-big"))
    first = err.value.diagnostics[0]
    assert (first.file, first.line) == ("big.metal", 5)
    assert "32 KiB of threadgroup memory" in first.message


def test_generic_collectives_on_vectors_half_and_bfloat(lib: object) -> None:
    gen = torch.Generator().manual_seed(3)
    xy = torch.randn(64, 2, generator=gen)
    h = (torch.randn(64, generator=gen) * 4).round().half()  # exact in half, sums too
    b = torch.randn(64, generator=gen).bfloat16()
    out = torch.zeros(64 * 8)
    lib.simd_vector_ops(torch.view_as_complex(xy), h, b, out, threads=64, group_size=64)
    got = out.view(2, 32, 8)
    quarters = (xy * 4).to(torch.int32).view(2, 32, 2)
    for sg in range(2):
        lanes = slice(sg * 32, sg * 32 + 32)
        assert got[sg, :, 0].tolist() == [xy[lanes, 0].max().item()] * 32
        assert got[sg, :, 1].tolist() == [xy[lanes, 1].max().item()] * 32
        assert got[sg, :, 2].tolist() == quarters[sg, :, 0].cumsum(0).float().tolist()
        assert got[sg, :, 3].tolist() == quarters[sg, :, 1].cumsum(0).float().tolist()
        assert got[sg, :, 4].tolist() == [h[lanes].float().sum().item()] * 32
        assert got[sg, :, 5].tolist() == [32.0] * 32
        assert got[sg, :, 6].tolist() == b[lanes].view(16, 2).flip(1).reshape(32).float().tolist()
        assert got[sg, :, 7].tolist() == [h[lanes].min().float().item()] * 32


@pytest.mark.parametrize("group", [32, 100, 1000])
def test_threads_returning_between_collectives(lib: object, group: int) -> None:
    x = torch.randn(5, 3000, generator=torch.Generator().manual_seed(group))
    for p in (2.0, float("inf")):
        out = torch.full((5,), -7.0)
        lib.row_norm(x, out, 3000, p, threads=5 * group, group_size=group)
        torch.testing.assert_close(out, torch.linalg.vector_norm(x, p, dim=1), rtol=1e-5, atol=1e-5)
