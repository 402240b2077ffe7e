"""`metalport sweep --kind` and the recipe model: ops no recipe covers are never started, ops that
are no port candidates never taken. No run starts here (each covered op awaits review already)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.backlog import scan_backlog
from metalport.checkout import find_checkout
from metalport.cli import main
from metalport.port.spec.recipes import recipe_ops
from tests.sweep.conftest import fabricate

KINDS = "reduction-stub,custom-kernel,multi-tensor"


def test_recipe_sweep_takes_only_covered_ops_of_the_kinds_asked(workspace: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    items = {i.op: i for i in scan_backlog(find_checkout(workspace))}
    wanted = {op for op, i in items.items() if i.status.value == "missing" and i.kind.kind.value in KINDS.split(",")}
    covered = recipe_ops() & wanted
    assert covered, "the recipe tables cover some missing reduction/custom ops"
    for op in covered:  # someone is on each covered op already, so this sweep starts no run
        fabricate(workspace, f"{op}-1", op, "awaiting-review", branch=f"metalport/{op}")
    code = main(["sweep", "--repo", str(workspace), "--status", "missing", "--kind", KINDS, "--model", "recipe",
                 "--max-open", "999", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["started_runs"] == []
    outcomes = {o["op"]: o for o in report["outcomes"]}
    assert set(outcomes) == wanted  # never a not-a-candidate op (cudnn_*, _cslt_*, ...) nor a pointwise one
    assert "cudnn_convolution" not in outcomes and "_cslt_compress" not in outcomes and "heaviside" not in outcomes
    for op, outcome in outcomes.items():
        if op in covered:
            assert (outcome["outcome"], outcome["reason"]) == ("skipped", f"run {op}-1 awaits review")
        else:
            assert (outcome["outcome"], outcome["skip"], outcome["reason"]) == (
                "skipped", "needs-llm", f"aten::{op} has no recipe in the recipe table (it needs an LLM); sweep with "
                "--model openai:MODEL to port it")
    assert report["options"]["kind"] == KINDS


def test_sweep_refuses_not_a_candidate_as_a_kind(workspace: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["sweep", "--repo", str(workspace), "--kind", "not-a-candidate"])
    assert exited.value.code == 2
    assert "argument --kind: invalid choice not-a-candidate" in capsys.readouterr().err
