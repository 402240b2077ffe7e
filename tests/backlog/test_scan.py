"""The backlog on the wheel workspace and on the fixture checkout."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from metalport.backlog import BacklogItem, Family, Status, scan_backlog
from metalport.backlog.scan import backlog_item
from metalport.checkout import Checkout
from metalport.registry import load_registry
from tests.fixture_repo import make_fixture_checkout


@pytest.fixture(scope="module")
def wheel_items(wheel_workspace: Checkout) -> dict[str, BacklogItem]:
    return {item.op: item for item in scan_backlog(wheel_workspace)}


def test_enum_values_are_the_documented_ones() -> None:
    assert [s.value for s in Status] == ["shared", "mps-metal", "mps-graph", "mps-graph-stub", "mps-unknown", "missing",
                                        "composite"]
    assert [f.value for f in Family] == [
        "unary-pointwise", "binary-pointwise", "ternary-pointwise", "reduction", "other"]


def test_wheel_heaviside_is_a_missing_binary_op(wheel_items: dict[str, BacklogItem]) -> None:
    item = wheel_items["heaviside"]
    assert (item.status, item.family, item.stub, item.mps_impl, item.rows) == (
        Status.MISSING, Family.BINARY, "heaviside_stub", None, 3)
    assert [(x.list_name, x.dtypes) for x in item.xfail] == [("UNIMPLEMENTED_XFAILLIST", None)]
    assert item.location == "aten/src/ATen/native/native_functions.yaml:6870"


def test_wheel_statuses(wheel_items: dict[str, BacklogItem]) -> None:
    assert wheel_items["atan2"].status is Status.SHARED
    assert wheel_items["atan2"].stub_registered is None  # a wheel workspace has no .mm sources to tell
    assert wheel_items["add"].status is Status.MPS_UNKNOWN
    assert wheel_items["abs"].family is Family.UNARY
    assert wheel_items["where"].family is Family.TERNARY
    assert wheel_items["sum"].family is Family.REDUCTION
    assert {i.status for i in wheel_items.values()} == set(Status) - {Status.MPS_METAL, Status.MPS_GRAPH,
                                                                      Status.MPS_GRAPH_STUB}


def test_ease_ranks_port_candidates_first_and_pointwise_with_a_stub_first_among_them(
        wheel_items: dict[str, BacklogItem]) -> None:
    ranked = sorted((i for i in wheel_items.values() if i.ease is not None), key=lambda i: i.ease)
    assert [i.ease for i in ranked] == list(range(1, len(ranked) + 1))
    unranked = [i for i in wheel_items.values() if i.ease is None]
    assert all(not i.candidate or i.porter.porter.value == "none" for i in unranked)  # not work, or by hand only
    assert wheel_items["frexp"].ease is None and wheel_items["frexp"].candidate  # the planner refuses it
    candidates = [i for i in ranked if i.status is Status.MISSING]
    assert ranked[:len(candidates)] == candidates
    easy = [i for i in candidates if i.stub and i.family in (Family.UNARY, Family.BINARY, Family.TERNARY)]
    assert len(easy) >= 5 and candidates[:len(easy)] == easy
    assert wheel_items["heaviside"] in easy


def test_fixture_checkout_statuses(tmp_path: Path) -> None:
    checkout = make_fixture_checkout(tmp_path)
    items = {i.op: i for i in scan_backlog(checkout, load_registry(checkout.native_functions))}
    ops = "aten/src/ATen/native/mps/operations"
    assert {op: (i.status, i.mps_impl) for op, i in items.items()} == {
        "atan2": (Status.SHARED, f"{ops}/BinaryKernel.mm:10"),
        "heaviside": (Status.MPS_GRAPH, f"{ops}/BinaryOps.mm:8"),
        "logaddexp": (Status.MPS_METAL, f"{ops}/BinaryOps.mm:18"),
        "hypot": (Status.MISSING, None),
        "square": (Status.COMPOSITE, None),
    }
    assert items["atan2"].stub_registered is True
    assert items["hypot"].xfail[0].dtypes == ("float16", "bfloat16")
    assert items["square"].family is Family.OTHER
    assert items["hypot"].to_json() == {
        "op": "hypot", "status": "missing", "family": "binary-pointwise", "stub": "hypot_stub", "mps_impl": None,
        "xfail": [{"list": "UNIMPLEMENTED_XFAILLIST", "key": "hypot", "dtypes": ["float16", "bfloat16"],
                   "line": 9}],
        "rows": 2, "ease": items["hypot"].ease, "stub_registered": None, "mps_kernels": [],
        "location": "aten/src/ATen/native/native_functions.yaml:43", "stubs": ["hypot_stub"],
        "route": "hypot_out calls hypot_stub (assumed: no body of hypot_out in the tree; the stub is named after it)",
        "stub_assumed": True, "kind": "pointwise-stub",
        "kind_reason": "hypot_out reaches hypot_stub through a pointwise TensorIteratorBase",
        "porter": "llm",
        "porter_reason": "translate declined: no aten/src/ATen/native/cpu/*.cpp registers hypot_stub (REGISTER_DISPATCH)",
    }


def test_unregistered_stub_is_reported(tmp_path: Path) -> None:
    checkout = make_fixture_checkout(tmp_path)
    mm = checkout.mps_operations / "BinaryKernel.mm"
    mm.write_text(mm.read_text().replace("REGISTER_DISPATCH(atan2_stub, &atan2_mps_kernel)\n", ""))
    items = {i.op: i for i in scan_backlog(checkout)}
    assert (items["atan2"].status, items["atan2"].stub_registered) == (Status.SHARED, False)


def test_one_op_is_classified_as_the_whole_scan_classifies_it(wheel_workspace: Checkout,
                                                             wheel_items: dict[str, BacklogItem]) -> None:
    """`resolve`/`plan` classify only their op (`backlog_item`); it must be the scan's item but its rank."""
    registry = load_registry(wheel_workspace.native_functions)
    for op in ("heaviside", "atan2", "add", "where", "square", "sum", "signbit", "_foreach_add"):
        assert backlog_item(wheel_workspace, registry, op) == replace(wheel_items[op], ease=None), op
    assert backlog_item(wheel_workspace, registry, "no_such_op") is None
    outside = [op for op in registry.ops if op not in wheel_items][:3]  # only other backends' kernels
    assert outside and all(backlog_item(wheel_workspace, registry, op) is None for op in outside)


def test_one_op_on_the_fixture_checkout_matches_the_scan(tmp_path: Path) -> None:
    checkout = make_fixture_checkout(tmp_path)
    registry = load_registry(checkout.native_functions)
    items = {i.op: i for i in scan_backlog(checkout, registry)}
    assert {op: backlog_item(checkout, registry, op) for op in items} == {
        op: replace(i, ease=None) for op, i in items.items()}
