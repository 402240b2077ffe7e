"""The compiled-shader cache: a second compile is a reload, a changed header byte is a rebuild,
and the same headers under another directory (another worktree) still hit."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch

from metalport.emulate import Compiler, compile_file, compile_shader, wheel_include_dir

SOURCE = """\
#include <c10/metal/common.h>
#include <metal_stdlib>
kernel void fill_ceil_div(device uint* out [[buffer(0)]], constant uint& d [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  out[i] = c10::metal::ceil_div(i, d);
}
"""


def _headers(root: Path) -> Path:
    """A copy of the wheel's c10/metal headers under `root` (an include directory)."""
    shutil.copytree(wheel_include_dir() / "c10" / "metal", root / "c10" / "metal")
    return root


def test_reload_hits_and_header_change_rebuilds(gxx: Compiler, shader_cache: Path, tmp_path: Path) -> None:
    cache = shader_cache
    include = _headers(tmp_path / "worktree-a")
    first = compile_shader(SOURCE, include_dirs=[include], compiler=gxx, cache_dir=cache)
    manifests = sorted(cache.glob("*.json"))
    stamp = manifests[0].stat().st_mtime_ns
    again = compile_shader(SOURCE, include_dirs=[include], compiler=gxx, cache_dir=cache)
    assert again.so_path == first.so_path
    assert sorted(cache.glob("*.json")) == manifests and manifests[0].stat().st_mtime_ns == stamp
    # the same header bytes in another worktree: still a hit
    moved = _headers(tmp_path / "worktree-b")
    assert compile_shader(SOURCE, include_dirs=[moved], compiler=gxx, cache_dir=cache).so_path == first.so_path
    # one changed byte in an included header, same size and mtime (headers are hashed once per
    # process while their stat stays the same): a rebuild into a new library
    common = moved / "c10" / "metal" / "common.h"
    text, stat = common.read_text(), common.stat()
    at = text.index("//") + 2  # a byte of a comment: same length, still compiles
    common.write_text(text[:at] + ("X" if text[at] != "X" else "Y") + text[at + 1:])
    os.utime(common, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert common.stat().st_size == stat.st_size and common.stat().st_mtime_ns == stat.st_mtime_ns
    rebuilt = compile_shader(SOURCE, include_dirs=[moved], compiler=gxx, cache_dir=cache)
    assert rebuilt.so_path != first.so_path
    out = torch.zeros(10, dtype=torch.uint32)
    rebuilt.fill_ceil_div(out, 3, threads=10)
    assert out.tolist() == [(i + 2) // 3 for i in range(10)]
    for lib in (first, again, rebuilt):
        lib.close()


def test_cache_dir_from_environment(gxx: Compiler, shader_cache: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("METALPORT_CACHE_DIR", str(shader_cache))
    source = tmp_path / "fill.metal"
    source.write_text(SOURCE)
    with compile_file(source, compiler=gxx) as lib:
        assert lib.so_path.parent == shader_cache
        assert lib.function_names() == ["fill_ceil_div"]
