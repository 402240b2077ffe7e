"""Budget limits: wall time and cost end a run with the usage as evidence."""

from __future__ import annotations

import pytest

from metalport.agent.budget import Budget, BudgetLimits, Price
from metalport.errors import BudgetExhausted


def test_wall_time_runs_out() -> None:
    now = [100.0]
    budget = Budget(BudgetLimits(max_wall_s=60), clock=lambda: now[0])
    budget.start_call()
    now[0] = 161.0
    with pytest.raises(BudgetExhausted, match=r"budget-exhausted: wall_s 61.0 reached the limit 60") as err:
        budget.start_call()
    assert err.value.usage == {"calls": 1, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "wall_s": 61.0}


def test_cost_runs_out_only_with_a_price() -> None:
    priced = Budget(BudgetLimits(max_cost_usd=0.01), Price(input_per_mtok=10.0, output_per_mtok=30.0))
    priced.record(500, 0)
    priced.check()
    priced.record(0, 1000)
    with pytest.raises(BudgetExhausted, match="cost_usd 0.035 reached the limit 0.01"):
        priced.check()
    unpriced = Budget(BudgetLimits(max_cost_usd=0.01))
    unpriced.record(10**6, 10**6)
    with pytest.raises(BudgetExhausted, match="input_tokens"):
        unpriced.check()
