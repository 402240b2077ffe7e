"""Translated ports end to end on a wheel workspace with fixture CPU kernel files: the plan shows
the CPU lambda beside its functor, `run-migration` reaches the gate through the recipe path's checks
(emulated conformance included), the backlog names the porter, and `sweep --porter translate` takes
only translated ops."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.checkout.cpu_kernels import CPU_DIR
from metalport.cli import main
from metalport.graph.evidence import describe_plan
from metalport.port.plan.planner import plan_port

FIXTURES = Path(__file__).parent / "fixtures" / "cpu"
REGISTRY = "aten/src/ATen/native/native_functions.yaml"


@pytest.fixture
def workspace(wheel_workspace, tmp_path: Path) -> Path:
    """A wheel workspace with the fixture CPU kernel files, where MPS lacks hardsigmoid and its
    backward (their shared rows lose `MPS`), committed."""
    root = Path(shutil.copytree(wheel_workspace.root, tmp_path / "ws", symlinks=True))
    (root / CPU_DIR).mkdir(parents=True, exist_ok=True)
    for path in FIXTURES.glob("*.cpp"):
        shutil.copyfile(path, root / CPU_DIR / path.name)
    registry = root / REGISTRY
    text = registry.read_text(encoding="utf-8")
    for kernel in ("hardsigmoid_out", "hardsigmoid_backward_out"):
        assert f"    CPU, CUDA, MPS: {kernel}\n" in text
        text = text.replace(f"    CPU, CUDA, MPS: {kernel}\n", f"    CPU, CUDA: {kernel}\n")
    registry.write_text(text, encoding="utf-8")
    for argv in (["add", "-A"], ["commit", "-q", "-m", "fixture CPU kernels; MPS lacks hardsigmoid"]):
        subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@localhost", *argv], cwd=root,
                       check=True, capture_output=True, timeout=60)
    return root


def test_the_plan_shows_the_cpu_lambda_beside_the_functor(workspace: Path) -> None:
    plan = plan_port(Checkout(workspace), "hardsigmoid_backward")
    assert plan.functor_step == "translate" and not plan.needs_llm
    assert plan.cpu_lambda is not None and plan.cpu_lambda[0] == f"{CPU_DIR}/Activation.cpp:81"
    assert plan.registrations == tuple(f"REGISTER_BINARY_OP(hardsigmoid_backward, {t}, {t});"
                                       for t in ("float", "half", "bfloat"))
    assert plan.register_dispatch == "REGISTER_DISPATCH(hardsigmoid_backward_stub, &hardsigmoid_backward_mps_kernel);"
    text = "\n".join(describe_plan(plan.to_dict()))
    assert f"  translated from the CPU scalar lambda at {CPU_DIR}/Activation.cpp:81:\n" in text
    assert "    | [=](scalar_t grad_val, scalar_t self_val) -> scalar_t {\n" in text
    assert "  into the functor:\n    | struct hardsigmoid_backward_functor {\n" in text


def test_a_declined_op_goes_to_the_model_with_the_reason_in_its_plan(workspace: Path) -> None:
    plan = plan_port(Checkout(workspace), "glu_jvp")
    assert plan.needs_llm and plan.translate_declined == "the lambda takes 4 operands; translated ports are unary or binary"
    text = "\n".join(describe_plan(plan.to_dict()))
    assert (f"  translate declined (CPU lambda at {CPU_DIR}/Activation.cpp:330): the lambda takes 4 operands; "
            "translated ports are unary or binary") in text


def test_a_scalar_capturing_op_is_planned_on_the_params_route(workspace: Path) -> None:
    # Note [translated scalars]: softplus's beta and threshold ride in SoftplusParams
    plan = plan_port(Checkout(workspace), "softplus")
    assert plan.functor_step == "translate" and not plan.needs_llm
    assert [p[0] for p in plan.params] == ["beta", "threshold"] and plan.params_type == "SoftplusParams"
    assert plan.registrations == tuple(f"REGISTER_UNARY_ALPHA_OP(softplus, {t}, SoftplusParams, {t});"
                                       for t in ("float", "half", "bfloat"))
    text = "\n".join(describe_plan(plan.to_dict()))
    assert f"  translated from the CPU scalar lambda at {CPU_DIR}/Activation.cpp:102:\n" in text
    assert "    | [beta, threshold](scalar_t a) -> scalar_t {\n" in text
    assert "    |   inline ::metal::enable_if_t<::c10::metal::is_scalar_floating_point_v<T>, T> operator()(const T in0, " \
           "const SoftplusParams params) {\n" in text
    assert "    |     const float beta = params.beta;\n" in text


def test_a_lambda_taking_an_operand_the_op_does_not_have_is_declined(workspace: Path) -> None:
    # threshold's CPU code passes self twice to a binary iterator; no emulated host models that
    plan = plan_port(Checkout(workspace), "threshold")
    assert plan.needs_llm and plan.translate_declined is not None
    assert plan.translate_declined.startswith("the lambda takes 2 operands and aten::threshold 1 tensor(s)")


def _verdicts(run_id: str, workspace: Path, capsys: pytest.CaptureFixture) -> dict:
    assert main(["runs", "show", run_id, "--repo", str(workspace), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_translated_op_with_scalars_passes_conformance_at_the_gate(workspace: Path,
                                                                      capsys: pytest.CaptureFixture) -> None:
    code = main(["run", "aten::softplus", "--repo", str(workspace), "--executor", "emulated", "--no-input",
                 "--run-id", "tr-sp"])
    err = capsys.readouterr().err
    assert code == 0, err
    record = _verdicts("tr-sp", workspace, capsys)
    assert record["status"] == "awaiting-review"
    test = record["verdicts"]["test"]
    assert test["ok"] and test["judged"] and test["failures"] == 0, test
    samples = [d["worst_sample"] or "" for d in test["report"]["dtypes"]]
    assert all("alpha=(" in s and "alpha=(1.0, 20.0)" not in s for s in samples), samples  # non-default scalars


def test_the_translated_functor_ignoring_a_scalar_fails_conformance(workspace: Path, tmp_path: Path) -> None:
    from metalport.checks.conformance import run_conformance
    from metalport.port.plan.planner import apply_port

    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(workspace), str(work)], check=True, capture_output=True, timeout=300)
    plan = plan_port(Checkout(work), "aten::softplus")
    good = plan.functor_source or ""
    assert good.count("params.beta") == 1
    apply_port(plan, work, functor_source=good.replace("params.beta", "1.0f"))  # beta read, never used
    report = run_conformance(work, "aten::softplus", backend="emulated", seed=7, dtypes=["float32"],
                             include_held_out=False)
    assert report.status == "fail"
    failure = next(f for d in report.dtypes for f in d.failures)
    assert "softplus_dense_float_float_SoftplusParams" in failure.message


def test_run_migration_of_a_translated_op_passes_conformance_at_the_gate(workspace: Path,
                                                                         capsys: pytest.CaptureFixture) -> None:
    code = main(["run", "aten::hardsigmoid", "--repo", str(workspace), "--executor", "emulated", "--no-input",
                 "--run-id", "tr-1"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "run tr-1 is waiting for review at the gate" in err
    assert main(["runs", "show", "tr-1", "--repo", str(workspace), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "awaiting-review"
    test = record["verdicts"]["test"]
    assert test["ok"] and test["failures"] == 0, test
    dtypes = test["report"]["dtypes"]
    assert [d["dtype"] for d in dtypes] == ["float32", "float16", "bfloat16"]
    assert all(d["random"]["passed"] == d["random"]["samples"] > 0 and d["held_out"]["passed"] > 0 for d in dtypes)


def test_backlog_names_the_translate_porter_or_why_it_declined(workspace: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["backlog", "--repo", str(workspace), "--op", "hardsigmoid", "--op", "softplus", "--op", "glu",
                 "--format", "tsv"]) == 0
    rows = {r.split("\t")[1]: r.split("\t")[5] for r in capsys.readouterr().out.splitlines()[1:]}
    assert rows == {"hardsigmoid": "translate", "softplus": "translate", "glu": "translate"}
    assert main(["backlog", "--repo", str(workspace), "--op", "threshold", "--op", "glu_jvp", "--format", "tsv"]) == 0
    rows = {r.split("\t")[1]: r.split("\t")[5] for r in capsys.readouterr().out.splitlines()[1:]}
    assert rows["glu_jvp"] == "llm: translate declined: the lambda takes 4 operands; translated ports are unary or binary"
    assert rows["threshold"].startswith("llm: translate declined: the lambda takes 2 operands and aten::threshold 1")
    assert main(["backlog", "--repo", str(workspace), "--porter", "translate", "--format", "tsv"]) == 0
    ops = sorted(r.split("\t")[1] for r in capsys.readouterr().out.splitlines()[1:])
    assert {"hardsigmoid", "hardsigmoid_backward", "softplus", "glu"} <= set(ops)
    assert "threshold" not in ops and "glu_jvp" not in ops


def test_sweep_porter_translate_starts_only_translated_ops(workspace: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["sweep", "--repo", str(workspace), "--status", "missing", "--porter", "translate", "--limit", "1",
                 "--executor", "emulated", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["options"]["porter"] == "translate"
    assert {o["op"] for o in report["outcomes"]} <= {"hardsigmoid", "hardsigmoid_backward"}
    assert len(report["started_runs"]) == 1, [(o["op"], o["outcome"], o["reason"]) for o in report["outcomes"]]
    started = next(o for o in report["outcomes"] if o.get("run_id") == report["started_runs"][0])
    assert started["outcome"] == "awaiting-review", started
