"""Recognising a checkout by its layout, and the message for anything else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metalport.checkout import Checkout, find_checkout
from metalport.errors import RepoError
from tests.fixture_repo import make_fixture_checkout


def test_find_checkout_at_path(tmp_path: Path) -> None:
    made = make_fixture_checkout(tmp_path)
    found = find_checkout(made.root)
    assert found == Checkout(made.root.resolve())
    assert found.native_functions.is_file() and found.tags.is_file()
    assert found.mps_operations.is_dir() and found.mps_kernels.is_dir() and found.c10_metal.is_dir()
    assert found.common_mps.is_file() and not found.is_wheel_workspace


def test_find_checkout_walks_up_from_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = make_fixture_checkout(tmp_path)
    monkeypatch.chdir(made.mps_kernels)
    assert find_checkout(None).root == made.root.resolve()


def test_non_checkout_names_the_missing_path(tmp_path: Path) -> None:
    made = make_fixture_checkout(tmp_path)
    (made.common_mps).unlink()
    with pytest.raises(RepoError) as err:
        find_checkout(made.root)
    assert str(err.value) == (
        f"{made.root.resolve()}: not a PyTorch checkout: missing torch/testing/_internal/common_mps.py; "
        "pass --repo at a PyTorch checkout, or create one with `metalport workspace init DIR`")
    assert err.value.exit_code == 2


def test_cwd_outside_any_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RepoError, match="not inside a PyTorch checkout: missing aten/src/ATen/native/native_functions.yaml"):
        find_checkout(None)
    assert os.listdir(tmp_path) == []
