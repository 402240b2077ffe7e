"""Run budgets: model calls, input/output tokens, cost and wall time, checked in one place."""

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


class Budget:
    """Counts usage and raises `BudgetExhausted` (with the usage) when a limit is crossed.

    `usage()` is this process's spend; limits apply to it plus any `restore`d spend of earlier
    processes of the same run (`total_usage()`), so a resumed run cannot start its budget afresh.
    """

    def __init__(self, limits: BudgetLimits, price: Price | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.price = price
        self._clock = clock
        self._start = clock()
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self._prior = {"calls": 0, "input_tokens": 0, "output_tokens": 0}

    def _cost(self, input_tokens: int, output_tokens: int) -> float:
        if self.price is None:
            return 0.0
        return (input_tokens * self.price.input_per_mtok + output_tokens * self.price.output_per_mtok) / 1_000_000

    def cost_usd(self) -> float:
        """This process's cost from the price table (0.0 without a price)."""
        return self._cost(self.input_tokens, self.output_tokens)

    def usage(self) -> dict:
        """This process's usage as a plain dict for the run state, approval summary and PR body."""
        return {"calls": self.calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_usd": round(self.cost_usd(), 6),
                "wall_s": round(self._clock() - self._start, 3)}

    def total_usage(self) -> dict:
        """`usage()` plus the restored spend of earlier processes (what the limits are checked on)."""
        calls, tin, tout = (self._prior[k] + v for k, v in (
            ("calls", self.calls), ("input_tokens", self.input_tokens), ("output_tokens", self.output_tokens)))
        return {"calls": calls, "input_tokens": tin, "output_tokens": tout,
                "cost_usd": round(self._cost(tin, tout), 6), "wall_s": round(self._clock() - self._start, 3)}

    def check(self) -> None:
        """Raise `BudgetExhausted` if any limit is reached; called before every model request.

        The error's `usage` is this process's (`usage()`); its message names the total.
        """
        lim, used = self.limits, self.total_usage()
        over = [(name, value, limit) for name, value, limit in (
            ("calls", used["calls"], lim.max_calls),
            ("input_tokens", used["input_tokens"], lim.max_input_tokens),
            ("output_tokens", used["output_tokens"], lim.max_output_tokens),
            ("cost_usd", used["cost_usd"], lim.max_cost_usd if self.price else 0),
            ("wall_s", used["wall_s"], lim.max_wall_s),
        ) if limit and value >= limit]
        if over:
            name, value, limit = over[0]
            raise BudgetExhausted(f"budget-exhausted: {name} {value} reached the limit {limit}",
                                  usage=self.usage(), hint="raise the limit under `budget:` in metalport.yaml")

    def start_call(self) -> None:
        """Check the budget, then count one model request."""
        self.check()
        self.calls += 1

    def record(self, input_tokens: int, output_tokens: int) -> None:
        """Add the tokens a reply reported."""
        self.input_tokens += max(0, int(input_tokens))
        self.output_tokens += max(0, int(output_tokens))

    def restore(self, usage: Mapping[str, float]) -> None:
        """Count an earlier process's calls and tokens of this run against the limits.

        Wall time is not carried over: time waiting at the review gate is not the model's.
        """
        for key in self._prior:
            self._prior[key] = int(usage.get(key, 0) or 0)


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
