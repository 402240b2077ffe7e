"""`overlay_real_tree`: the real PyTorch files of METALPORT_REAL_TREE as a checkout tests can read."""

from __future__ import annotations

from pathlib import Path

import pytest


def overlay_real_tree(target: Path, *, writable: bool = False):
    """A checkout holding the tree named by METALPORT_REAL_TREE: a wheel workspace at `target` with
    its files laid over (and committed); when it names a whole PyTorch checkout, that checkout
    itself, or a clone of it at `target` when the caller edits (`writable`). Skips the calling test,
    with the reason, when the variable is unset or names no directory."""
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
        if not writable:
            return Checkout(tree)
        subprocess.run(["git", "clone", "-q", "--local", str(tree), str(target)], check=True, capture_output=True,
                       timeout=600)
        return Checkout(target)
    checkout = init_workspace(target)
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        dest = checkout.root / path.relative_to(tree)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for argv in (["add", "-A"], ["commit", "-q", "-m", "real upstream files over the wheel workspace"]):
        subprocess.run(["git", *GIT_IDENTITY, *argv], cwd=checkout.root, check=True, capture_output=True,
                       timeout=120)
    return checkout
