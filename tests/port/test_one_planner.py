"""Note [one planner]: every port kind's plan is made one way, so a model's launch spec is planned
exactly as the same spec from the recipe table, and what every port shares (its allow-list, its
xfail keys, its launch) is there whatever the kind."""

from __future__ import annotations

import pytest

from metalport.checkout.layout import Checkout
from metalport.port.plan.model import COMMON_MPS, NATIVE_FUNCTIONS
from metalport.port.plan.planner import plan_port, plan_resolved
from metalport.port.tree.resolve import resolve_op
from metalport.port.spec.recipes import model_spec_recipe, spec_recipes


@pytest.mark.parametrize("op", ["mode", "linalg__powsum", "logspace", "take"])
def test_a_models_spec_is_planned_as_the_recipe_is(wheel_workspace: Checkout, op: str) -> None:
    recipe = spec_recipes()[op]
    res = resolve_op(wheel_workspace, op)
    schemas = {e.full_name: e.func for e in res.entries}
    answer = model_spec_recipe(op, schemas, recipe.path.read_text(encoding="utf-8"), recipe.kernel_source)
    assert plan_resolved(wheel_workspace, res, spec_recipe=answer) == plan_port(wheel_workspace, op)


@pytest.mark.parametrize(("op", "launch_kind"), [("heaviside", "elementwise"), ("special_airy_ai", "elementwise"),
                                                 ("mode", "custom-kernel"), ("linalg__powsum", "reduction-stub"),
                                                 ("_foreach_exp", "multi-tensor"), ("argmax", "pending")])
def test_every_kind_shares_the_tail(wheel_workspace: Checkout, op: str, launch_kind: str) -> None:
    plan = plan_port(wheel_workspace, op)
    assert plan.launch_kind.value == launch_kind
    assert (plan.launch is None) == (launch_kind == "pending")
    assert {NATIVE_FUNCTIONS, COMMON_MPS} <= set(plan.allowed_paths)
    # The files the port writes are on its allow-list, whoever planned it; a plan with no launch
    # yet writes none of its own (the model's spec brings them).
    own = {p for p in (plan.kernel_file, plan.host_file) if p}
    assert own <= set(plan.allowed_paths) and (own or launch_kind == "pending")
    if plan.xfail_entries or plan.xfail_narrowed:
        assert set(plan.xfail_keys) == {x[1] for x in (*plan.xfail_entries, *plan.xfail_narrowed)}
