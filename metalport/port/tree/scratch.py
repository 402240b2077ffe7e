"""Scratch worktrees: a detached worktree of a checkout at a commit, for planning or checking a
port on a tree without touching the user's (family plans, reuse checks)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from metalport.errors import MetalportError

GIT = ("git", "-c", "user.name=metalport", "-c", "user.email=metalport@localhost", "-c", "commit.gpgsign=false")


def git(cwd: Path, *argv: str) -> str:
    """git's stdout; MetalportError naming the command and folder when it fails."""
    proc = subprocess.run([*GIT, *argv], cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise MetalportError(f"git {argv[0]} failed in {cwd}: {proc.stderr.strip()[:200]}",
                             hint="check that the checkout is a git repository with a commit")
    return proc.stdout


@contextmanager
def scratch(root: Path, commit: str = "HEAD") -> Iterator[Path]:
    """A detached scratch worktree of `root` at `commit`, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="metalport-family-") as tmp:
        path = Path(tmp) / "tree"
        git(root, "worktree", "add", "-q", "--detach", str(path), commit)
        try:
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=root, capture_output=True,
                           timeout=120)
