"""`PortState`: the one typed state of a migration run, as stored in the checkpoints.

Everything is plain JSON-ready data (the plan is `PortPlan.to_dict()`, failures are
`Failure.to_dict()`), so a new process resumes a run without unregistered types. Nothing that can
be derived is stored: changed files and the diff come from `git diff` in the worktree.
"""

from __future__ import annotations

from typing import TypedDict

TERMINAL_STATUSES = frozenset({"failed", "rejected", "published", "aborted", "budget-exhausted", "needs-llm",
                               "base-broken"})
# What `metalport runs prune` removes by default: ended runs without a result or a decision worth
# keeping (sweeps remember rejections, and published runs point at their PR).
PRUNABLE_DEFAULT = ("failed", "aborted", "needs-llm", "budget-exhausted", "base-broken")


class PortState(TypedDict, total=False):
    """The state of one run; nodes return only the keys they change."""

    run_id: str
    op: str  # "aten::heaviside"
    repo_root: str  # the user's repository (top level)
    base_root: str  # the base commit's tree: repo_root, or a snapshot when the user's tree differs
    options: dict  # RunOptions as a dict
    resolution: dict  # the op's rows, backlog status, family, stub, MPS impl, xfails
    plan: dict  # PortPlan.to_dict() (of a family port: its first member's)
    family: dict  # FamilyPlan.to_dict() of a family port (several ops in one change); absent otherwise
    stacked_on: dict | None  # the open run whose change this run is based on (graph/nodes/_stack.py)
    rebased: dict | None  # where the approval moved the run's base and why (graph/nodes/rebase.py)
    reverify: bool  # the rebase re-planned the run: verify it again before the gate
    worktree: dict  # sandbox.Worktree fields (paths as strings)
    attempts: int  # edit attempts made so far
    stage: str  # the node the run last entered
    failures: list[dict]  # Failure dicts of the latest check/build/test/edit; [] when it passed
    failure_stage: str  # which node produced `failures`
    verdicts: dict  # node name -> verdict dict (counts, worst errors)
    feedback: str | None  # the reviewer's feedback on a rejection
    decision: str | None  # approve | reject | abort, from the gate
    usage: dict  # calls, input_tokens, output_tokens, cost_usd (over every process of the run)
    started_at: float  # epoch seconds
    paused_s: float  # seconds spent waiting at the gate (not charged to the wall-time budget)
    gate_at: float  # epoch seconds when the run reached the gate
    status: str  # running, or a terminal status (see TERMINAL_STATUSES)
    reason: str | None  # why the run ended, one line
    commit: str | None  # the run's commit sha once published
    pr_url: str | None
    bundle_path: str | None
