"""Budget limits: wall time and cost end a run with the usage as evidence."""

from __future__ import annotations

import pytest

from metalport.agent.budget import Budget
from metalport.budget_limits import BudgetLimits, Price, SweepBudget
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


def test_sweep_budget_caps_each_run_by_what_is_left_and_then_refuses() -> None:
    now = [0.0]
    sweep = SweepBudget(BudgetLimits(max_calls=10, max_input_tokens=0, max_output_tokens=0,
                                     max_cost_usd=1.0, max_wall_s=600), clock=lambda: now[0])
    per_run = BudgetLimits(max_calls=4, max_input_tokens=50_000, max_output_tokens=0, max_cost_usd=0.5,
                           max_wall_s=1800)
    assert sweep.limits_for_run(per_run) == BudgetLimits(4, 50_000, 0, 0.5, 600.0)
    sweep.add({"calls": 4, "input_tokens": 9000, "output_tokens": 500, "cost_usd": 0.75, "wall_s": 30})
    now[0] = 500.0
    assert sweep.limits_for_run(per_run) == BudgetLimits(4, 50_000, 0, 0.25, 100.0)
    sweep.add({"calls": 4, "cost_usd": 0.1})
    assert sweep.limits_for_run(per_run).max_calls == 2
    sweep.add({"calls": 2})
    with pytest.raises(BudgetExhausted, match="budget-exhausted: the sweep's calls 10 reached the limit 10") as err:
        sweep.limits_for_run(per_run)
    assert err.value.usage == {"calls": 10, "input_tokens": 9000, "output_tokens": 500, "cost_usd": 0.85,
                               "wall_s": 500.0, "runs": 3}


def test_restored_spend_counts_against_limits_but_usage_is_this_process() -> None:
    budget = Budget(BudgetLimits(max_calls=3), Price(1.0, 1.0))
    budget.restore({"calls": 2, "input_tokens": 10, "output_tokens": 2, "wall_s": 999})
    budget.start_call()
    budget.record(5, 1)
    assert budget.usage() == {**budget.usage(), "calls": 1, "input_tokens": 5, "output_tokens": 1}
    total = budget.total_usage()
    assert (total["calls"], total["input_tokens"], total["cost_usd"], total["wall_s"] < 999) == (3, 15, 18e-6, True)
    with pytest.raises(BudgetExhausted, match="calls 3 reached the limit 3") as err:
        budget.start_call()
    assert err.value.usage["calls"] == 1
