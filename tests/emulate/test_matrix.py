"""Both compilers present (g++ and ziglang clang) x both Metal versions (310, 400): the same
kernels compile through the real headers and give torch's results bit for bit."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from metalport.emulate import Compiler, compile_file
from tests.emulate.conftest import COMPILERS, FIXTURES, ulp_distance


def _poly_reference(x: torch.Tensor) -> torch.Tensor:
    """x*x*x - x*x + x with torch, one rounding per operation in x's dtype."""
    return x * x * x - x * x + x


@pytest.mark.parametrize("version", [310, 400])
@pytest.mark.parametrize("compiler", COMPILERS, ids=lambda c: c.family)
def test_matrix(compiler: Compiler, version: int, shader_cache: Path) -> None:
    with compile_file(FIXTURES / "small.metal", compiler=compiler, metal_version=version,
                      cache_dir=shader_cache) as lib:
        seen = torch.zeros(3, dtype=torch.int32)
        lib.metal_version(seen, threads=3)
        assert seen.tolist() == [version] * 3
        gen = torch.Generator().manual_seed(version)
        base = torch.rand(4096, generator=gen) * 4 - 2
        for name, dtype in (("float", torch.float32), ("half", torch.float16), ("bfloat", torch.bfloat16)):
            x = base.to(dtype)
            out = torch.empty_like(x)
            lib.run(f"poly_dense_{name}_{name}", out, x, x.numel(), threads=x.numel() // 4)
            # float32 may contract to FMA (like torch's vectorised CPU code); half/bfloat round per op
            limit = 2 if name == "float" else 0
            assert ulp_distance(out, _poly_reference(x)) <= limit, (name, compiler.family)
        a = torch.randint(-(2**31), 2**31 - 1, (1000,), generator=gen, dtype=torch.int32)
        sign = torch.where(a % 2 == 0, 1, -1).to(torch.int32)
        b = torch.randint(1, 1000, (1000,), generator=gen, dtype=torch.int32) * sign
        out = torch.empty_like(a)
        lib.run("divmix", out, a, b, threads=a.numel())
        quotient = torch.div(a, b, rounding_mode="trunc")
        assert torch.equal(out, quotient + (a - quotient * b) + a * 65599)  # wraps like the GPU
