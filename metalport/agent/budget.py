"""Run budgets: model calls, input/output tokens, cost and wall time, checked in one place."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from metalport.errors import BudgetExhausted


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


class Budget:
    """Counts usage and raises `BudgetExhausted` (with the usage) when a limit is crossed."""

    def __init__(self, limits: BudgetLimits, price: Price | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.price = price
        self._clock = clock
        self._start = clock()
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def cost_usd(self) -> float:
        """The cost so far from the price table (0.0 without a price)."""
        if self.price is None:
            return 0.0
        return (self.input_tokens * self.price.input_per_mtok
                + self.output_tokens * self.price.output_per_mtok) / 1_000_000

    def usage(self) -> dict:
        """Usage as a plain dict for the run state, approval summary and PR body."""
        return {"calls": self.calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_usd": round(self.cost_usd(), 6),
                "wall_s": round(self._clock() - self._start, 3)}

    def check(self) -> None:
        """Raise `BudgetExhausted` if any limit is reached; called before every model request."""
        lim, used = self.limits, self.usage()
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
                                  usage=used, hint="raise the limit under `budget:` in metalport.yaml")

    def start_call(self) -> None:
        """Check the budget, then count one model request."""
        self.check()
        self.calls += 1

    def record(self, input_tokens: int, output_tokens: int) -> None:
        """Add the tokens a reply reported."""
        self.input_tokens += max(0, int(input_tokens))
        self.output_tokens += max(0, int(output_tokens))
