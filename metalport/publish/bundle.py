"""The PR bundle: `git format-patch` output, `PR.md` and `evidence.json`, for a human to send."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import git

from metalport.atomic import write_text_atomic
from metalport.errors import PublishError, fault_errno, filesystem_error, probe_errno
from metalport.run_record import finite_json
from metalport.sandbox.worktree import Worktree


def write_bundle(worktree: Worktree, dest: Path, *, title: str, body: str,
                 evidence: Mapping[str, object], extra: Mapping[str, str] | None = None) -> Path:
    """Write the bundle of the branch's commits since the base into `dest` and return it.

    `dest/patches/*.patch`, `dest/PR.md` (title and body), `dest/evidence.json` (sorted keys) and
    each `extra` file (name -> text).
    The bundle is made in a sibling folder and renamed into place, so it is whole or absent and a
    retry leaves no stale patches. Raises PublishError when the branch has no commit since the base,
    FilesystemError when the disk is full, read-only or not writable.
    """
    repo = git.Repo(worktree.path)
    if not list(repo.iter_commits(f"{worktree.base_commit}..HEAD")):
        raise PublishError(f"{worktree.branch}: no commit since base {worktree.base_commit[:12]}",
                           hint="commit the run before writing its bundle")
    staging = dest.with_name(f".{dest.name}.tmp")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "patches").mkdir(parents=True)
        repo.git.format_patch("-o", str(staging / "patches"), f"{worktree.base_commit}..HEAD")
        for patch in (staging / "patches").glob("*.patch"):
            patch.chmod(0o600)  # every file of a run folder is the user's alone, like run.json
        write_text_atomic(staging / "PR.md", f"# {title}\n\n{body.rstrip()}\n")
        write_text_atomic(staging / "evidence.json",
                          json.dumps(finite_json(dict(evidence)), indent=2, sort_keys=True, default=str) + "\n")
        for name, text in (extra or {}).items():  # e.g. the A/B benchmark script for a Mac reviewer
            write_text_atomic(staging / name, text)
        shutil.rmtree(dest, ignore_errors=True)
        staging.rename(dest)
    except (OSError, git.GitCommandError) as err:
        shutil.rmtree(staging, ignore_errors=True)  # a bundle is whole or absent, never half-written
        if isinstance(err, git.GitCommandError) and not (fault_errno(str(err)) or probe_errno(str(dest.parent))):
            raise
        raise filesystem_error(err, what="the PR bundle", path=dest.parent) from None
    return dest
