"""The plan stage: the planner (one driver, the launch kind decided here), the plan model, families, rows, params, the functor table."""
