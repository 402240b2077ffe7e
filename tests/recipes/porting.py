"""Helpers for port, contract and executor tests: clones of a checkout to apply plans in."""

from __future__ import annotations

import subprocess
from pathlib import Path

from metalport.checkout import Checkout

GIT = ("git", "-c", "user.name=Test", "-c", "user.email=test@localhost", "-c", "commit.gpgsign=false")


def git(cwd: Path, *argv: str) -> str:
    """Run git in `cwd`; return stdout (raises on failure)."""
    return subprocess.run([*GIT, *argv], cwd=cwd, check=True, capture_output=True, text=True, timeout=60).stdout


def clone(checkout: Checkout, target: Path) -> Path:
    """A git clone of `checkout` at `target` (same commits, so `check_contract` finds the base)."""
    git(target.parent, "clone", "-q", str(checkout.root), str(target))
    return target


def commit_all(root: Path, message: str) -> None:
    """Commit every change in `root`."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def read(root: Path, rel: str) -> str:
    """The text of `root/rel`."""
    return (root / rel).read_text(encoding="utf-8")


def write(root: Path, rel: str, text: str) -> None:
    """Write `text` to `root/rel`, creating folders."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_compilable_fixture(tmp_path: Path) -> Checkout:
    """The shared fixture checkout with its shader made compilable like PyTorch's (indexing.h
    included, atan2's half row returning float), committed."""
    from tests.fixture_repo import make_fixture_checkout

    checkout = make_fixture_checkout(tmp_path)
    rel = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    text = read(checkout.root, rel)
    text = text.replace("#include <c10/metal/utils.h>\n",
                        "#include <c10/metal/indexing.h>\n#include <c10/metal/utils.h>\n")
    write(checkout.root, rel, text.replace("REGISTER_BINARY_OP(atan2, half, half);",
                                           "REGISTER_BINARY_OP(atan2, half, float);"))
    commit_all(checkout.root, "compilable shader")
    return checkout
