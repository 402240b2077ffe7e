"""The run budget a provider draws from: model calls, input/output tokens, cost and wall time,
checked in one place (the limits and prices are `metalport.budget_limits`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from metalport.budget_limits import BudgetLimits, Price
from metalport.errors import BudgetExhausted


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
