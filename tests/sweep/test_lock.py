"""One sweep at a time per repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metalport.cli import main
from metalport.sweep import SweepLock, metalport_dir


def test_a_second_sweep_exits_3_naming_the_running_one(workspace: Path, capsys: pytest.CaptureFixture) -> None:
    with SweepLock(metalport_dir(workspace)):
        code = main(["sweep", "--repo", str(workspace)])
    err = capsys.readouterr().err
    assert code == 3
    assert err.startswith(f"metalport: error: another sweep is running on this repository (pid {os.getpid()}, "
                          "started 20")
    assert err.count("\n") == 1 and "UTC" in err


def test_the_lock_is_free_again_after_the_holder_leaves(workspace: Path) -> None:
    mdir = metalport_dir(workspace)
    with SweepLock(mdir):
        assert (mdir / "sweep.lock.json").exists()
    with SweepLock(mdir):
        pass
    assert not (mdir / "sweep.lock.json").exists()


def test_an_unknown_model_is_refused_before_anything_starts(workspace: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["sweep", "--repo", str(workspace), "--model", "gpt-4"]) == 2
    assert capsys.readouterr().err == ("metalport: error: unknown model 'gpt-4'; use --model recipe or "
                                       "--model openai:MODEL\n")
    assert not (workspace / ".git" / "metalport" / "dashboard.md").exists()
