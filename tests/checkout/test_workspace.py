"""`init_workspace` from the installed wheel: layout, one commit, refusal of a non-empty DIR."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from metalport.checkout import Checkout, find_checkout, init_workspace
from metalport.errors import UsageError


def test_wheel_workspace_layout(wheel_workspace: Checkout, wheel_yaml: Path) -> None:
    ws = find_checkout(wheel_workspace.root)
    assert ws.is_wheel_workspace
    assert ws.native_functions.read_bytes() == wheel_yaml.read_bytes()
    assert (ws.c10_metal / "utils.h").is_file()
    assert "heaviside_stub" in (ws.native_dir / "BinaryOps.h").read_text()
    assert (ws.root / "torch/testing/_internal/opinfo/core.py").is_file()
    assert not list(ws.mps_operations.glob("*.mm")) and not list(ws.mps_kernels.glob("*.metal"))
    log = subprocess.run(["git", "log", "--format=%s"], cwd=ws.root, capture_output=True, text=True, check=True)
    assert log.stdout.splitlines() == ["metalport workspace from the installed torch wheel"]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ws.root, capture_output=True, text=True, check=True)
    assert status.stdout == ""


def test_non_empty_dir_is_refused_with_nothing_written(tmp_path: Path) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(UsageError) as err:
        init_workspace(target)
    assert str(err.value) == (f"{target}: directory is not empty; choose a new or empty directory; "
                              "nothing was written")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy"]
    assert [p.name for p in target.iterdir()] == ["keep.txt"]


def test_empty_dir_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert init_workspace(tmp_path / "empty").native_functions.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]
