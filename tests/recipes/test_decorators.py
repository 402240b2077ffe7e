"""The op's MPS skip/expectedFailure decorators in the OpInfo files: found, removed, checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.checks.contract.rules import check_contract
from metalport.errors import RecipeError
from metalport.port.write.decorators import find_decorators, remove_lines
from metalport.port.plan.planner import apply_port, plan_port
from tests.recipes.porting import clone, commit_all, read, write

OPINFOS = '''op_db = [
    BinaryUfuncInfo('wobble',
                    decorators=(
                        DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps'),
                        DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_dtypes',
                                     device_type='mps', dtypes=(torch.complex64,)),
                        DecorateInfo(toleranceOverride({torch.float16: tol(atol=1e-3, rtol=0)}),
                                     'TestConsistency', device_type='mps'),
                        DecorateInfo(unittest.skip("flaky"), 'TestCommon', device_type='cuda'),
                    )),
    UnaryUfuncInfo('jiggle', skips=(DecorateInfo(unittest.skip("no"), 'TestCommon', device_type='mps'),)),
]
'''
INVOCATIONS = "torch/testing/_internal/common_methods_invocations.py"


def test_only_the_ops_mps_failure_markers_are_found() -> None:
    found = find_decorators(OPINFOS, ["wobble"], path="x.py")
    assert [(d.opinfo, d.first_line, d.last_line, d.dtypes) for d in found] == [
        ("wobble", 4, 4, None), ("wobble", 5, 6, ("complex64",))]
    assert remove_lines(OPINFOS, [(4, 4), (5, 6)]).count("DecorateInfo(") == 3
    with pytest.raises(RecipeError, match="x.py:11: an MPS decorator of 'jiggle' shares its line with another"):
        find_decorators(OPINFOS, ["jiggle"], path="x.py")


def test_heaviside_port_removes_its_mps_decorators_and_the_contract_holds(wheel_workspace: Checkout,
                                                                          tmp_path: Path) -> None:
    plan = plan_port(wheel_workspace, "heaviside")
    # The PythonRefInfo `_refs.heaviside` has MPS xfails too: left, they would fail as unexpected successes.
    assert {(f, n) for f, n, _, _ in plan.decorator_entries} == {(INVOCATIONS, "heaviside"),
                                                                  (INVOCATIONS, "_refs.heaviside")}
    assert len(plan.decorator_entries) == 7 and INVOCATIONS in plan.allowed_paths
    wt = clone(wheel_workspace, tmp_path / "wt")
    assert INVOCATIONS in apply_port(plan, wt)
    assert find_decorators(read(wt, INVOCATIONS), ["heaviside"], path=INVOCATIONS) == ()
    assert find_decorators(read(wt, INVOCATIONS), ["logical_and"], path=INVOCATIONS) != ()
    assert apply_port(plan, wt) == ()
    assert check_contract(wheel_workspace.root, wt, plan) == []


def test_contract_names_a_leftover_and_an_unplanned_removal(wheel_workspace: Checkout, tmp_path: Path) -> None:
    plan = plan_port(wheel_workspace, "heaviside")
    wt = clone(wheel_workspace, tmp_path / "wt")
    apply_port(plan, wt)
    text = read(wt, INVOCATIONS)
    first = plan.decorator_entries[0][2]
    base = read(wheel_workspace.root, INVOCATIONS).split("\n")
    comment, base_line = base[first - 2], base[first - 1]
    assert "MPS device" in comment  # went with the decorators it heads
    other = find_decorators(text, ["logical_and"], path=INVOCATIONS)[0]
    lines = text.split("\n")
    lines[first - 2:first - 2] = [comment, base_line]  # after logical_and's, so its line numbers still hold
    lines[other.first_line - 1:other.last_line] = []
    write(wt, INVOCATIONS, "\n".join(lines))
    commit_all(wt, "keep one, drop another")
    messages = [f.message for f in check_contract(wheel_workspace.root, wt, plan) if "[decorators]" in f.message]
    assert any("unplanned removal of logical_and's decorator" in m for m in messages), messages
    assert any("heaviside's MPS decorator is still there" in m for m in messages)


def test_a_comment_goes_only_with_every_decorator_it_heads() -> None:
    from metalport.port.write.decorators import with_own_comment

    text = "\n".join(["decorators=(",                                       # 1
                      "    DecorateInfo(unittest.skip('x'), 'TestA'),",       # 2
                      "    # NotImplementedError: not implemented for the MPS device",  # 3
                      "    DecorateInfo(unittest.expectedFailure, 'TestB', device_type='mps'),",  # 4
                      "    DecorateInfo(unittest.expectedFailure, 'TestC', device_type='mps'),",  # 5
                      "),"])                                                  # 6
    assert with_own_comment(text, 4, 4, {4, 5}) == (3, 4)  # both go: so does their comment
    assert with_own_comment(text, 4, 4, {4}) == (4, 4)  # TestC stays under it: the comment stays
    assert with_own_comment(text.replace("MPS device", "CUDA device"), 4, 4, {4, 5}) == (4, 4)
