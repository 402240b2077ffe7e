"""The migration pipeline: a LangGraph graph from resolve to a human gate to publish, and its runs.

The names are loaded on first use (PEP 562), so commands that only read run records or statuses
(`metalport runs`, `--help`, shell completion) do not pay for importing LangGraph.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "Abort": "records", "Approve": "records", "Decision": "records", "Reject": "records", "RunOptions": "records",
    "RunRecord": "records", "get_run": "records", "list_runs": "records", "run_dir": "records",
    "prune_runs": "prune", "resume_run": "runs", "start_run": "runs",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
