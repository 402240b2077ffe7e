"""The base tree a run plans and checks against: the user's checkout when it is the base, else a
detached snapshot of the base commit.

The user's work tree may be dirty or at another commit than `--base`; planning from it would put
the plan's line numbers and anchors out of step with the worktree (which starts from the base
commit). Then a detached worktree of the base commit is made under
`<git-common-dir>/metalport/base/<run-id>` and removed when the run ends.
"""

from __future__ import annotations

from pathlib import Path

import git

from metalport.errors import SandboxError


def base_root(repo_root: Path, run_id: str, base: str) -> Path:
    """The tree of commit `base`: `repo_root` itself when clean and at `base`, else a snapshot."""
    repo = git.Repo(repo_root)
    try:
        commit = repo.commit(base).hexsha
    except (git.BadName, ValueError) as err:
        raise SandboxError(f"{repo_root}: base {base!r} is not a commit",
                           hint="pass --base with a branch, tag or commit") from err
    if repo.head.is_valid() and repo.head.commit.hexsha == commit and not repo.is_dirty(untracked_files=False):
        return Path(repo_root)
    snapshot = snapshot_path(repo, run_id)
    if snapshot.is_dir() and git.Repo(snapshot).head.commit.hexsha == commit:
        return snapshot
    remove_snapshot(repo_root, run_id)
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    repo.git.worktree("add", "--detach", "-q", str(snapshot), commit)
    return snapshot


def snapshot_path(repo: git.Repo, run_id: str) -> Path:
    """Where the run's base snapshot lives."""
    return Path(repo.common_dir).resolve() / "metalport" / "base" / run_id


def remove_snapshot(repo_root: Path, run_id: str) -> None:
    """Remove the run's base snapshot, if any (idempotent)."""
    repo = git.Repo(repo_root)
    path = snapshot_path(repo, run_id)
    if path.exists():
        repo.git.worktree("remove", "--force", str(path))
    repo.git.worktree("prune")
