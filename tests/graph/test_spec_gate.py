"""A custom-kernel port from the spec recipe table reaches the gate on the wheel workspace with
`--model recipe`: plan, edit, contract, emulated build and spec conformance all pass, and the
reviewer reads the launch spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.cli import main, run_migration


def test_powsum_reaches_the_gate_and_shows_its_spec(wheel_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = str(wheel_repo)
    assert run_migration(["aten::linalg__powsum", "--repo", repo, "--executor", "emulated", "--no-input",
                          "--run-id", "spec-1"]) == 0
    err = capsys.readouterr().err
    for node in ("plan", "edit", "check", "build", "test"):
        assert f"✓ {node}" in err, err
    assert "run spec-1 is waiting for review at the gate" in err
    assert main(["review", "show", "spec-1", "--repo", repo]) == 0
    shown = capsys.readouterr().out
    assert "registry linalg__powsum line 14149: CPU, CUDA: linalg__powsum -> CPU, CUDA, MPS: linalg__powsum" in shown
    assert "linalg__powsum (missing, reduction): add native Metal support" in shown
    assert "reduction-stub: kernel powsum in aten/src/ATen/native/mps/kernels/PowSum.metal" in shown
    assert "launch spec:" in shown and "grid: per-slice" in shown
    assert "check: passed" in shown
    assert "test: passed; emulated conformance on 5 dtype(s)" in shown and "0 skipped" in shown
    assert "+static void powsum_kernel_mps(TensorIterator& iter, const Scalar& ord) {" in shown
    assert "+REGISTER_DISPATCH(powsum_stub, &powsum_kernel_mps)" in shown
    assert main(["runs", "--repo", repo, "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["status"]) for r in runs] == [("spec-1", "awaiting-review")]


def test_ctc_scan_reaches_the_gate_and_the_reviewer_reads_what_was_not_compared(
        wheel_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = str(wheel_repo)
    assert run_migration(["aten::_ctc_loss", "--repo", repo, "--executor", "emulated", "--no-input",
                          "--run-id", "ctc-1"]) == 0
    capsys.readouterr()
    assert main(["review", "show", "ctc-1", "--repo", repo]) == 0
    shown = capsys.readouterr().out
    assert "_ctc_loss (missing, other): add native Metal support" in shown
    assert "registry _ctc_loss.Tensor line 2008: CPU, CUDA: ctc_loss_tensor -> CPU, CUDA, MPS: ctc_loss_tensor" in shown
    test_line = next(line for line in shown.splitlines() if line.startswith("test: "))
    assert test_line.startswith("test: passed; emulated conformance on 2 dtype(s)") and "0 skipped" in test_line
    # Note [unset outputs]: the elements of log_alpha torch's CPU kernel leaves unset are counted, in view.
    assert "output elements torch's CPU kernel leaves unset not compared" in test_line
