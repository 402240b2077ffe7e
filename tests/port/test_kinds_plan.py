"""Plans of the new kinds on a copy of the wheel workspace: `run-migration` as users run it.

A reduction-stub, custom-kernel or multi-tensor op outside the recipe tables ends needs-llm at plan
(exit 1, one line) instead of "needs a hand-written port"; a not-a-candidate op is refused with its
reason (exit 2, one line) and leaves no run behind.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.cli import run_migration
from metalport.errors import PipelineError
from metalport.graph import get_run
from metalport.port.plan.planner import plan_port

YAML = "aten/src/ATen/native/native_functions.yaml"


@pytest.fixture
def workspace(wheel_workspace: Checkout, tmp_path: Path) -> Path:
    """A writable copy of the session's wheel workspace (runs write their records into it)."""
    return Path(shutil.copytree(wheel_workspace.root, tmp_path / "ws", symlinks=True))


def test_a_reduction_plan_collapses_its_rows_onto_the_shared_kernel(wheel_workspace: Checkout) -> None:
    plan = plan_port(wheel_workspace, "aten::prod")
    assert (plan.kind, plan.needs_llm, plan.stub, plan.stubs) == ("reduction-stub", True, "prod_stub", ("prod_stub",))
    assert plan.kind_reason == "prod reaches prod_stub through a reduction TensorIterator"
    assert [(r.entry, r.before.strip(), r.after.strip()) for r in plan.rows] == [
        ("prod", "CPU, CUDA: prod", "CPU, CUDA, MPS: prod"), ("prod", "MPS: prod_mps", ""),
        ("prod.int_out", "CPU, CUDA: prod_out", "CPU, CUDA, MPS: prod_out"), ("prod.int_out", "MPS: prod_out_mps", "")]
    assert plan.to_dict()["kind"] == "reduction-stub" and type(plan).from_dict(plan.to_dict()) == plan


def test_a_custom_kernel_plan_keeps_its_rows_for_the_mps_kernel(wheel_workspace: Checkout) -> None:
    plan = plan_port(wheel_workspace, "adaptive_avg_pool3d_backward")
    assert (plan.kind, plan.needs_llm, plan.rows, plan.stub) == ("custom-kernel", True, (), None)
    assert plan.kind_reason.startswith("CPU (adaptive_avg_pool3d_backward_out_cpu) and CUDA "
                                       "(adaptive_avg_pool3d_backward_out_cuda) use different kernels")


@pytest.mark.parametrize(("op", "kind"), [("prod", "reduction-stub"), ("adaptive_avg_pool3d_backward", "custom-kernel"),
                                          ("_foreach_add", "multi-tensor")])
def test_new_kinds_without_a_recipe_end_needs_llm_with_one_line(workspace: Path, op: str, kind: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = run_migration([f"aten::{op}", "--repo", str(workspace), "--no-input", "--run-id", f"{op}-1"])
    out, err = capsys.readouterr()
    assert code == 1 and "hand-written" not in out + err and "Traceback" not in err
    said = [line for line in (out + err).splitlines() if line.startswith("needs-llm:")]
    assert said == [f"needs-llm: aten::{op} is not in the recipe table: its kernel ({kind}) needs an LLM; rerun with "
                    f"--model openai:MODEL (e.g. `run-migration aten::{op} --model openai:gpt-4.1 --repo {workspace}`)"]
    record = get_run(workspace, f"{op}-1")
    assert (record.status, record.stage) == ("needs-llm", "plan")


@pytest.mark.parametrize(("op", "reason"), [
    ("_cslt_compress", "cuSPARSELt (a CUDA library): MPS has no counterpart"),
    ("cudnn_convolution", "cuDNN op (a vendor library): no Metal kernel to write"),
    ("_to_sparse_csr", "sparse-only: it works on sparse layouts, which a strided Metal kernel does not serve"),
])
def test_not_a_candidate_is_refused_with_its_reason(workspace: Path, op: str, reason: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code = run_migration([f"aten::{op}", "--repo", str(workspace), "--no-input", "--run-id", f"{op}-1"])
    err = capsys.readouterr().err
    errors = [x for x in err.splitlines() if x.startswith("run-migration: error:")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
    assert f": aten::{op} is not a port candidate: {reason}; pick one with " \
           "`metalport backlog --porter recipe,llm`" in errors[0]
    assert f"{YAML}:" in errors[0]
    assert not (workspace / ".git/metalport/runs" / f"{op}-1").exists()


def test_plan_port_refuses_a_not_a_candidate_op(wheel_workspace: Checkout) -> None:
    with pytest.raises(PipelineError, match=r"aten::geqrf is not a port candidate: a solver: CPU runs LAPACK"):
        plan_port(wheel_workspace, "geqrf")
