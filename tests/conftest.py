"""Shared fixtures: the installed wheel's registry files and a read-only wheel workspace."""

from __future__ import annotations

from pathlib import Path

import pytest


def _wheel_native_dir() -> Path:
    import torchgen

    return Path(torchgen.__file__).parent / "packaged" / "ATen" / "native"


@pytest.fixture(scope="session")
def wheel_yaml() -> Path:
    """The wheel's native_functions.yaml (read-only)."""
    return _wheel_native_dir() / "native_functions.yaml"


@pytest.fixture(scope="session")
def wheel_tags() -> Path:
    """The wheel's tags.yaml (read-only)."""
    return _wheel_native_dir() / "tags.yaml"


@pytest.fixture(scope="session")
def wheel_workspace(tmp_path_factory: pytest.TempPathFactory):
    """A wheel workspace made once per session by `init_workspace`; read-only by convention."""
    from metalport.checkout import init_workspace

    return init_workspace(tmp_path_factory.mktemp("wheel") / "workspace")


@pytest.fixture(scope="session", autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory):
    """The registry index and OpInfo facts of the whole session go to a temp folder, not ~/.cache
    (subprocesses inherit it); shared by the session so the OpInfo database is read once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))
        yield


def overlay_real_tree(target: Path):
    """A checkout at `target` holding the tree named by METALPORT_REAL_TREE: the tree itself when it
    is a whole PyTorch checkout, else a wheel workspace with its files laid over (and committed).
    Skips the calling test, with the reason, when the variable is unset or names no directory."""
    import os
    import shutil
    import subprocess

    from metalport.checkout import Checkout, init_workspace
    from metalport.checkout.workspace import GIT_IDENTITY

    named = os.environ.get("METALPORT_REAL_TREE")
    if not named:
        pytest.skip("METALPORT_REAL_TREE is unset: no real PyTorch tree to read")
    tree = Path(named).expanduser().resolve()
    if not tree.is_dir():
        pytest.skip(f"METALPORT_REAL_TREE={named} is not a directory")
    if (tree / "aten/src/ATen/native/native_functions.yaml").is_file():
        return Checkout(tree)
    checkout = init_workspace(target)
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        dest = checkout.root / path.relative_to(tree)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for argv in (["add", "-A"], ["commit", "-q", "-m", "real upstream files over the wheel workspace"]):
        subprocess.run(["git", *GIT_IDENTITY, *argv], cwd=checkout.root, check=True, capture_output=True,
                       timeout=120)
    return checkout


@pytest.fixture(scope="session")
def real_tree_workspace(tmp_path_factory: pytest.TempPathFactory):
    """The real tree of METALPORT_REAL_TREE as a checkout (see `overlay_real_tree`); read-only by
    convention: copy it (`overlay_real_tree(tmp_path)`) to edit."""
    return overlay_real_tree(tmp_path_factory.mktemp("real") / "workspace")
