"""The PR bundle: `git format-patch` output, `PR.md` and `evidence.json`, for a human to send."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import git

from metalport.atomic import write_text_atomic
from metalport.errors import PublishError
from metalport.sandbox.worktree import Worktree


def write_bundle(worktree: Worktree, dest: Path, *, title: str, body: str,
                 evidence: Mapping[str, object]) -> Path:
    """Write the bundle of the branch's commits since the base into `dest` and return it.

    `dest/patches/*.patch`, `dest/PR.md` (title and body) and `dest/evidence.json` (sorted keys).
    Rewriting a bundle replaces its patches, so a retry leaves no stale ones. Raises PublishError
    when the branch has no commit since the base.
    """
    repo = git.Repo(worktree.path)
    if not list(repo.iter_commits(f"{worktree.base_commit}..HEAD")):
        raise PublishError(f"{worktree.branch}: no commit since base {worktree.base_commit[:12]}",
                           hint="commit the run before writing its bundle")
    patches = dest / "patches"
    patches.mkdir(parents=True, exist_ok=True)
    for stale in patches.glob("*.patch"):
        stale.unlink()
    repo.git.format_patch("-o", str(patches), f"{worktree.base_commit}..HEAD")
    for patch in patches.glob("*.patch"):
        patch.chmod(0o600)  # every file of a run folder is the user's alone, like run.json
    write_text_atomic(dest / "PR.md", f"# {title}\n\n{body.rstrip()}\n")
    write_text_atomic(dest / "evidence.json", json.dumps(dict(evidence), indent=2, sort_keys=True, default=str) + "\n")
    return dest
