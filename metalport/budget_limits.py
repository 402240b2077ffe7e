"""What a run or a sweep may spend: model prices, per-run limits, and the sweep's shared account.

Plain data and arithmetic, below `config` (which parses `budget:` and `prices:`), `agent/` (whose
`Budget` counts a run's calls against these limits) and `sweep/`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace

from metalport.errors import BudgetExhausted, UsageError


@dataclass(frozen=True)
class Price:
    """USD per million tokens for one model."""

    input_per_mtok: float
    output_per_mtok: float


@dataclass(frozen=True)
class BudgetLimits:
    """The ceilings of one run; 0 means unlimited."""

    max_calls: int = 40  # model requests, retries included
    max_input_tokens: int = 200_000
    max_output_tokens: int = 40_000
    max_cost_usd: float = 5.0  # only enforced when the model has a price
    max_wall_s: float = 1800.0

    @classmethod
    def coerce(cls, value: BudgetLimits | Mapping[str, float] | None, default: BudgetLimits) -> BudgetLimits:
        """`value` as limits: None gives `default`; a mapping overrides `default`'s fields."""
        if value is None:
            return default
        if isinstance(value, BudgetLimits):
            return value
        known = {f.name for f in fields(cls)}
        bad = sorted(set(value) - known)
        if bad:
            raise UsageError(f"unknown budget limit(s) {bad}", hint=f"use {sorted(known)}")
        return replace(default, **value)


_SUMMED = ("calls", "input_tokens", "output_tokens", "cost_usd")


class SweepBudget:
    """A budget several runs draw from: each run gets the smaller of its own limits and what is left.

    Usage is added from each finished run's `RunRecord.usage` (a plain dict), so the sweep's
    accounting survives runs in other processes and resumed runs. Wall time is the sweep's own.
    """

    def __init__(self, limits: BudgetLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self._start = clock()
        self._spent = dict.fromkeys(_SUMMED, 0.0)
        self.runs = 0

    def add(self, usage: Mapping[str, float]) -> None:
        """Count one run's usage (`calls`, `input_tokens`, `output_tokens`, `cost_usd`)."""
        for key in _SUMMED:
            self._spent[key] += float(usage.get(key, 0) or 0)
        self.runs += 1

    def usage(self) -> dict:
        """The sweep's usage so far, shaped like `Budget.usage()` plus the number of runs."""
        return {"calls": int(self._spent["calls"]), "input_tokens": int(self._spent["input_tokens"]),
                "output_tokens": int(self._spent["output_tokens"]),
                "cost_usd": round(self._spent["cost_usd"], 6),
                "wall_s": round(self._clock() - self._start, 3), "runs": self.runs}

    def limits_for_run(self, per_run: BudgetLimits) -> BudgetLimits:
        """The limits of the next run: per-run limits capped by what the sweep has left.

        Raises BudgetExhausted (with the sweep's usage) when any sweep limit is used up.
        """
        used, lim = self.usage(), self.limits
        capped = {}
        for name, key in (("max_calls", "calls"), ("max_input_tokens", "input_tokens"),
                          ("max_output_tokens", "output_tokens"), ("max_cost_usd", "cost_usd"),
                          ("max_wall_s", "wall_s")):
            total, own = getattr(lim, name), getattr(per_run, name)
            if not total:
                capped[name] = own
                continue
            left = total - used[key]
            if left <= 0:
                raise BudgetExhausted(f"budget-exhausted: the sweep's {key} {used[key]} reached the limit "
                                      f"{total}", usage=used, hint="raise the sweep budget or sweep fewer ops")
            left = max(1, int(left)) if isinstance(own, int) else float(left)
            capped[name] = min(own, left) if own else left
        return BudgetLimits(**capped)
