"""check: the machine-checked migration contract between the base tree and the worktree."""

from __future__ import annotations

from pathlib import Path

from metalport.graph.nodes._common import load_family, load_worktree, verdicts_with
from metalport.graph.state import PortState


def check(state: PortState) -> dict:
    """Run the contract checks; their failures (if any) go to diagnose."""
    from metalport.checks.contract.family import check_family

    base = Path(state.get("base_root") or state["repo_root"])
    # each member against the tree its predecessors leave (a family of one: the op's own contract)
    failures = check_family(base, load_worktree(state).path, load_family(state))
    verdict = {"ok": not failures, "failures": len(failures),
               "first": str(failures[0]) if failures else None}
    return {"stage": "check", "failures": [f.to_dict() for f in failures], "failure_stage": "check",
            "verdicts": verdicts_with(state, "check", verdict)}
