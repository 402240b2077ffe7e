"""The run's commit in PyTorch's style, made once: a retry finds it by its `Metalport-Run` trailer.

The user's git identity authors and commits it; metalport is named in a `Generated-by` trailer
(Note [commit identity] in sandbox/worktree.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import git

from metalport.errors import PublishError
from metalport.sandbox.worktree import GENERATED_BY, METALPORT_EMAIL, METALPORT_NAME, RUN_TRAILER, Worktree


@dataclass(frozen=True)
class CommitResult:
    """The run's commit and whether this call made it (False: found from an earlier attempt)."""

    sha: str
    title: str
    created: bool
    note: str | None = None  # set when git had no identity and metalport's own was used


def commit_title(op: str, *, migrate: bool) -> str:
    """Return `[MPS] Migrate <op> to native Metal` or `[MPS] Add native Metal kernel for <op>`."""
    name = ", ".join(o.strip().removeprefix("aten::") for o in op.split(","))  # a family: "a, b, c"
    return f"[MPS] Migrate {name} to native Metal" if migrate else f"[MPS] Add native Metal kernel for {name}"


def find_run_commit(worktree: Worktree, run_id: str) -> str | None:
    """Return the sha of the commit on the worktree's branch carrying `run_id`'s trailer, if any."""
    repo = git.Repo(worktree.path)
    for commit in repo.iter_commits(f"{worktree.base_commit}..HEAD"):
        if f"{RUN_TRAILER}: {run_id}" in str(commit.message).splitlines():
            return commit.hexsha
    return None


def user_identity(repo: git.Repo) -> tuple[str, str] | None:
    """(name, email) of the author git itself would use in `repo` (`git var GIT_AUTHOR_IDENT`:
    `GIT_AUTHOR_*`, `GIT_CONFIG_GLOBAL`, the repository's and the global config, as git resolves
    them), or None when git has no identity."""
    try:
        ident = repo.git.var("GIT_AUTHOR_IDENT")
        repo.git.var("GIT_COMMITTER_IDENT")
    except git.GitCommandError:
        return None
    match = _IDENT.match(ident.strip())
    return (match.group(1).strip(), match.group(2).strip()) if match else None


_IDENT = re.compile(r"^(.*?)\s*<([^>]*)>")
NO_IDENTITY_NOTE = (f"git has no identity here, so the commit is authored {METALPORT_NAME} <{METALPORT_EMAIL}>; "
                    "set yours (`git config --global user.name NAME`, `git config --global user.email EMAIL`) "
                    "before sending it upstream, and amend with `git commit --amend --reset-author`")


def commit_run(worktree: Worktree, op: str, *, migrate: bool, evidence: Mapping[str, object]) -> CommitResult:
    """Commit every change of the worktree as the user, with the evidence in the body.

    Idempotent: when the branch already has the run's commit, return it. Raises PublishError when
    there is nothing to commit.
    """
    title = commit_title(op, migrate=migrate)
    found = find_run_commit(worktree, worktree.run_id)
    if found:
        return CommitResult(found, title, False)
    repo = git.Repo(worktree.path)
    repo.git.add("-A")
    if not repo.git.diff("--cached", "--name-only"):
        raise PublishError(f"{worktree.path}: run {worktree.run_id} has no changes to commit",
                           hint="check the edit step's output")
    body = "\n".join(f"{key}: {value}" for key, value in evidence.items())
    message = f"{title}\n\n{body}\n\n{GENERATED_BY}\n{RUN_TRAILER}: {worktree.run_id}\n"
    note = None
    identity: dict[str, str] = {}
    if user_identity(repo) is None:  # else git resolves the identity itself, as for the user's own commits
        identity = {"GIT_AUTHOR_NAME": METALPORT_NAME, "GIT_AUTHOR_EMAIL": METALPORT_EMAIL,
                    "GIT_COMMITTER_NAME": METALPORT_NAME, "GIT_COMMITTER_EMAIL": METALPORT_EMAIL}
        note = NO_IDENTITY_NOTE
    with repo.git.custom_environment(**identity):
        repo.git.commit("--no-verify", "-q", "--cleanup=whitespace", "-m", message)
    return CommitResult(repo.head.commit.hexsha, title, True, note)

