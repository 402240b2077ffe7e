"""`metalport kernels FILE.metal`: the table, JSON, the mapped diagnostics and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.cli import main
from metalport.emulate import Compiler
from tests.emulate.conftest import FIXTURES


@pytest.fixture()
def env_cache(shader_cache: Path, gxx: Compiler, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The session cache, through the environment (as a user would set it), with the same g++ as
    the other tests so their compiles are reused."""
    monkeypatch.setenv("METALPORT_CACHE_DIR", str(shader_cache))
    monkeypatch.setenv("METALPORT_CXX", gxx.argv[0])
    return shader_cache


def test_table_lists_kernels_with_bindings(env_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kernels", str(FIXTURES / "small.metal")]) == 0
    out = capsys.readouterr().out
    assert "20 kernels in" in out
    assert "poly_dense_half_half" in out and "::c10::metal::unary_dense<half, poly_functor>" in out
    assert "[[buffer(2)]] constant uint& numel" in out
    assert "[[thread_position_in_grid]] uint2 thread_pos" in out


def test_json_with_repo_headers(env_cache: Path, wheel_workspace, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kernels", str(FIXTURES / "small.metal"), "--repo", str(wheel_workspace.root), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True
    by_name = {k["host_name"]: k for k in data["kernels"]}
    divmix = by_name["divmix"]
    assert [(a["name"], a["attribute"], a["index"], a["address_space"]) for a in divmix["args"]] == [
        ("out", "buffer", 0, "device"), ("a", "buffer", 1, "constant"), ("b", "buffer", 2, "constant"),
        ("i", "thread_position_in_grid", None, "thread")]
    assert by_name["poly_strided_float_float"]["args"][2]["c_type"] == "long"


def test_compile_error_prints_mapped_diagnostics_and_exits_1(env_cache: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.metal"
    bad.write_text("#include <metal_stdlib>\n"
                   "kernel void f(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                   "  x[i] = not_declared;\n"
                   "}\n")
    assert main(["kernels", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:3:" in err and "not_declared" in err
    assert err.strip().splitlines()[-1].startswith(f"metalport: error: {bad}:3:")
    assert main(["kernels", str(bad), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["diagnostics"][0]["line"] == 3


def test_missing_file_and_missing_compiler_exit_2(env_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kernels", str(tmp_path / "nope.metal")]) == 2
    assert capsys.readouterr().err == f"metalport: error: {tmp_path / 'nope.metal'}: no such shader file\n"
    monkeypatch.setenv("METALPORT_CXX", str(tmp_path / "no-such-cxx"))
    assert main(["kernels", str(FIXTURES / "small.metal")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "does not run or print a version" in err
