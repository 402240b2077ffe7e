"""Stacking: a run whose port edits the same kernel/host/legacy files as another open run bases
itself on that run's change instead of the shared base, so the two never conflict.

Note [stacked runs]: ports of one file insert at the same anchors (the end of a kernel file's
functors, the end of a host file's REGISTER_DISPATCH block), so two ports planned from one base
conflict when both are applied. When the plan's `.metal`/`.mm` files overlap those of a run that
is still open (at the gate, or published on its branch but not in the base), the new run plans
from that run's tree: its branch head once published, else a commit made from its worktree with a
private index (the other run's worktree, index and branch are left untouched), kept alive by
`refs/metalport/stack/<run-id>`. The run says so on screen, in its state (`stacked_on`) and in its
PR ("apply run X's change first"). At approval the base is decided again (Note [rebase at approval]
in graph/nodes/rebase.py): on the other run's approved commit (same tree: re-parented only), or on
the plain base when that run is not approved; the ref goes when the run ends or is rebased
(`drop_stack_ref`), and `prune_stack_refs` clears those of runs already decided.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

_OPEN = ("awaiting-review", "published")


def edited_files(plan: dict, family: dict | None = None) -> set[str]:
    """The `.metal`/`.mm` files a plan (or every member of a family) edits."""
    plans = list((family or {}).get("members") or ()) or [plan]
    out: set[str] = set()
    for p in plans:
        out |= {f for f in (p.get("kernel_file"), p.get("host_file")) if f}
        out |= {f for f, _ in ([p["legacy"]] if p.get("legacy") else []) + list(p.get("legacy_others") or [])}
    return {f for f in out if f.endswith((".metal", ".mm"))}


def _git(cwd: Path, *argv: str, env: dict | None = None) -> str:
    proc = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[:200])
    return proc.stdout.strip()


def _snapshot_commit(worktree: Path, message: str) -> str:
    """A commit of the worktree's current files on its HEAD, made with a private index."""
    with tempfile.TemporaryDirectory(prefix="metalport-stack-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_AUTHOR_NAME": "metalport",
               "GIT_AUTHOR_EMAIL": "metalport@localhost", "GIT_COMMITTER_NAME": "metalport",
               "GIT_COMMITTER_EMAIL": "metalport@localhost"}
        _git(worktree, "read-tree", "HEAD", env=env)
        _git(worktree, "add", "-A", env=env)
        tree = _git(worktree, "write-tree", env=env)
        return _git(worktree, "commit-tree", tree, "-p", "HEAD", "-m", message, env=env)


def change_landed(repo_root: Path, commit: str, base: str) -> bool:
    """Whether `base` holds the change of `commit` (its diff against its parent): as an ancestor,
    or with the same text (a squash merge, a `git am` of its bundle), checked by applying the
    change in reverse on `base`'s tree in a private index."""
    if subprocess.run(["git", "merge-base", "--is-ancestor", commit, base], cwd=repo_root, capture_output=True,
                      timeout=60).returncode == 0:
        return True
    try:
        patch = _git(repo_root, "diff", "--binary", f"{commit}^", commit)
        with tempfile.TemporaryDirectory(prefix="metalport-landed-") as tmp:
            env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
            _git(repo_root, "read-tree", base, env=env)
            return subprocess.run(["git", "apply", "--cached", "--check", "-R", "-"], cwd=repo_root, input=patch + "\n",
                                  capture_output=True, text=True, env=env, timeout=120).returncode == 0
    except (RuntimeError, subprocess.TimeoutExpired):
        return False


def _stored_plan(run_dir: Path) -> tuple[dict, dict | None] | None:
    path = run_dir / "plan.json"
    if not path.is_file():
        return None
    family = run_dir / "family.json"
    return (json.loads(path.read_text(encoding="utf-8")),
            json.loads(family.read_text(encoding="utf-8")) if family.is_file() else None)


def find_stack_base(repo_root: Path, run_id: str, base_commit: str, files: Iterable[str]) -> dict | None:
    """The open run to stack on: {"run_id", "op", "status", "commit", "files"}, or None.

    The newest open run (at the gate, or published and not yet in the base) whose edited
    `.metal`/`.mm` files overlap `files` wins, so a third run stacks on the second."""
    from metalport.graph.records import list_runs, run_dir

    wanted = set(files)
    if not wanted:
        return None
    for record in reversed(list_runs(repo_root)):
        published = record.status == "published" and record.branch  # its worktree is gone, its branch stays
        if record.run_id == run_id or record.status not in _OPEN or not (record.worktree or published):
            continue
        stored = _stored_plan(run_dir(repo_root, record.run_id))
        if stored is None:
            continue
        shared = sorted(wanted & edited_files(*stored))
        worktree = Path(record.worktree) if record.worktree else Path(repo_root)
        if not shared or not worktree.is_dir():
            continue
        try:
            if record.status == "published":
                commit = _git(repo_root, "rev-parse", f"refs/heads/{record.branch}")
                if change_landed(repo_root, commit, base_commit):
                    continue  # already in the base: nothing to stack on
            else:
                commit = _snapshot_commit(worktree, f"metalport: {record.op} of run {record.run_id} "
                                                    f"(awaiting review; stacked base of run {run_id})")
            _git(repo_root, "update-ref", f"refs/metalport/stack/{run_id}", commit)
        except (RuntimeError, subprocess.TimeoutExpired):
            continue
        return {"run_id": record.run_id, "op": record.op, "status": record.status, "commit": commit,
                "files": shared}
    return None


def stack_note(stacked: dict) -> str:
    """One line for the screen and the PR body."""
    what = "awaiting review" if stacked["status"] == "awaiting-review" else "published, not yet merged"
    return (f"based on run {stacked['run_id']} ({stacked['op']}, {what}) at {stacked['commit'][:12]}: both edit "
            f"{', '.join(stacked['files'])}; apply that change first, this patch applies on top of it")


STACK_REFS = "refs/metalport/stack/"


def drop_stack_ref(repo_root: Path, run_id: str) -> bool:
    """Delete the run's `refs/metalport/stack/<run-id>` (Note [stacked runs]); True when one went.

    Once the run ends (published: its branch holds the base it stacked on; aborted or failed: it
    needs it no more) or is rebased, the ref would only keep a snapshot commit alive."""
    ref = f"{STACK_REFS}{run_id}"
    found = subprocess.run(["git", "rev-parse", "-q", "--verify", ref], cwd=repo_root, capture_output=True,
                           timeout=60).returncode == 0
    if found:
        subprocess.run(["git", "update-ref", "-d", ref], cwd=repo_root, capture_output=True, timeout=60)
    return found


def prune_stack_refs(repo_root: Path) -> list[str]:
    """Delete every stack ref whose run has ended or has no record any more; the run ids."""
    from metalport.graph.records import list_runs
    from metalport.graph.state import TERMINAL_STATUSES

    listed = subprocess.run(["git", "for-each-ref", "--format=%(refname)", STACK_REFS], cwd=repo_root,
                            capture_output=True, text=True, timeout=60).stdout.split()
    open_runs = {r.run_id for r in list_runs(repo_root) if r.status not in TERMINAL_STATUSES}
    gone = [ref.removeprefix(STACK_REFS) for ref in listed if ref.removeprefix(STACK_REFS) not in open_runs]
    for run_id in gone:
        drop_stack_ref(repo_root, run_id)
    return gone
