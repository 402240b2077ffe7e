"""sandbox: the run's git worktree on branch `metalport/<op>`, made once (a re-run finds it)."""

from __future__ import annotations

from pathlib import Path

import git
from langgraph.config import get_stream_writer

from metalport.graph.state import PortState
from metalport.sandbox import create_worktree
from metalport.sandbox.worktree import Worktree, branch_name, settle_interrupted, worktree_to_dict, worktrees_dir


def sandbox(state: PortState) -> dict:
    """Create (or, after a crash inside this node, find) the worktree; report a dirty base tree."""
    repo_root, run_id, op = Path(state["repo_root"]), state["run_id"], state["op"]
    worktree = _existing(repo_root, op, run_id)
    if worktree is None:
        worktree = create_worktree(repo_root, op, run_id, base=state["options"].get("base", "HEAD"))
    note = worktree.dirty_note()
    if note:
        get_stream_writer()({"event": "note", "node": "sandbox", "message": note})
    return {"stage": "sandbox", "worktree": worktree_to_dict(worktree)}


def _existing(repo_root: Path, op: str, run_id: str) -> Worktree | None:
    repo = git.Repo(repo_root)
    path = worktrees_dir(repo) / run_id
    if not path.is_dir() or not settle_interrupted(repo_root, path):  # Note [interrupted worktree add]
        return None
    branch, tree = branch_name(op), git.Repo(path)
    if tree.head.is_detached or tree.active_branch.name != branch:
        return None
    # Before publish the branch carries no commit of this run, so its head is the base commit.
    base_commit = tree.head.commit.hexsha
    return Worktree(Path(repo.working_dir), path, branch, base_commit, run_id,
                    repo.is_dirty(untracked_files=False), False)
