"""Graph tests: fixture checkouts (ours, and clones of the wheel workspace), git and CLI helpers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixture_repo import make_fixture_checkout
from tests.publish.conftest import github  # noqa: F401  (fixture re-export)

REPO_ROOT = Path(__file__).resolve().parents[2]


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` and return its stdout."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def branches(repo: Path) -> list[str]:
    """Local branch names."""
    return git(repo, "branch", "--format=%(refname:short)").split()


def worktrees(repo: Path) -> int:
    """How many worktrees git knows (the main one included)."""
    return git(repo, "worktree", "list", "--porcelain").count("worktree ")


def user_tree(repo: Path) -> tuple[str, str, str]:
    """What must never change under a run: status, index and HEAD of the user's tree."""
    return (git(repo, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
            git(repo, "diff", "--cached"), git(repo, "rev-parse", "HEAD"))


def commits_on(repo: Path, branch: str, base: str = "main") -> list[str]:
    """Subjects of the commits on `branch` since `base`."""
    return git(repo, "log", "--format=%s", f"{base}..{branch}").splitlines()


@pytest.fixture
def fixture_repo(tmp_path: Path) -> Path:
    """Our fixture checkout (heaviside on MPSGraph, with legacy .mm code and an xfail entry), with a
    git identity for the commits tests add."""
    root = make_fixture_checkout(tmp_path).root
    git(root, "config", "user.name", "Fixture")
    git(root, "config", "user.email", "fixture@localhost")
    return root


@pytest.fixture
def wheel_repo(tmp_path: Path) -> Path:
    """A fresh wheel workspace (`metalport workspace init`): no .mm/.metal sources, branch main."""
    from metalport.checkout import init_workspace

    return init_workspace(tmp_path / "workspace").root


def metalport(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m metalport ARGS` in a subprocess (for kill tests and exit codes)."""
    return subprocess.run([sys.executable, "-m", "metalport", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO_ROOT, env={**os.environ, **(env or {})})


@pytest.fixture
def no_github_token(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Runs publish without a token unless a test sets one."""
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    yield
