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

import json
import subprocess
from dataclasses import dataclass
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
    the patch series and the run folder's evidence (in the store, or pushed to the artifacts remote:
    Note [artifact refs]), so a reviewer anywhere needs no worker's disk."""
    host = store.settings.host_name()
    at_gate = record.status == "awaiting-review"
    if at_gate:  # the record last: a reviewer who sees the run at the gate finds its artifacts there
        store.fence(record.run_id)
    else:
        store.put(record, host)
    captured = capture(values.get("worktree") or {})
    if captured is not None:
        store.put_portable(record.run_id, *captured, host=host)
    plan = directory / "plan.json"
    if values.get("plan") and plan.is_file():
        store.put_file(record.run_id, "plan.json", plan.read_text(encoding="utf-8"))
    if at_gate:
        _share_artifacts(store, record, values, directory)
        store.put(record, host)


def _share_artifacts(store: RunStore, record: RunRecord, values: dict, directory: Path) -> None:
    """The patch series and the run folder, to the artifacts remote or else the database."""
    made = change_commit(values.get("worktree") or {}, record)
    if made is None:
        return
    path, commit = made
    series = _format_patch(path, commit)
    files = {p.relative_to(directory).as_posix(): p.read_bytes()
             for p in sorted(directory.rglob("*")) if p.is_file() and not p.name.startswith(".")}
    remote = store.settings.artifacts_remote
    if remote:
        from metalport.errors import MetalportError
        from metalport.store import gitremote

        try:
            evidence = gitremote.evidence_commit(path, files, series, f"[metalport] evidence of run {record.run_id}"
                                                 f" ({record.op})\n\nMetalport-Run: {record.run_id}\n")
            where = gitremote.push_artifacts(Path(values.get("repo_root") or path), path, remote, record.run_id,
                                             commit, evidence)
        except MetalportError as err:  # the remote down (or refused): the database keeps them instead
            import sys

            print(f"metalport: {err}; run {record.run_id}'s artifacts go to the database instead", file=sys.stderr,
                  flush=True)
        else:
            store.drop_files(record.run_id, EVIDENCE_PREFIX)
            store.drop_files(record.run_id, PATCH_FILE)
            store.put_file(record.run_id, gitremote.POINTER_FILE, json.dumps(where))
            return
    from metalport.store.gitremote import POINTER_FILE

    store.drop_files(record.run_id, POINTER_FILE)
    store.put_file(record.run_id, PATCH_FILE, series)
    for name, data in files.items():
        store.put_file(record.run_id, EVIDENCE_PREFIX + name, data[-_EVIDENCE_MAX:].decode("utf-8", errors="replace"))


def change_commit(worktree: dict, record: RunRecord) -> tuple[Path, str] | None:
    """(worktree path, a commit of the worktree's change on its base), made on a scratch index with no
    ref moved; None when the worktree is not on this machine."""
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
    return path, commit


def _format_patch(path: Path, commit: str) -> str:
    return subprocess.run(["git", "format-patch", "-1", "--stdout", "--binary", commit], cwd=path,
                          capture_output=True, text=True, check=True).stdout


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
    if not _has_commit(git.Repo(root), base):
        # The run's change ref on the artifacts remote carries its base (Note [artifact refs]).
        from metalport.store import gitremote
        from metalport.store.settings import load_settings

        gitremote.fetch_change(root, run_id, load_settings(root).artifacts_remote)
    if values.get("base_root"):
        update["base_root"] = str(base_root(root, run_id, base))
    if not worktree:
        return update
    if portable is None:
        raise SandboxError(f"run {run_id} has a worktree on another machine and no recorded diff",
                           hint="resume it on the machine that holds it")
    repo = git.Repo(root)
    if not _has_commit(repo, base):
        raise SandboxError(f"{root}: base commit {base[:12]} of run {run_id} is not in this checkout",
                           hint="`git fetch` the branch it was made from (or set fleet.artifacts_remote), then resume")
    rebuilt = _rebuild(repo, root, op, run_id, base, portable["diff"])
    update["worktree"] = {**worktree_to_dict(rebuilt), "reused_branch": bool(worktree.get("reused_branch"))}
    return update


def _has_commit(repo: git.Repo, sha: str) -> bool:
    return git.Git(repo.working_dir).execute(["git", "cat-file", "-e", f"{sha}^{{commit}}"], with_exceptions=False,
                                            with_extended_output=True)[0] == 0


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


@dataclass(frozen=True)
class StoredArtifacts:
    """What a worker stored at the gate, read from the database or the artifacts remote."""

    where: str  # "the shared store" or "git remote URL (ref)"
    files: list[tuple[str, int]]  # (evidence file, bytes)
    series: str  # the patch series
    commit: str | None = None  # the fetched evidence commit (git remote), else None

    def read(self, root: Path, store: RunStore, run_id: str, name: str) -> str | None:
        """One stored file: the patch series or an evidence file."""
        from metalport.store import gitremote

        if name == PATCH_FILE:
            return self.series
        if self.commit is not None:
            return gitremote.read(root, self.commit, f"evidence/{name}")
        return store.get_file(run_id, EVIDENCE_PREFIX + name)


def stored_artifacts(root: Path, store: RunStore, run_id: str) -> StoredArtifacts | None:
    """The run's artifacts stored at the gate (Note [artifact refs]), or None (not a shared run at the
    gate). From a git remote they are fetched into this checkout first: ArtifactsUnreachable when it cannot."""
    from metalport.store import gitremote

    where = gitremote.pointer(store, run_id)
    if where is not None:
        ref = where["evidence_ref"]
        commit = gitremote.fetch(root, where, ref, store.settings.artifacts_remote)
        series = gitremote.read(root, commit, gitremote.SERIES_NAME) or ""
        shown = gitremote.shown_url(root, store.settings.artifacts_remote or where["remote"])
        return StoredArtifacts(f"git remote {shown} ({ref})", gitremote.listing(root, commit), series, commit)
    series = store.get_file(run_id, PATCH_FILE)
    if series is None:
        return None
    files = [(name.removeprefix(EVIDENCE_PREFIX), size) for name, size in store.files(run_id, EVIDENCE_PREFIX)]
    return StoredArtifacts("the shared store", files, series)
