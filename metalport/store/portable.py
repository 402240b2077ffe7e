"""Portable runs: a run's worktree as base commit + diff, rebuilt on whichever machine resumes it.

Note [portable runs]: with a shared database, every record write also stores the worktree's diff
against its base commit (`share_record`). The checkpoint keeps the absolute paths of the machine
that made it; a resume in another checkout (`needs_relocation`) rebuilds the worktree there and
rewrites those paths with `update_state` before the graph goes on. Only `edit` changes the
worktree and the diff is re-read when the next step starts, so a kill between the two loses at
most the edit of the step that was interrupted anyway.

`capture` reads the worktree (new files included, binary-safe) after every step; `relocate` makes
the worktree in this checkout when the checkpoint's worktree belongs to another one, and returns
the state update that points the run at it. Relocation is idempotent: a half-made worktree found
here (a resume that died while rebuilding) is put back to base + diff, never reused as it is.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import git

from metalport.errors import SandboxError
from metalport.run_record import RunRecord
from metalport.sandbox import create_worktree
from metalport.sandbox.worktree import Worktree, branch_name, worktree_to_dict, worktrees_dir

if TYPE_CHECKING:
    from metalport.store.pg import RunStore


PATCH_FILE = "patch-series.mbox"  # the run's change as `git format-patch` output, stored at the gate
EVIDENCE_PREFIX = "evidence/"  # run-folder files stored at the gate, under this prefix
_EVIDENCE_MAX = 2_000_000  # bytes of one run-folder file kept in the store (build logs are cut to their end)


def share_record(store: RunStore, record: RunRecord, values: dict, directory: Path) -> None:
    """Put the record, the worktree's base + diff and the plan in the shared store; at the gate also
    the patch series and the run folder's evidence, so a reviewer anywhere needs no worker's disk."""
    host = store.settings.host_name()
    store.put(record, host)
    captured = capture(values.get("worktree") or {})
    if captured is not None:
        store.put_portable(record.run_id, *captured, host=host)
    plan = directory / "plan.json"
    if values.get("plan") and plan.is_file():
        store.put_file(record.run_id, "plan.json", plan.read_text(encoding="utf-8"))
    if record.status == "awaiting-review":
        series = patch_series(values.get("worktree") or {}, record)
        if series is not None:
            store.put_file(record.run_id, PATCH_FILE, series)
        for path in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".")):
            data = path.read_bytes()
            text = data[-_EVIDENCE_MAX:].decode("utf-8", errors="replace")
            store.put_file(record.run_id, EVIDENCE_PREFIX + path.relative_to(directory).as_posix(), text)


def patch_series(worktree: dict, record: RunRecord) -> str | None:
    """The worktree's change as one `git format-patch` mail (a commit made on a scratch index, no ref
    moved), or None when the worktree is not on this machine."""
    import os
    import tempfile

    path = Path(worktree.get("path", ""))
    if not worktree or not path.is_dir():
        return None
    base = worktree["base_commit"]
    with tempfile.TemporaryDirectory(prefix="metalport-index-") as scratch:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(scratch) / "index"), "GIT_AUTHOR_NAME": "metalport",
               "GIT_AUTHOR_EMAIL": "metalport@localhost", "GIT_COMMITTER_NAME": "metalport",
               "GIT_COMMITTER_EMAIL": "metalport@localhost"}

        def run(*args: str) -> str:
            return subprocess.run(["git", *args], cwd=path, env=env, capture_output=True, text=True,
                                  check=True).stdout

        run("read-tree", base)
        run("add", "-A")
        tree = run("write-tree").strip()
        message = f"[metalport] {record.op} (run {record.run_id}, awaiting review)\n\nMetalport-Run: {record.run_id}\n"
        commit = subprocess.run(["git", "commit-tree", tree, "-p", base, "-F", "-"], cwd=path, env=env, input=message,
                                capture_output=True, text=True, check=True).stdout.strip()
        return run("format-patch", "-1", "--stdout", "--binary", commit)


def capture(worktree: dict) -> tuple[str, str, str] | None:
    """(base commit, branch, diff) of the state's worktree, or None when it is not on this machine."""
    path = Path(worktree.get("path", ""))
    if not worktree or not path.is_dir():
        return None
    repo = git.Repo(path)
    repo.git.add("-A", "-N")  # new files show in the diff (intent to add; our own worktree's index)
    diff = repo.git.diff("--binary", worktree["base_commit"], strip_newline_in_stdout=False)
    return worktree["base_commit"], worktree["branch"], diff


def needs_relocation(values: dict, root: Path) -> bool:
    """True when the checkpoint's run lives in another checkout than `root` (or its worktree is gone)."""
    if Path(values.get("repo_root", "")).resolve() != root.resolve():
        return True
    worktree = values.get("worktree") or {}
    return bool(worktree) and not Path(worktree.get("path", "")).is_dir()


def relocate(values: dict, root: Path, portable: dict | None) -> dict:
    """The state update moving the run to checkout `root`, its worktree rebuilt there from `portable`.

    Raises SandboxError when the run has a worktree but no portable record, or the base commit is
    not in this checkout.
    """
    from metalport.sandbox.base_tree import base_root

    run_id, op = values["run_id"], values["op"]
    options = dict(values.get("options") or {})
    update: dict = {"repo_root": str(root), "options": {**options, "config_path": None}}
    worktree = values.get("worktree") or {}
    base = (portable or {}).get("base_commit") or worktree.get("base_commit") or options.get("base", "HEAD")
    if values.get("base_root"):
        update["base_root"] = str(base_root(root, run_id, base))
    if not worktree:
        return update
    if portable is None:
        raise SandboxError(f"run {run_id} has a worktree on another machine and no recorded diff",
                           hint="resume it on the machine that holds it")
    repo = git.Repo(root)
    try:
        repo.commit(base)
    except (git.BadName, ValueError):
        raise SandboxError(f"{root}: base commit {base[:12]} of run {run_id} is not in this checkout",
                           hint="`git fetch` the branch it was made from, then resume") from None
    rebuilt = _rebuild(repo, root, op, run_id, base, portable["diff"])
    update["worktree"] = {**worktree_to_dict(rebuilt), "reused_branch": bool(worktree.get("reused_branch"))}
    return update


def _rebuild(repo: git.Repo, root: Path, op: str, run_id: str, base: str, diff: str) -> Worktree:
    path = worktrees_dir(repo) / run_id
    branch = branch_name(op)
    if path.is_dir():
        tree = git.Repo(path)
        if tree.head.is_detached or tree.active_branch.name != branch:
            raise SandboxError(f"{path}: a worktree of run {run_id} is not on {branch}",
                               hint=f"remove it with `git worktree remove --force {path}` and resume")
        tree.git.reset("--hard", "-q", base)
        tree.git.clean("-fdq")
        worktree = Worktree(Path(repo.working_dir), path, branch, base, run_id, False, False)
    else:
        worktree = create_worktree(root, op, run_id, base=base)
        tree = git.Repo(path)
        if tree.head.commit.hexsha != base:  # an earlier metalport branch of the op: start from the run's base
            tree.git.reset("--hard", "-q", base)
        worktree = Worktree(worktree.repo_root, path, branch, base, run_id, worktree.base_dirty, worktree.reused_branch)
    if diff.strip():
        done = subprocess.run(["git", "apply", "--binary", "--whitespace=nowarn", "-"], cwd=path, input=diff,
                              text=True, capture_output=True, check=False)
        if done.returncode != 0:
            raise SandboxError(f"{path}: the recorded diff of run {run_id} does not apply: "
                               f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}",
                               hint="resume it on the machine that holds it")
    return worktree
