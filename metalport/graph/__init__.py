"""The migration pipeline: a LangGraph graph from resolve to a human gate to publish, and its runs."""

from metalport.graph.records import (
    Abort,
    Approve,
    Decision,
    Reject,
    RunOptions,
    RunRecord,
    get_run,
    list_runs,
    run_dir,
)
from metalport.graph.runs import resume_run, start_run

__all__ = ["Abort", "Approve", "Decision", "Reject", "RunOptions", "RunRecord", "get_run", "list_runs",
           "resume_run", "run_dir", "start_run"]
