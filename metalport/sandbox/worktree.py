"""The run's git worktree: branch `metalport/<op>` under `<git-common-dir>/metalport/worktrees/<run-id>`.

Only `git worktree` and `git branch` touch the user's repository: its work tree and index are
never read for writing, stashed or reset.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import git

from metalport.errors import SandboxError, fault_errno, filesystem_error, probe_errno
from metalport.run_ids import is_run_id

METALPORT_NAME = "metalport"
METALPORT_EMAIL = "metalport@localhost"
METALPORT_IDENTITY = f"{METALPORT_NAME} <{METALPORT_EMAIL}>"
RUN_TRAILER = "Metalport-Run"
# Note [commit identity]: the user who approved a port authors and commits it (PyTorch's CLA check
# reads the commit's author); metalport is named in a trailer, not as a co-author, which the CLA
# check would ask to sign too.
GENERATED_TRAILER = "Generated-by"
GENERATED_BY = f"{GENERATED_TRAILER}: {METALPORT_IDENTITY}"


@dataclass(frozen=True)
class Worktree:
    """A run's worktree: where it is, its branch, the base commit and whether the base tree was dirty."""

    repo_root: Path
    path: Path
    branch: str
    base_commit: str
    run_id: str
    base_dirty: bool
    reused_branch: bool

    def dirty_note(self) -> str | None:
        """One line for the user when their work tree had changes the worktree does not carry."""
        if not self.base_dirty:
            return None
        return (f"{self.repo_root}: work tree has uncommitted changes; the worktree starts from "
                f"commit {self.base_commit[:12]} without them")


def worktree_to_dict(worktree: Worktree) -> dict:
    """A `Worktree` as JSON data for the state."""
    data = dataclasses.asdict(worktree)
    data["repo_root"], data["path"] = str(worktree.repo_root), str(worktree.path)
    return data


def branch_name(op: str) -> str:
    """Return the branch of a run on `op` (`aten::` dropped)."""
    name = op.removeprefix("aten::")
    if not re.fullmatch(r"[A-Za-z0-9_.]+", name):
        raise SandboxError(f"op name {op!r} cannot name a branch", hint="use an ATen op name like heaviside")
    return f"metalport/{name}"


def worktrees_dir(repo: git.Repo) -> Path:
    """Return `<git-common-dir>/metalport/worktrees`, outside every work tree."""
    # Not `rev-parse --git-common-dir`: it answers relative to the top level, not to our cwd.
    return Path(repo.common_dir).resolve() / "metalport" / "worktrees"


def create_worktree(repo_root: Path | str, op: str, run_id: str, base: str = "HEAD") -> Worktree:
    """Add a worktree for `run_id` on branch `metalport/<op>` from `base` and return it.

    An existing branch is reused only when every commit on it since `base` is metalport's (author,
    committer and `Metalport-Run` trailer); otherwise SandboxError. A dirty base tree is reported
    through `Worktree.base_dirty`, not refused.
    """
    if not is_run_id(run_id):
        raise SandboxError(f"run id {run_id!r} is not a safe name", hint="use letters, digits, '.', '_', '-'")
    repo = _open(repo_root)
    branch = branch_name(op)
    try:
        base_commit = repo.commit(base).hexsha
    except (git.BadName, ValueError) as err:
        raise SandboxError(f"{repo.working_dir}: base {base!r} is not a commit",
                           hint="pass --base with a branch, tag or commit") from err
    target = worktrees_dir(repo) / run_id
    if target.exists():
        raise SandboxError(f"{target}: worktree for run {run_id!r} already exists",
                           hint=f"resume the run or remove it with `git worktree remove {target}`")
    exists = branch in [head.name for head in repo.heads]
    if exists:
        _check_owned(repo, branch, base_commit)
    dirty = repo.is_dirty(untracked_files=False)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if exists:
            repo.git.worktree("add", str(target), branch)
        else:
            repo.git.worktree("add", "-b", branch, str(target), base_commit)
    except (OSError, git.GitCommandError) as err:
        _undo_add(repo, target, branch if not exists else None)
        number = err.errno if isinstance(err, OSError) else fault_errno(str(err)) or _checkout_fault(
            repo, target.parent, base_commit)
        if number:
            raise filesystem_error(OSError(number, str(err)), what=f"the worktree of {branch}",
                                   path=target.parent) from None
        raise SandboxError(f"{target}: git worktree add failed: {_last_line(err)}", hint=_add_hint(err)) from None
    return Worktree(Path(repo.working_dir), target, branch, base_commit, run_id, dirty, exists)


def _checkout_fault(repo: git.Repo, folder: Path, base_commit: str) -> int | None:
    """Why git could not write the checkout into `folder` (its messages do not say): EROFS, EACCES,
    ENOSPC when the free space is less than the base tree's files, else None."""
    found = probe_errno(str(folder))
    if found in (errno.EROFS, errno.EACCES):
        return found
    try:
        stat = os.statvfs(folder)
        needed = sum(int(line.split()[3]) for line in repo.git.ls_tree("-r", "-l", base_commit).splitlines()
                     if line.split()[3].isdigit())
    except (OSError, git.GitCommandError):
        return None
    return errno.ENOSPC if stat.f_bavail * stat.f_frsize < needed else None


def _undo_add(repo: git.Repo, target: Path, new_branch: str | None) -> None:
    """Remove what a failed `git worktree add` left: the folder, its registration, the branch it made."""
    shutil.rmtree(target, ignore_errors=True)
    try:
        repo.git.worktree("prune")
        if new_branch and new_branch in [head.name for head in repo.heads]:
            repo.git.branch("-D", new_branch)
    except git.GitCommandError:
        pass  # best effort on a disk that just failed: the error being raised names the cause
    parent = target.parent
    try:
        if parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
    except OSError:
        pass  # a folder that stays (a mount point, a read-only parent) holds nothing of ours


def _add_hint(err: git.GitCommandError) -> str:
    """The remedy for a failed `git worktree add`, from git's own words."""
    text = str(err.stderr)
    if "already checked out" in text or "already used by worktree" in text:
        return "the branch is checked out in another worktree (`git worktree list`); finish or remove that first"
    if "already registered" in text or "missing but" in text:
        return "a stale worktree entry is in the way: run `git worktree prune`"
    return "see `git worktree list` and `git branch --list 'metalport/*'`"


def remove_worktree(worktree: Worktree, *, delete_branch: bool = True) -> None:
    """Remove the worktree folder, its git entry and (by default) its branch; prune stale entries."""
    repo = _open(worktree.repo_root)
    discard_worktree(repo, worktree.path)
    if delete_branch and worktree.branch in [head.name for head in repo.heads]:
        repo.git.branch("-D", worktree.branch)
    parent = worktree.path.parent
    if parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()


def discard_worktree(repo: git.Repo, path: Path) -> None:
    """Remove the worktree at `path` and its registration, even a locked one (our worktrees are only
    ever locked by an interrupted `git worktree add`)."""
    if path.exists():
        try:
            repo.git.worktree("remove", "--force", "--force", str(path))
        except git.GitCommandError:
            shutil.rmtree(path)
    repo.git.worktree("prune")


def settle_interrupted(repo_root: Path | str, path: Path) -> bool:
    """Whether the run's worktree at `path` can be used, finishing an interrupted `git worktree add`.

    Note [interrupted worktree add]: `git worktree add` writes the folder's `.git` file, keeps the
    worktree locked ("initializing") while it checks the files out, then unlocks it. A process
    killed inside it (kill -9, a power cut) leaves the lock around a checkout that may be partial:
    files missing there would be committed as deletions, and git refuses to remove a locked
    worktree. Such a worktree is unlocked and reset to its branch (the checkout finished); one
    without its `.git` file or registration is removed (False: the caller makes it again)."""
    repo = _open(repo_root)
    entries = repo.git.worktree("list", "--porcelain").split("\n\n")
    mine = next((e.splitlines() for e in entries
                 if e.startswith("worktree ") and Path(e.splitlines()[0][9:]).resolve() == path.resolve()), None)
    if mine is None or not (path / ".git").is_file():
        discard_worktree(repo, path)
        return False
    if "locked initializing" in mine:
        repo.git.worktree("unlock", str(path))
        reset_worktree(path)
    return True


def reset_worktree(path: Path | str, target: str = "HEAD") -> None:
    """Reset the run's worktree to `target` and remove untracked files.

    Note [stale index lock]: only the process holding the run's lock (graph/records.RunLock)
    touches its worktree, and git removes its own `index.lock` when it exits; one still there was
    left by a driver killed mid-command (kill -9, a power cut), so it is removed before the reset
    instead of failing the resumed run with "Another git process seems to be running"."""
    tree = git.Repo(path)
    stale = Path(tree.git.rev_parse("--absolute-git-dir")) / "index.lock"
    stale.unlink(missing_ok=True)
    tree.git.reset("-q", "--hard", target)
    tree.git.clean("-fdq")


def _check_owned(repo: git.Repo, branch: str, base_commit: str) -> None:
    for commit in repo.iter_commits(f"{base_commit}..{branch}"):
        if not is_metalport_commit(commit):
            raise SandboxError(
                f"branch {branch!r} has commit {commit.hexsha[:12]} by {commit.author.name} "
                f"<{commit.author.email}> that metalport did not make",
                hint=f"rename or delete the branch yourself (`git branch -m {branch} <new>`); "
                     "metalport never overwrites a human's work")


def is_metalport_commit(commit: git.Commit) -> bool:
    """True when metalport made `commit`: its run trailer and its `Generated-by` trailer, or (older
    runs) its run trailer under metalport's own identity (Note [commit identity])."""
    lines = str(commit.message).splitlines()
    run = any(line.startswith(f"{RUN_TRAILER}: ") for line in lines)
    ours = GENERATED_BY in lines or (commit.author.email == METALPORT_EMAIL and commit.committer.email == METALPORT_EMAIL)
    return run and ours


def _open(repo_root: Path | str) -> git.Repo:
    try:
        return git.Repo(repo_root, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as err:
        raise SandboxError(f"{repo_root}: not a git repository",
                           hint="pass --repo with a git checkout") from err


def _last_line(err: git.GitCommandError) -> str:
    lines = [line for line in str(err.stderr).strip().splitlines() if line.strip()]
    return lines[-1].strip().strip("'") if lines else str(err.status)
