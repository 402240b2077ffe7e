"""What a sweep decided for each op it looked at, and where its files live.

Every op the sweep looks at ends with one `OpOutcome`: an outcome from `OUTCOMES` and a reason a
person can act on. Outcomes of ops tied to a run are re-derived from the run's record whenever
the dashboard is refreshed, so a review after the sweep shows up there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import git

from metalport.errors import RepoError

CANDIDATE = "candidate"
RUNNING = "running"
AWAITING = "awaiting-review"
FAILED = "failed"
REJECTED = "rejected"
PUBLISHED = "published"
ABORTED = "aborted"
SKIPPED = "skipped"
OUTCOMES = (CANDIDATE, RUNNING, AWAITING, FAILED, REJECTED, PUBLISHED, ABORTED, SKIPPED)

# Skip kinds whose outcome follows the run they name (a later review changes them).
LIVE_SKIPS = frozenset({"in-progress", "interrupted", "awaiting-review"})


@dataclass(frozen=True)
class OpOutcome:
    """One op the sweep looked at: its outcome, why, and the run and links that go with it.

    `skip` is the kind of skip ("in-progress", "interrupted", "awaiting-review", "rejected", "published",
    "needs-llm", "branch", "open-pr") when `outcome` is "skipped"; `command` is what a person runs
    next (the review or resume command); `link` is the PR address or the bundle path.
    """

    op: str
    outcome: str
    reason: str
    ease: int | None = None
    run_id: str | None = None
    stage: str | None = None
    attempts: int | None = None
    branch: str | None = None
    command: str | None = None
    link: str | None = None
    feedback: str | None = None
    skip: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}")
        if not self.reason:
            raise ValueError(f"outcome {self.outcome} for {self.op} has no reason")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpOutcome:
        """The inverse of `to_dict`."""
        return cls(**data)


def status_of(record: Any) -> str:
    """A run record's status as its string value (enum or str)."""
    return str(getattr(record.status, "value", record.status))


def from_record(record: Any, *, ease: int | None = None, repo_flag: str = "") -> OpOutcome:
    """The outcome a run record stands for, with the reason and the next command."""
    status, stage, rid = status_of(record), record.stage, record.run_id
    common = dict(op=record.op.removeprefix("aten::"), ease=ease, run_id=rid, stage=stage,
                  attempts=record.attempts, branch=record.branch, usage=dict(record.usage or {}))
    why = record.reason or ""
    if status == "running":
        return OpOutcome(outcome=RUNNING, reason=f"run {rid} at stage {stage}",
                         command=f"metalport resume {rid}{repo_flag}", **common)
    if status == "awaiting-review":
        return OpOutcome(outcome=AWAITING, reason=f"run {rid} passed its checks and awaits review",
                         command=f"metalport review show {rid}{repo_flag}", **common)
    if status == "published":
        link = record.pr_url or record.bundle_path
        return OpOutcome(outcome=PUBLISHED, reason=f"approved; {'PR' if record.pr_url else 'bundle'} {link}",
                         link=link, **common)
    if status == "rejected":
        return OpOutcome(outcome=REJECTED, reason=f"rejected by the reviewer: {record.feedback or why}",
                         feedback=record.feedback, **common)
    if status == "aborted":
        return OpOutcome(outcome=ABORTED, reason=why or "aborted by the reviewer; worktree and branch removed",
                         **common)
    label = {"budget-exhausted": "ran out of budget", "needs-llm": "needs an LLM"}.get(status, "failed")
    return OpOutcome(outcome=FAILED, reason=f"{label} at stage {stage}: {why or 'no reason recorded'}",
                     command=f"metalport runs show {rid}{repo_flag}", **common)


def refreshed(outcome: OpOutcome, record: Any | None, *, repo_flag: str = "") -> OpOutcome:
    """`outcome` brought up to date with its run's current record (skips of other kinds stay)."""
    if record is None or (outcome.outcome == SKIPPED and outcome.skip not in LIVE_SKIPS):
        return outcome
    current = from_record(record, ease=outcome.ease, repo_flag=repo_flag)
    if outcome.outcome != SKIPPED:
        return current
    if status_of(record) == ("awaiting-review" if outcome.skip == "awaiting-review" else "running"):
        return outcome
    return replace(current, reason=f"{current.reason} (the sweep skipped it while it was {outcome.skip})")


def metalport_dir(repo_root: Path) -> Path:
    """`<git-common-dir>/metalport` of the repository at `repo_root` (not created)."""
    try:
        repo = git.Repo(repo_root, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as err:
        raise RepoError(f"{repo_root}: not a git repository", hint="pass --repo with a git checkout") from err
    return Path(repo.common_dir).resolve() / "metalport"
