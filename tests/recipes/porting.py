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

