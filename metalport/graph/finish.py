"""The end of a run: its evidence written to the run folder, its worktree (and branch) removed.

Idempotent, so a resume of a run that crashed while finishing completes it. A published run keeps
its branch (it carries the commit); any other end removes the branch too, unless the branch was
reused from an earlier metalport run (its commits are not this run's to delete).
"""

from __future__ import annotations

from pathlib import Path

import git

from metalport.agent.transcript import Redactor
from metalport.atomic import write_text_atomic
from metalport.sandbox.base_tree import remove_snapshot
from metalport.graph.context import secret_env_of
from metalport.graph.evidence import full_evidence
from metalport.graph.nodes._common import load_worktree
from metalport.graph.records import write_json
from metalport.sandbox import remove_worktree


def finish_run(values: dict, directory: Path, *, keep_branch: bool) -> None:
    """Write `evidence.json` (and `diff.patch` while the worktree exists), then remove the worktree.

    Both are redacted: a secret never lands in the run folder, whatever reached the worktree."""
    directory.mkdir(parents=True, exist_ok=True)
    redactor = Redactor(secret_env=secret_env_of(_config_path(values)))
    evidence = {**full_evidence(values, values.get("commit")), "status": values.get("status"),
                "reason": values.get("reason"), "stage": values.get("stage")}
    write_json(directory / "evidence.json", redactor.any(evidence))
    if values.get("repo_root") and values.get("run_id"):
        remove_snapshot(Path(values["repo_root"]), values["run_id"])
        from metalport.graph.nodes._stack import drop_stack_ref

        drop_stack_ref(Path(values["repo_root"]), values["run_id"])  # the stack it was based on is decided
    if not values.get("worktree"):
        return
    worktree = load_worktree(values)
    if worktree.path.is_dir():
        _save_diff(worktree.path, worktree.base_commit, directory / "diff.patch", redactor)
    remove_worktree(worktree, delete_branch=not keep_branch and not worktree.reused_branch)


def _config_path(values: dict) -> Path | None:
    """The run's metalport.yaml: `--config`, else the repository's own."""
    options = values.get("options") or {}
    if options.get("config_path"):
        return Path(options["config_path"])
    return Path(values["repo_root"]) / "metalport.yaml" if values.get("repo_root") else None


def _save_diff(path: Path, base: str, target: Path, redactor: Redactor) -> None:
    repo = git.Repo(path)
    repo.git.add("-A", "-N")  # new files show in the diff (intent to add; our own worktree's index)
    write_text_atomic(target, redactor.text(repo.git.diff(base, strip_newline_in_stdout=False)))
