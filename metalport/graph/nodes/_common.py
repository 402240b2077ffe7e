"""Helpers shared by the nodes: rebuilding the plan and the worktree from the state, JSON data."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metalport.graph.state import PortState
from metalport.sandbox.worktree import Worktree


def jsonable(value: Any) -> Any:
    """`value` as plain JSON data (dataclasses and objects with `to_dict()` included)."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.loads(json.dumps(value, default=_fallback))


def _fallback(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "value") and isinstance(getattr(value, "value"), (str, int)):
        return value.value  # enums
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return str(value)


def load_plan(state: PortState) -> Any:
    """The run's `PortPlan`, rebuilt from its dict in the state (PipelineError for a plan this
    version cannot read: a run checkpointed by an older metalport)."""
    from metalport.port import PortPlan

    return _rebuilt(PortPlan.from_dict, state["plan"])


def load_family(state: PortState) -> Any:
    """The run's `FamilyPlan`, rebuilt from its dict in the state (PipelineError as `load_plan`):
    every port is a family of one or more members (a state without one holds a family of one)."""
    from metalport.port import FamilyPlan

    if not state.get("family"):
        return FamilyPlan.of_one(load_plan(state))
    return _rebuilt(FamilyPlan.from_dict, state["family"])


def plan_update(family: Any) -> dict:
    """The state's plan keys for `family`: the family and its first member (what views show first)."""
    return {"plan": family.members[0].to_dict(), "family": family.to_dict()}


def _rebuilt(from_dict: Any, data: Any) -> Any:
    from metalport.errors import PipelineError

    try:
        return from_dict(data)
    except (ValueError, TypeError, KeyError) as err:
        raise PipelineError(f"the run's plan cannot be read by this metalport: {err}",
                            hint="start the run again (`metalport run-migration ...`) to plan it afresh") from None


def load_worktree(state: PortState) -> Worktree:
    """The run's `Worktree`, rebuilt from its dict in the state."""
    data = dict(state["worktree"])
    data["repo_root"], data["path"] = Path(data["repo_root"]), Path(data["path"])
    return Worktree(**data)


def verdicts_with(state: PortState, name: str, verdict: dict) -> dict:
    """The state's verdicts with `name` set to `verdict`."""
    return {**state.get("verdicts", {}), name: verdict}


def executor_verdict(executor: str, failures: Sequence[object], start: float) -> dict:
    """The verdict of an executor stage: ok, executor, failure count, the first failure and the
    seconds since `start` (a `time.monotonic()` reading)."""
    return {"ok": not failures, "executor": executor, "failures": len(failures),
            "first": str(failures[0]) if failures else None,
            "seconds": round(time.monotonic() - start, 3)}


def first_failure(failures: list[dict]) -> str:
    """One line naming the first failure and how many there are."""
    from metalport.failure import Failure

    if not failures:
        return "no failure recorded"
    more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
    return f"{Failure.from_dict(failures[0])}{more}"
