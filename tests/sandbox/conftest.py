"""A tiny git repository with a fixed identity for sandbox and publish tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` and return its stdout."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit by a human, identity set per repo."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Ada Human")
    git(root, "config", "user.email", "ada@example.com")
    (root / "kernel.metal").write_text("// kernels\n")
    (root / "README").write_text("hello\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root
