"""Worktrees: made under the git dir, the user's tree untouched, human branches refused, no strays."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.errors import SandboxError
from metalport.sandbox import create_worktree, remove_worktree
from tests.sandbox.conftest import git


def _snapshot(repo: Path) -> tuple[str, str, str, str]:
    return (git(repo, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
            git(repo, "diff", "--cached"), git(repo, "diff"), git(repo, "stash", "list"))


def test_create_and_remove_leave_user_tree_and_nothing_stray(repo: Path) -> None:
    (repo / "README").write_text("edited by the user\n")
    (repo / "kernel.metal").write_text("// staged\n")
    git(repo, "add", "kernel.metal")
    (repo / "scratch.txt").write_text("untracked\n")
    before = _snapshot(repo)
    branches_before = git(repo, "branch", "--list")

    wt = create_worktree(repo, "aten::heaviside", "run-1")
    assert wt.path == (repo / ".git" / "metalport" / "worktrees" / "run-1").resolve()
    assert wt.branch == "metalport/heaviside" and not wt.reused_branch
    assert wt.base_commit == git(repo, "rev-parse", "HEAD").strip()
    assert wt.base_dirty
    assert wt.dirty_note() == (f"{repo}: work tree has uncommitted changes; the worktree starts "
                               f"from commit {wt.base_commit[:12]} without them")
    assert (wt.path / "README").read_text() == "hello\n"
    assert git(wt.path, "rev-parse", "--abbrev-ref", "HEAD").strip() == "metalport/heaviside"
    assert _snapshot(repo) == before

    remove_worktree(wt)
    assert _snapshot(repo) == before
    assert git(repo, "branch", "--list") == branches_before
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not (repo / ".git" / "metalport" / "worktrees").exists()


def test_clean_tree_is_not_dirty_and_worktree_is_hidden_from_status(repo: Path) -> None:
    wt = create_worktree(repo, "atan2", "run-2")
    assert not wt.base_dirty and wt.dirty_note() is None
    assert git(repo, "status", "--porcelain") == ""
    remove_worktree(wt)


def test_human_branch_is_refused(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "metalport/heaviside")
    (repo / "kernel.metal").write_text("// my own work\n")
    git(repo, "commit", "-q", "-am", "my heaviside attempt")
    sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    with pytest.raises(SandboxError) as info:
        create_worktree(repo, "heaviside", "run-3", base="main")
    assert str(info.value) == (
        f"branch 'metalport/heaviside' has commit {sha[:12]} by Ada Human <ada@example.com> that "
        "metalport did not make; rename or delete the branch yourself "
        "(`git branch -m metalport/heaviside <new>`); metalport never overwrites a human's work")
    assert git(repo, "rev-parse", "metalport/heaviside").strip() == sha
    assert not (repo / ".git" / "metalport" / "worktrees" / "run-3").exists()


def test_metalport_branch_is_reused(repo: Path) -> None:
    first = create_worktree(repo, "heaviside", "run-4")
    (first.path / "kernel.metal").write_text("// ported\n")
    git(first.path, "-c", "user.name=metalport", "-c", "user.email=metalport@localhost",
        "commit", "-q", "-am", "[MPS] Add native Metal kernel for heaviside\n\nMetalport-Run: run-4")
    remove_worktree(first, delete_branch=False)
    again = create_worktree(repo, "heaviside", "run-5", base="main")
    assert again.reused_branch and (again.path / "kernel.metal").read_text() == "// ported\n"
    remove_worktree(again)
    assert git(repo, "branch", "--list", "metalport/*") == ""


def test_bad_base_and_not_a_repo(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="base 'nope' is not a commit; pass --base"):
        create_worktree(repo, "heaviside", "run-6", base="nope")
    with pytest.raises(SandboxError, match="not a git repository"):
        create_worktree(tmp_path / "nowhere", "heaviside", "run-7")
    with pytest.raises(SandboxError, match="run id '../x' is not a safe name"):
        create_worktree(repo, "heaviside", "../x")


@pytest.mark.parametrize("op", ["_aminmax", "_foreach_add", "aten::_foreach_add.Scalar"])
def test_private_aten_ops_name_a_run_and_its_branch(repo: Path, op: str) -> None:
    from metalport.graph.records import run_dir
    from metalport.run_ids import new_run_id

    run_id = new_run_id(op.removeprefix("aten::"))
    assert run_dir(repo, run_id).name == run_id
    tree = create_worktree(repo, op, run_id, base="main")
    assert tree.branch == f"metalport/{op.removeprefix('aten::')}"
    assert git(repo, "branch", "--list", tree.branch).strip().endswith(tree.branch)
    remove_worktree(tree)


def test_a_reset_after_a_killed_driver_clears_its_index_lock_and_restores_the_base(repo: Path) -> None:
    from metalport.sandbox.worktree import reset_worktree

    wt = create_worktree(repo, "heaviside", "run-9")
    (wt.path / "README").write_text("half-edited by a killed run\n")
    (wt.path / "new.metal").write_text("// untracked\n")
    lock = Path(git(wt.path, "rev-parse", "--absolute-git-dir").strip()) / "index.lock"
    lock.write_text("")  # what `git reset` killed mid-command leaves
    reset_worktree(wt.path)
    assert not lock.exists()
    assert (wt.path / "README").read_text() == "hello\n" and not (wt.path / "new.metal").exists()
    assert git(wt.path, "status", "--porcelain") == ""
    remove_worktree(wt)


def test_a_worktree_whose_add_was_killed_is_finished_not_reused_half_checked_out(repo: Path) -> None:
    """Note [interrupted worktree add]: git keeps a worktree locked ("initializing") until its
    checkout is done; after a kill -9 inside `git worktree add` the run's next attempt gets the
    whole checkout back, and the worktree can still be removed with its branch."""
    from metalport.sandbox.worktree import settle_interrupted

    wt = create_worktree(repo, "heaviside", "run-10")
    admin = Path(git(wt.path, "rev-parse", "--absolute-git-dir").strip())
    (admin / "locked").write_text("initializing\n")  # what the killed `git worktree add` left
    (wt.path / "README").unlink()  # the part of the checkout it never wrote
    assert settle_interrupted(repo, wt.path)
    assert (wt.path / "README").read_text() == "hello\n" and not (admin / "locked").exists()
    assert git(wt.path, "status", "--porcelain") == ""
    (admin / "locked").write_text("initializing\n")  # git refuses `worktree remove --force` on it
    remove_worktree(wt)
    assert "metalport/heaviside" not in git(repo, "branch", "--list") and not wt.path.exists()


def test_a_worktree_folder_without_its_git_file_is_removed_for_the_caller_to_make_again(repo: Path) -> None:
    from metalport.sandbox.worktree import settle_interrupted

    wt = create_worktree(repo, "heaviside", "run-11")
    (wt.path / ".git").unlink()  # killed before git wrote it
    assert not settle_interrupted(repo, wt.path)
    assert not wt.path.exists()
    again = create_worktree(repo, "heaviside", "run-11")
    assert (again.path / "README").read_text() == "hello\n"
    remove_worktree(again)
