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


def test_overlay_lays_real_files_over_the_workspace_in_a_second_commit(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    import subprocess

    from metalport.cli import main

    layer = tmp_path / "real"
    mm = layer / "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
    mm.parent.mkdir(parents=True)
    mm.write_bytes(b"// a host file in our own words\n#include <ATen/native/UnaryOps.h>\n")
    (layer / ".git").mkdir()
    (layer / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # never copied
    target = tmp_path / "ws"
    assert main(["workspace", "init", str(target), "--overlay", str(layer)]) == 0
    assert capsys.readouterr().out.startswith(
        f"created a metalport workspace at {target}; the files of {layer} laid over it in a second commit\n")
    copied = target / "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
    assert copied.read_bytes() == mm.read_bytes()
    log = subprocess.run(["git", "log", "--format=%s"], cwd=target, capture_output=True, text=True).stdout
    assert log.splitlines() == [f"files laid over the workspace from {layer}",
                                "metalport workspace from the installed torch wheel"]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=target, capture_output=True, text=True).stdout
    assert status == ""

    assert main(["workspace", "init", str(tmp_path / "other"), "--overlay", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err == (f"metalport: error: {tmp_path / 'nope'}: --overlay is not a folder; name a "
                                       "folder in PyTorch's layout (holding aten/...); nothing was written\n")
    assert not (tmp_path / "other").exists()
