"""The run record: what `runs` lists and `run.json` or the shared store holds, and where records live.

Below both `graph/` (which writes records as a run moves) and `store/` (which keeps them in
PostgreSQL): this module imports neither.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import git

from metalport.errors import RepoError

RunStatus = Literal["running", "awaiting-review", "failed", "rejected", "published", "aborted",
                    "budget-exhausted", "needs-llm", "base-broken"]
RUN_STATUSES: tuple[str, ...] = ("running", "awaiting-review", "failed", "rejected", "published", "aborted",
                                 "budget-exhausted", "needs-llm", "base-broken")


NON_FINITE: dict[str, float] = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def finite_json(value: Any) -> Any:
    """`value` with every non-finite float written as the string "inf", "-inf" or "nan".

    Strict JSON (and PostgreSQL's jsonb) has no Infinity or NaN, yet a verdict may hold one (a worst
    error of inf ulps is evidence); `float_json` reads them back. The one encoding of records."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def float_json(value: Any) -> Any:
    """Inverse of `finite_json`: the strings "inf", "-inf" and "nan" back to floats (Infinity and NaN
    written by older versions load too)."""
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    if isinstance(value, dict):
        return {k: float_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [float_json(v) for v in value]
    return value


class JsonFields:
    """A dataclass stored as JSON: `to_dict`, and `from_dict` ignoring keys it no longer has.

    The dict is strict JSON: non-finite floats are strings (`finite_json`), read back by `from_dict`."""

    def to_dict(self) -> dict:
        """The fields as strict JSON data."""
        return finite_json(dataclasses.asdict(self))  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict) -> Any:
        """Inverse of `to_dict` (unknown keys ignored, so older and newer records load)."""
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: float_json(v) if isinstance(v, (dict, list)) or kinds[k] == "float" else v
                      for k, v in data.items() if k in kinds})


@dataclass(frozen=True)
class RunRecord(JsonFields):
    """What `runs` shows and `run.json` holds; times are ISO 8601 UTC."""

    run_id: str
    op: str
    status: str
    stage: str
    attempts: int
    branch: str | None
    worktree: str | None
    created_at: str
    updated_at: str
    reason: str | None = None
    feedback: str | None = None
    pr_url: str | None = None
    bundle_path: str | None = None
    verdicts: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)
    paused_s: float = 0.0  # seconds spent waiting at the gate for a decision (not work)

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {self.status!r}")


    def elapsed_s(self) -> float:
        """Seconds the run worked: created to last update, less the waits at the gate."""
        return max(0.0, parse_time(self.updated_at) - parse_time(self.created_at) - self.paused_s)

    def age_s(self, now: float | None = None) -> float:
        """Seconds since the run was created."""
        return (now or time.time()) - parse_time(self.created_at)


def now_iso() -> str:
    """The current time as ISO 8601 UTC, to the second."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> float:
    """Epoch seconds of an ISO 8601 UTC time written by `now_iso`."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def repo_top(repo_root: Path | str) -> Path:
    """The top level of the git repository holding `repo_root`."""
    try:
        repo = git.Repo(repo_root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as err:
        raise RepoError("not a git repository", location=str(repo_root),
                        hint="pass --repo with a git checkout (`metalport workspace init DIR` makes one)") from err
    return Path(repo.working_tree_dir or repo_root).resolve()


def metalport_dir(repo_root: Path | str) -> Path:
    """`<git-common-dir>/metalport`, outside every work tree."""
    repo = git.Repo(repo_top(repo_root))
    return Path(repo.common_dir).resolve() / "metalport"
