"""Note [one port model]: every plan says how its kernel is launched, through one accessor, and
one host writer takes every launch kind."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.errors import RecipeError
from metalport.port.write.hostgen import write_host_code
from metalport.port.plan.launch import ElementwiseLaunch, LaunchKind
from metalport.port.plan.planner import PortPlan, plan_port
from tests.fixture_repo import make_fixture_checkout


@pytest.fixture(scope="module")
def plans(wheel_workspace: Checkout, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PortPlan]:
    """A table pointwise port, a routed alpha port, a spec port and a kernel port with no recipe
    (the wheel), and a port a model writes the functor of (the fixture checkout's hypot)."""
    found = {op: plan_port(wheel_workspace, f"aten::{op}") for op in ("heaviside", "sub", "mode", "prod")}
    return {**found, "hypot": plan_port(make_fixture_checkout(tmp_path_factory.mktemp("fixture")), "hypot")}


def test_a_pointwise_port_is_an_elementwise_launch(plans: dict[str, PortPlan]) -> None:
    heaviside = plans["heaviside"]
    assert heaviside.launch_kind is LaunchKind.ELEMENTWISE
    launch = heaviside.elementwise
    assert launch is not None
    assert (launch.stub, launch.stub_header, launch.host_family, launch.kernel, launch.functor, launch.launcher) == (
        "heaviside_stub", "ATen/native/BinaryOps.h", "binary", "heaviside", "heaviside_functor", "exec_binary_kernel")
    assert launch.dtypes == heaviside.dtypes and launch.registrations == heaviside.registrations
    assert heaviside.launch == {**launch.to_dict(), "kind": "elementwise", "launcher": "exec_binary_kernel"}
    sub = plans["sub"].elementwise
    assert sub is not None and (sub.stub, sub.host_family, sub.launcher) == ("sub_stub", "alpha", "exec_binary_kernel")
    assert "Scalar& alpha" in (sub.stub_params or "")


def test_a_model_written_functor_still_has_its_launch(plans: dict[str, PortPlan]) -> None:
    plan = plans["hypot"]
    assert plan.needs_llm and plan.functor_source is None
    assert plan.launch_kind is LaunchKind.ELEMENTWISE and plan.elementwise is not None
    assert (plan.elementwise.functor, plan.elementwise.launcher) == ("hypot_functor", "exec_binary_kernel")


def test_a_spec_port_launches_its_spec_and_a_kernel_port_has_no_launch_yet(plans: dict[str, PortPlan]) -> None:
    mode = plans["mode"]
    assert mode.elementwise is None and mode.spec is not None
    assert mode.launch_kind.value == mode.spec["kind"] and mode.launch_kind.by_spec and mode.launch == mode.spec
    prod = plans["prod"]
    assert (prod.launch_kind, prod.launch, prod.needs_llm) == (LaunchKind.PENDING, None, True)


def test_the_launch_follows_the_plan_and_the_plan_dict_is_unchanged(plans: dict[str, PortPlan]) -> None:
    for plan in plans.values():
        data = json.loads(json.dumps(plan.to_dict()))
        assert "elementwise" not in data and "launch" not in data  # derived from the plan, never stored
        assert data["launch_kind"] == plan.launch_kind.value  # the planner's decision is stored
        again = PortPlan.from_dict(data)
        assert again == plan and again.launch == plan.launch and again.launch_kind == plan.launch_kind
    one_row = ("REGISTER_BINARY_OP(heaviside, float, float);",)
    fewer = dataclasses.replace(plans["heaviside"], dtypes=("float",), registrations=one_row)
    assert fewer.elementwise is not None and fewer.elementwise.dtypes == ("float",)
    assert fewer.elementwise.registrations == fewer.registrations


def test_the_launch_kind_is_the_planners_and_must_agree_with_the_spec(plans: dict[str, PortPlan]) -> None:
    # no reader decides the kind from the fields set: a plan whose kind and spec disagree is refused
    with pytest.raises(ValueError, match="launch kind"):
        dataclasses.replace(plans["mode"], launch_kind=LaunchKind.ELEMENTWISE)
    with pytest.raises(ValueError, match="launch kind"):
        dataclasses.replace(plans["heaviside"], launch_kind=LaunchKind.REDUCTION)
    data = plans["heaviside"].to_dict()
    del data["launch_kind"]
    with pytest.raises(ValueError, match="plan it again"):
        PortPlan.from_dict(data)


def test_a_shared_ternary_launcher_is_the_library_one() -> None:
    launch = ElementwiseLaunch("lerp_stub", "ATen/native/Lerp.h", "TensorIteratorBase& iter, const Scalar& weight",
                               "ternary_alpha", "lerp", "lerp_functor", ("float",),
                               ("REGISTER_TERNARY_ALPHA_OP(lerp, float, float);",), (), True)
    assert launch.launcher == "exec_ternary_kernel"
    assert dataclasses.replace(launch, shared_launcher=False).launcher == "exec_ternary_kernel_with_alpha"
    assert json.loads(json.dumps(launch.to_dict()))["launcher"] == "exec_ternary_kernel"


def _reader(root: Path):
    def read(rel: str) -> str | None:
        path = root / rel
        return path.read_text(encoding="utf-8") if path.is_file() else None
    return read


def test_one_host_writer_takes_every_launch_kind(wheel_workspace: Checkout, plans: dict[str, PortPlan]) -> None:
    root, read = wheel_workspace.root, _reader(wheel_workspace.root)
    heaviside = write_host_code(plans["heaviside"], root, read)
    assert heaviside is not None
    assert 'lib.exec_binary_kernel(iter, "heaviside")' in heaviside
    assert "REGISTER_DISPATCH(heaviside_stub, &heaviside_mps_kernel);" in heaviside
    mode = plans["mode"]
    written = write_host_code(mode, root, read)
    assert written is not None and f" {mode.spec['host']['function']}(" in written  # type: ignore[index]
    # A file that registers the stub, or defines the host function, already gets nothing added.
    assert write_host_code(plans["heaviside"], root, lambda rel: heaviside) is None
    assert write_host_code(mode, root, lambda rel: written) is None
    with pytest.raises(RecipeError, match="the plan for prod has no host stub"):
        write_host_code(plans["prod"], root, read)
