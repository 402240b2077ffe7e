"""Any bytes in, one line out (Note [source bytes]): random bytes in a shader, a host file, the
registry and the test lists go through `kernels`, `conformance` and the scanners (`backlog`) with
an exit status and at most one error line, never a traceback."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torch.testing._internal.common_utils  # noqa: F401  (registers its hypothesis profiles at import, not inside a test)

from metalport.cli import main
from tests.fixture_repo import make_fixture_checkout

NATIVE = "aten/src/ATen/native"
TARGETS = (f"{NATIVE}/mps/kernels/BinaryKernel.metal", f"{NATIVE}/mps/operations/BinaryKernel.mm",
           f"{NATIVE}/native_functions.yaml", "torch/testing/_internal/common_mps.py")
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
                    derandomize=True, database=None)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = make_fixture_checkout(tmp_path_factory.mktemp("bytes")).root
    yield root


def _spliced(original: bytes, junk: bytes, at: float) -> bytes:
    """`junk` put into `original` at a fraction `at` of its length (where it is read as code)."""
    cut = int(len(original) * at)
    return original[:cut] + junk + original[cut:]


def _one_line_out(code: int, err: str) -> None:
    assert "Traceback" not in err
    assert code in (0, 1, 2)
    if code == 2:
        assert err.strip().splitlines()[-1].startswith("metalport: error: ")


junk = st.binary(min_size=1, max_size=64).filter(lambda b: any(c >= 0x80 for c in b) or b"\0" in b)


@settings(SETTINGS, max_examples=12)
@given(data=st.binary(max_size=2048))
def test_kernels_takes_any_bytes(tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str],
                                 data: bytes) -> None:
    shader = tmp_path / "random.metal"
    shader.write_bytes(b"#include <metal_stdlib>\n" + data)
    code = main(["kernels", str(shader)])
    _one_line_out(code, capsys.readouterr().err)
    assert code in (0, 1)  # a compile error exits 1 with its diagnostics


@settings(SETTINGS, max_examples=16)
@given(junk=junk, at=st.floats(0, 1), target=st.sampled_from(TARGETS))
def test_the_backlog_scanners_take_any_bytes(checkout: Path, capsys: pytest.CaptureFixture[str],
                                             junk: bytes, at: float, target: str) -> None:
    path = checkout / target
    original = path.read_bytes()
    try:
        path.write_bytes(_spliced(original, junk, at))
        code = main(["backlog", "--repo", str(checkout), "--format", "tsv"])
    finally:
        path.write_bytes(original)
    _one_line_out(code, capsys.readouterr().err)


@pytest.mark.parametrize("target", TARGETS)
def test_a_latin1_byte_names_the_file_line_and_byte(checkout: Path, capsys: pytest.CaptureFixture[str],
                                                    target: str) -> None:
    path = checkout / target
    original = path.read_bytes()
    try:
        lines = original.split(b"\n")
        lines[2] = lines[2] + b"  # caf\xe9"
        path.write_bytes(b"\n".join(lines))
        code = main(["backlog", "--repo", str(checkout), "--format", "tsv"])
    finally:
        path.write_bytes(original)
    err = capsys.readouterr().err
    _one_line_out(code, err)
    if code == 2:  # a file the scanner must understand: the error says where
        assert "0xE9 is not UTF-8" in err and ":3:" in err


@settings(SETTINGS, max_examples=4)
@given(junk=junk, at=st.floats(0, 1), target=st.sampled_from(TARGETS[:2]))
def test_conformance_takes_any_bytes(checkout: Path, cache: Path, capsys: pytest.CaptureFixture[str],
                                     junk: bytes, at: float, target: str) -> None:
    path = checkout / target
    original = path.read_bytes()
    try:
        path.write_bytes(_spliced(original, junk, at))
        code = main(["conformance", "aten::atan2", "--repo", str(checkout), "--dtypes", "float32",
                     "--no-held-out", "--seed", "1"])
    finally:
        path.write_bytes(original)
    err = capsys.readouterr().err
    # 3: not judged (junk that leaves the host code calling no modelled exec_*_kernel), never a crash
    _one_line_out(1 if code == 3 else code, err)


def test_the_checkout_is_unchanged(checkout: Path) -> None:
    assert subprocess.run(["git", "status", "--porcelain"], cwd=checkout, capture_output=True,
                          text=True).stdout == ""
