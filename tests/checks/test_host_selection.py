"""Host models of the real corpus for what used to go unjudged: div's rounding modes (Note
[argument-selected kernels]), lerp's scalar weight (Note [stubs named after the op]) and the ceil and
trunc functors behind the MPSGraph host (Note [functors behind a legacy host]); what stays unjudged
exits 3 (Note [not judged])."""

from __future__ import annotations

import pytest
import torch

from metalport.checks.cases.case import build_cases
from metalport.checks.cases.elementwise import ElementwiseCases
from metalport.checks.conformance import case_generator, run_conformance
from metalport.checks.cases.samples import ExecConvention
from metalport.checks.contract.hostcode import find_host_code
from metalport.cli import main


def test_div_rounding_modes_run_the_kernel_the_host_picks(real_tree_workspace) -> None:
    host = find_host_code(real_tree_workspace.root, "div")
    assert host.modes == (("rounding_mode", None, "div_true"), ("rounding_mode", "trunc", "div_trunc"),
                          ("rounding_mode", "floor", "div_floor"))
    report = run_conformance(real_tree_workspace.root, "div", backend="emulated", seed=5, dtypes=["float16"],
                             include_held_out=False)
    verdict = report.dtypes[0]
    assert report.skipped == 0 and verdict.tally("opinfo").samples >= 27 and verdict.ok
    cases, skipped = build_cases(ElementwiseCases(ExecConvention.BINARY, "div", torch.ops.aten.div, torch.float32,
                                                  case_generator(5, torch.float32), host.selectors), True)
    labels = [c.label for c in cases]
    assert not skipped and any(label.endswith("[rounding_mode='floor']") for label in labels)
    assert any(label.startswith("held-out ties and exact multiples [rounding_mode='trunc']") for label in labels)


def test_lerp_scalar_weight_is_judged_through_lerp_alpha(real_tree_workspace) -> None:
    host = find_host_code(real_tree_workspace.root, "lerp")
    assert host.kernel == "lerp_alpha"
    report = run_conformance(real_tree_workspace.root, "lerp", backend="emulated", seed=5, dtypes=["float32"])
    verdict = report.dtypes[0]
    assert verdict.tally("opinfo").passed > 0 and verdict.ok
    assert report.status == "partial" and "lerp.Tensor" in (report.reason or "")  # the tensor weight: not judged


@pytest.mark.parametrize("op", ["ceil", "trunc"])
def test_a_functor_behind_the_mpsgraph_host_is_judged_and_says_so(real_tree_workspace, op: str) -> None:
    report = run_conformance(real_tree_workspace.root, op, backend="emulated", seed=5)
    assert report.status == "pass" and "MPSGraph" in (report.reason or "")
    assert {d.dtype for d in report.dtypes} == {"float32", "float16", "bfloat16"}


def test_partial_exits_3_not_the_fail_status(real_tree_workspace, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "aten::lerp", "--repo", str(real_tree_workspace.root), "--backend", "emulated",
                 "--dtypes", "float32", "--seed", "5"])
    out = capsys.readouterr().out
    assert code == 3 and "aten::lerp: partial" in out and "not judged, exit 3" in out
