"""rebase: at approval, put the run's change on the base it will land on (Note [rebase at approval]).

Note [rebase at approval]: a published change never depends on one nobody approved, and two
runs of sibling ops never leave their bundles to conflict, whichever the reviewer approves first.
At approval the run's base is recomputed: the approved change of the newest run that edits the
same `.metal`/`.mm` files and is not in the run's base (its branch head), else the run's own
base commit (the commit it was planned on, before any stacking). A run stacked on a run still
open or aborted so goes first on the plain base; the other, approved later, rebases onto it.
When the new base has the tree the run was verified on (the run it stacked on was approved as
it was), the change is only re-parented. Otherwise the run is re-planned on the new base and
re-verified (edit, host check, contract, build, test) and comes back to the gate with the note;
the next approval publishes it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from langgraph.config import get_stream_writer

from metalport.graph.nodes._common import load_worktree
from metalport.sandbox.worktree import reset_worktree, worktree_to_dict
from metalport.graph.nodes._stack import change_landed, drop_stack_ref, edited_files
from metalport.graph.state import PortState


def _git(cwd: Path, *argv: str) -> str:
    proc = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[:200])
    return proc.stdout.strip()


def _approved_overlap(root: Path, run_id: str, base: str, files: set[str]) -> dict | None:
    """The newest approved (published) run editing one of `files` whose commit `base` lacks."""
    from metalport.graph.nodes._stack import _stored_plan
    from metalport.graph.records import list_runs, run_dir

    for record in reversed(list_runs(root)):
        if record.run_id == run_id or record.status != "published" or not record.branch:
            continue
        stored = _stored_plan(run_dir(root, record.run_id))
        shared = sorted(files & edited_files(*stored)) if stored else []
        if not shared:
            continue
        try:
            commit = _git(root, "rev-parse", f"refs/heads/{record.branch}")
        except RuntimeError:
            continue
        if not change_landed(root, commit, base):
            return {"run_id": record.run_id, "op": record.op, "status": "published", "commit": commit,
                    "files": shared}
    return None


def rebase_target(root: Path, state: PortState) -> tuple[str, dict | None, str] | None:
    """(new base commit, the run it stacks on then or None, why) when the run's base must move;
    None when its current base is already where it lands (Note [rebase at approval])."""
    from metalport.graph.records import get_run

    worktree = load_worktree(state)
    stacked = state.get("stacked_on") or None
    own_base = (stacked or {}).get("base_commit") or worktree.base_commit
    files = edited_files(state.get("plan") or {}, state.get("family"))
    approved = _approved_overlap(root, state["run_id"], own_base, files)
    if stacked and approved is None:
        try:
            status = get_run(root, stacked["run_id"]).status
        except Exception:  # its record is gone (pruned): its change is not coming
            status = "gone"
        why = {"awaiting-review": "is still waiting for review", "gone": "has no record any more"}.get(
            status, f"ended {status}")
        target, onto, reason = own_base, None, (f"run {stacked['run_id']} ({stacked['op']}), which this run was "
                                                f"based on, {why}: this change goes first on the base")
    elif approved is not None:
        target, onto = approved["commit"], approved
        reason = (f"run {approved['run_id']} ({approved['op']}) was approved with a change to "
                  f"{', '.join(approved['files'])}: this change goes on top of it")
    else:
        return None
    if target == worktree.base_commit:
        return None
    return target, onto, reason


def rebase(state: PortState) -> dict:
    """Re-parent the approved change onto its new base, or re-plan it there for re-verification."""
    root = Path(state["repo_root"])
    found = rebase_target(root, state)
    if found is None:
        return {"stage": "rebase", "reverify": False}
    target, onto, reason = found
    worktree = load_worktree(state)
    own_base = (state.get("stacked_on") or {}).get("base_commit") or worktree.base_commit
    drop_stack_ref(root, state["run_id"])
    if onto is not None:
        onto = {**onto, "base_commit": own_base}
    same_tree = _git(worktree.path, "rev-parse", f"{worktree.base_commit}^{{tree}}") == \
        _git(worktree.path, "rev-parse", f"{target}^{{tree}}")
    moved = worktree_to_dict(worktree) | {"base_commit": target}
    options = {**state["options"], "base": target}
    rebased = {"onto": target, "why": reason, "replanned": not same_tree}
    if same_tree:  # the verified files stand on the new base as they are
        _git(worktree.path, "reset", "-q", "--soft", target)
        get_stream_writer()({"event": "note", "node": "rebase",
                             "message": f"rebased onto {target[:12]} ({reason}); same base files, nothing to re-verify"})
        return {"stage": "rebase", "worktree": moved, "options": options, "stacked_on": onto, "rebased": rebased,
                "reverify": False}
    from metalport.sandbox.base_tree import base_root
    from metalport.graph.nodes.plan import _plan_at

    snapshot = base_root(root, state["run_id"], target)
    replanned = _plan_at({**state, "options": options}, snapshot)
    reset_worktree(worktree.path, target)
    note = (f"rebased onto {target[:12]} at approval ({reason}): re-planned there; re-verifying before the gate, "
            f"approve again to publish")
    get_stream_writer()({"event": "note", "node": "rebase", "message": note})
    return {**replanned, "stage": "rebase", "worktree": moved, "options": options, "base_root": str(snapshot),
            "stacked_on": onto, "rebased": rebased, "reverify": True, "attempts": 0, "failures": []}
