"""PathGuard: refusals are one line with the nearest allowed path; writes are atomic and lazy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metalport.errors import SandboxError
from metalport.sandbox import PathGuard

ALLOWED = {"aten/kernels/BinaryKernel.metal", "aten/ops/BinaryOps.mm"}


@pytest.fixture
def guard(tmp_path: Path) -> PathGuard:
    root = tmp_path / "wt"
    (root / "aten" / "kernels").mkdir(parents=True)
    return PathGuard(root, ALLOWED)


def _refusal(guard: PathGuard, path: str | Path) -> str:
    with pytest.raises(SandboxError) as info:
        guard.resolve(path)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_allowed_relative_and_absolute_paths_resolve(guard: PathGuard) -> None:
    target = guard.root / "aten/kernels/BinaryKernel.metal"
    assert guard.resolve("aten/kernels/BinaryKernel.metal") == target
    assert guard.resolve(target) == target


def test_absolute_path_outside_is_refused(guard: PathGuard, tmp_path: Path) -> None:
    text = _refusal(guard, tmp_path / "elsewhere.mm")
    assert text == (f"path {str(tmp_path / 'elsewhere.mm')!r} is outside the worktree {guard.root}; "
                    "did you mean 'aten/ops/BinaryOps.mm'?")


def test_dotdot_escape_is_refused(guard: PathGuard) -> None:
    text = _refusal(guard, "aten/../../x/BinaryKernel.metal")
    assert "escapes the worktree through '..'" in text
    assert text.endswith("did you mean 'aten/kernels/BinaryKernel.metal'?")


def test_symlink_out_is_refused(guard: PathGuard, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (guard.root / "aten" / "ops").symlink_to(outside)
    text = _refusal(guard, "aten/ops/BinaryOps.mm")
    assert f"symlink (or under one) leading out of the worktree to {outside / 'BinaryOps.mm'}" in text


def test_path_not_on_allow_list_is_refused(guard: PathGuard) -> None:
    assert _refusal(guard, "aten/kernels/BinaryKernels.metal") == (
        "path 'aten/kernels/BinaryKernels.metal' is not on the plan's allow-list; "
        "did you mean 'aten/kernels/BinaryKernel.metal'?")


def test_write_text_renames_only_when_changed(guard: PathGuard) -> None:
    name = "aten/kernels/BinaryKernel.metal"
    assert guard.write_text(name, "a\n") is True
    path = guard.root / name
    stamp = path.stat().st_mtime_ns
    inode = path.stat().st_ino
    assert guard.write_text(name, "a\n") is False
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == (stamp, inode)
    assert guard.write_text(name, "b\n") is True
    assert path.read_text() == "b\n"
    assert sorted(os.listdir(path.parent)) == ["BinaryKernel.metal"]


def test_write_text_refuses_before_writing(guard: PathGuard) -> None:
    with pytest.raises(SandboxError):
        guard.write_text("aten/evil.py", "x")
    assert not (guard.root / "aten/evil.py").exists()
