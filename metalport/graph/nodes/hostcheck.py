"""hostcheck: every `.mm` the edit touched type-checks as Objective-C++ (off a Mac), its base
version first (Note [host baseline] in metalport/hostcheck/port.py); errors go to diagnose."""

from __future__ import annotations

from pathlib import Path

from metalport.graph.nodes._common import load_worktree, verdicts_with
from metalport.graph.state import PortState


def hostcheck(state: PortState) -> dict:
    """Compile the touched host files with -fsyntax-only; a base gap is a note, not a failure."""
    from metalport.hostcheck.port import check_port

    base = Path(state.get("base_root") or state["repo_root"])
    result = check_port(base, load_worktree(state).path)
    return {"stage": "hostcheck", "failures": [f.to_dict() for f in result.failures], "failure_stage": "hostcheck",
            "verdicts": verdicts_with(state, "hostcheck", result.verdict())}
