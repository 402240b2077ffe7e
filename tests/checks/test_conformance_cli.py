"""`metalport conformance`: table, JSON, exit codes and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.cli import main


def test_pass_prints_a_table_and_exits_0(good_checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "aten::atan2", "--repo", str(good_checkout), "--dtypes", "float32,half",
                 "--seed", "9", "--backend", "emulated"])
    out = capsys.readouterr().out
    assert code == 0
    assert "float32" in out and "float16" in out and "aten::atan2: pass" in out and "seed 9" in out


def test_fail_exits_1_and_names_the_file(mutant_checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "aten::atan2", "--repo", str(mutant_checkout), "--dtypes", "float32",
                 "--no-held-out", "--backend", "emulated"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL" in out and "PointwiseKernel.metal" in out and "aten::atan2: fail" in out


def test_json_report_has_counts_only(mutant_checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "aten::maximum", "--repo", str(mutant_checkout), "--dtypes", "float32",
                 "--json", "--seed", "1", "--backend", "emulated"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["status"] == "fail" and data["seed"] == 1
    d = data["dtypes"][0]
    assert d["held_out_passed"] < d["held_out_samples"] and "held_out_inputs" not in d


def test_no_host_model_is_not_judged_and_exits_3(reduction_checkout: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "aten::logsumexp", "--repo", str(reduction_checkout), "--backend", "emulated"]) == 3
    out = capsys.readouterr().out
    assert "no emulated host model; verify on macOS" in out and "not judged, exit 3" in out


def test_help_documents_the_not_judged_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["conformance", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "3 when not judged" in out and "1 on fail" in out and "--explain" in out


def test_explain_shows_input_cpu_truth_kernel_and_the_broken_part(mutant_checkout: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "aten::atan2", "--repo", str(mutant_checkout), "--dtypes", "float32",
                 "--no-held-out", "--backend", "emulated", "--seed", "3", "--explain"])
    out = capsys.readouterr().out
    assert code == 1
    for field in ("  case:", "  input:  (", "  CPU:", "  truth:", "  kernel:", "  broke:"):
        assert field in out, out[-2000:]


def test_a_held_out_fail_points_to_show_held_out(mutant_checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "aten::maximum", "--repo", str(mutant_checkout), "--dtypes", "float32",
                 "--seed", "1", "--backend", "emulated"])
    out = capsys.readouterr().out
    held = [line for line in out.splitlines() if line.startswith("FAIL") and "held-out" in line]
    assert code == 1 and held and all("--show-held-out" in line for line in held)


@pytest.mark.parametrize("argv, message", [
    (["aten::atan3"], "unknown op aten::atan3; did you mean aten::atan"),
    (["aten::cos"], "no kernel file under aten/src/ATen/native/mps/kernels registers cos"),
    (["aten::atan2", "--dtypes", "float33"], "unknown dtype 'float33'"),
    (["aten::atan2", "--dtypes", "int64"], "atan2's kernels register no int64; registered: float32, float16, int32"),
])
def test_bad_input_is_one_line_exit_2(good_checkout: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                      message: str) -> None:
    code = main(["conformance", *argv, "--repo", str(good_checkout), "--backend", "emulated"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_missing_compiler_is_one_line_exit_2(good_checkout: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("METALPORT_CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("METALPORT_CACHE_DIR", str(tmp_path / "cache"))
    code = main(["conformance", "aten::neg", "--repo", str(good_checkout), "--backend", "emulated"])
    err = capsys.readouterr().err
    assert code == 2 and "METALPORT_CXX" in err and len(err.strip().splitlines()) == 1


def test_not_a_checkout_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "aten::neg", "--repo", str(tmp_path)]) == 2
    assert "missing aten/src/ATen/native/mps/kernels" in capsys.readouterr().err


def test_show_held_out_prints_the_failing_inputs_for_a_human(mutant_checkout: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["conformance", "aten::maximum", "--repo", str(mutant_checkout), "--dtypes", "float32", "--seed", "1",
            "--backend", "emulated"]
    assert main(argv) == 1
    hidden = capsys.readouterr().out
    assert main([*argv, "--show-held-out"]) == 1
    shown = capsys.readouterr().out
    assert "HELD-OUT" not in hidden and "inputs: [[" not in hidden
    assert "HELD-OUT float32 held-out" in shown and "inputs: [[" in shown
    assert main([*argv, "--json", "--show-held-out"]) == 1
    assert json.loads(capsys.readouterr().out)["dtypes"][0]["held_out_inputs"]


def test_table_counts_opinfo_random_and_held_out_apart(good_checkout: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "aten::atan2", "--repo", str(good_checkout), "--dtypes", "float32", "--seed", "3",
                 "--backend", "emulated", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["dtypes"][0]
    assert d["opinfo"]["samples"] > 0 and d["random"]["samples"] > 0 and d["held_out"]["samples"] > 0
    assert d["opinfo"]["passed"] + d["opinfo"]["out_of_scope"] == d["opinfo"]["samples"] and d["skipped"] == 0
