"""The host check's front end (zig's version and its `c++` driver's flags) is probed once per
installation, not once per run; a broken memo is probed again."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from metalport.hostcheck import toolchain


def test_front_end_is_remembered_per_installation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METALPORT_CACHE_DIR", str(tmp_path / "shaders"))
    toolchain.front_end.cache_clear()
    first = toolchain.front_end()
    memo = tmp_path / "hostcheck" / "front-end.json"
    assert memo.is_file()

    def no_zig(*args, **kwargs):
        raise AssertionError(f"zig ran again: {args[0]}")

    toolchain.front_end.cache_clear()
    monkeypatch.setattr(subprocess, "run", no_zig)
    assert toolchain.front_end() == first  # a new run: from the memo, no process
    monkeypatch.undo()
    monkeypatch.setenv("METALPORT_CACHE_DIR", str(tmp_path / "shaders"))
    memo.write_text("{not json")
    toolchain.front_end.cache_clear()
    assert toolchain.front_end() == first
    assert memo.read_text().startswith("{\"")
    toolchain.front_end.cache_clear()
