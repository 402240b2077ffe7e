"""Portable runs: a worktree rebuilt in another checkout from base commit + diff, idempotently."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.errors import SandboxError
from metalport.store.portable import capture, needs_relocation, relocate
from tests.fleet.conftest import git


def _repo(path: Path) -> str:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "kernel.metal").write_text("// base\n")
    git(path, "add", "-A")
    git(path, "-c", "user.name=F", "-c", "user.email=f@localhost", "commit", "-qm", "base")
    return git(path, "rev-parse", "HEAD").strip()


def _state(run_id: str, origin: Path, base: str) -> dict:
    return {"run_id": run_id, "op": "aten::heaviside", "repo_root": str(origin), "options": {"base": "HEAD"},
            "worktree": {"repo_root": str(origin), "path": str(origin / "gone"), "branch": "metalport/heaviside",
                         "base_commit": base, "run_id": run_id, "base_dirty": False, "reused_branch": False}}


def test_worktree_rebuilt_from_base_and_diff_and_a_half_made_one_is_reset(tmp_path: Path) -> None:
    base = _repo(tmp_path / "origin")
    git(tmp_path, "clone", "-q", str(tmp_path / "origin"), str(tmp_path / "here"))
    here = tmp_path / "here"
    diff = ("diff --git a/kernel.metal b/kernel.metal\n--- a/kernel.metal\n+++ b/kernel.metal\n@@ -1 +1,2 @@\n"
            " // base\n+kernel void heaviside() {}\n"
            "diff --git a/new.h b/new.h\nnew file mode 100644\n--- /dev/null\n+++ b/new.h\n@@ -0,0 +1 @@\n+// new\n")
    values = _state("heaviside-1", tmp_path / "origin", base)
    assert needs_relocation(values, here)

    update = relocate(values, here, {"base_commit": base, "diff": diff, "host": "mac-1"})
    tree = Path(update["worktree"]["path"])
    assert update["repo_root"] == str(here) and tree.is_relative_to(here / ".git" / "metalport" / "worktrees")
    assert (tree / "kernel.metal").read_text() == "// base\nkernel void heaviside() {}\n"
    assert (tree / "new.h").read_text() == "// new\n"
    assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "metalport/heaviside"
    assert not needs_relocation({**values, **update}, here)
    assert capture(update["worktree"])[2] == git(tree, "diff", "--binary", base)

    # A resume that died while rebuilding left a half-made worktree: it is reset to base + diff.
    (tree / "kernel.metal").write_text("// half\n")
    (tree / "junk.txt").write_text("left over\n")
    again = relocate(values, here, {"base_commit": base, "diff": diff, "host": "mac-1"})
    assert again["worktree"]["path"] == str(tree)
    assert (tree / "kernel.metal").read_text() == "// base\nkernel void heaviside() {}\n"
    assert not (tree / "junk.txt").exists() and (tree / "new.h").read_text() == "// new\n"


def test_a_worktree_without_a_recorded_diff_is_not_rebuilt(tmp_path: Path) -> None:
    base = _repo(tmp_path / "origin")
    git(tmp_path, "clone", "-q", str(tmp_path / "origin"), str(tmp_path / "here"))
    with pytest.raises(SandboxError, match="has a worktree on another machine and no recorded diff"):
        relocate(_state("heaviside-2", tmp_path / "origin", base), tmp_path / "here", None)
    with pytest.raises(SandboxError, match="base commit 0123456789ab of run heaviside-3 is not in this checkout"):
        relocate(_state("heaviside-3", tmp_path / "origin", "0123456789ab" * 3 + "0123"), tmp_path / "here",
                 {"base_commit": "0123456789ab" * 3 + "0123", "diff": "", "host": "x"})
