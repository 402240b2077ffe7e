"""Compiler discovery: the environment override, the PATH order and the no-compiler error."""

from __future__ import annotations

import sys

import pytest

from metalport.emulate import find_compiler
from metalport.errors import EmulateError


def test_override_with_ziglang(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METALPORT_CXX", f"{sys.executable} -m ziglang c++")
    found = find_compiler()
    assert found.family == "clang" and found.major >= 16
    assert found.reason == "$METALPORT_CXX is set"


def test_gxx_on_path_is_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METALPORT_CXX", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin")
    found = find_compiler()
    assert found.family == "gcc" and found.major >= 12
    assert found.reason == "g++ on PATH"


def test_bad_override_is_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METALPORT_CXX", "/nonexistent/cxx")
    with pytest.raises(EmulateError) as info:
        find_compiler()
    assert "\n" not in str(info.value)
    assert "$METALPORT_CXX='/nonexistent/cxx' does not run" in str(info.value)
