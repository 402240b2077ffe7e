"""Fixtures for the emulator tests: one shader cache per session, the compilers present, ulps."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import torch

from metalport.emulate import Compiler
from metalport.emulate.compiler import _probe

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def shader_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory shared by the session, so repeated sources compile once."""
    return tmp_path_factory.mktemp("shader-cache")


@pytest.fixture(autouse=True)
def _no_home_cache(shader_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing a test does lands in ~/.cache (compiler probes, default-cache compiles)."""
    monkeypatch.setenv("METALPORT_CACHE_DIR", str(shader_cache))


def _compilers() -> list[Compiler]:
    """g++ >= 12 from PATH and the ziglang clang, when present."""
    found = []
    gxx = shutil.which("g++")
    if gxx:
        probed = _probe((gxx,), "g++ on PATH")
        if probed is not None and probed.family == "gcc" and probed.major >= 12:
            found.append(probed)
    zig = _probe((sys.executable, "-m", "ziglang", "c++"), "python -m ziglang")
    if zig is not None:
        found.append(zig)
    return found


COMPILERS = _compilers()


@pytest.fixture(scope="session")
def gxx() -> Compiler:
    """g++ (every test machine of this project has it; skip elsewhere)."""
    for compiler in COMPILERS:
        if compiler.family == "gcc":
            return compiler
    pytest.skip("g++ >= 12 is not installed")


def ulp_distance(actual: torch.Tensor, expected: torch.Tensor) -> int:
    """Largest distance in units in the last place between two float tensors of one dtype
    (NaNs must sit in the same places; they count as 0)."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(actual.isnan(), expected.isnan()), "NaN positions differ"
    bits = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}[actual.dtype]
    def ordered(t: torch.Tensor) -> torch.Tensor:
        raw = t.masked_fill(t.isnan(), 0).contiguous().view(bits).to(torch.int64)
        sign = torch.tensor(1 << (8 * t.element_size() - 1), dtype=torch.int64)
        return torch.where(raw < 0, -(raw + sign), raw)
    if actual.numel() == 0:
        return 0
    return int((ordered(actual) - ordered(expected)).abs().max())
