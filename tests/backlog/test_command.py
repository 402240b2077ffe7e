"""`metalport backlog` and `metalport workspace init` as users run them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.cli import main
from metalport.port.spec.recipes import recipe_ops
from tests.fixture_repo import make_fixture_checkout


def test_backlog_json_filters(wheel_workspace: Checkout, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["backlog", "--repo", str(wheel_workspace.root), "--op", "aten::heaviside", "--op", "atan2.out",
                 "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [(r["op"], r["status"], r["family"], r["stub"]) for r in rows] == [
        ("heaviside", "missing", "binary-pointwise", "heaviside_stub"),
        ("atan2", "shared", "binary-pointwise", "atan2_stub")]
    assert {"op", "status", "family", "stub", "mps_impl", "xfail", "rows", "ease"} <= set(rows[0])


def test_backlog_markdown_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkout = make_fixture_checkout(tmp_path)
    assert main(["backlog", "--repo", str(checkout.root), "--markdown", "--family", "binary-pointwise"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## MPS backlog (4 ops, from `aten/src/ATen/native/native_functions.yaml`)\n")
    assert "| mps-graph | 1 |" in out and "| binary-pointwise | 4 |" in out
    assert "| pointwise-stub | 4 |" in out
    assert "| `heaviside` | mps-graph | binary-pointwise | pointwise-stub | recipe | heaviside_stub | " \
           "aten/src/ATen/native/mps/operations/BinaryOps.mm:8 | UNIMPLEMENTED_XFAILLIST |" in out


def test_backlog_table_from_inside_the_checkout(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = make_fixture_checkout(tmp_path)
    monkeypatch.chdir(checkout.mps_operations)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["backlog", "--status", "missing"]) == 0
    out = capsys.readouterr().out
    assert "hypot" in out and "heaviside" not in out and "missing: 1" in out


def test_unknown_op_is_one_line_with_suggestions(wheel_workspace: Checkout,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backlog", "--repo", str(wheel_workspace.root), "--op", "heavisde"]) == 2
    assert capsys.readouterr().err == (
        f"metalport: error: {wheel_workspace.native_functions}: unknown op 'heavisde'; "
        "did you mean 'heaviside'?\n")


def test_malformed_registry_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkout = make_fixture_checkout(tmp_path)
    text = checkout.native_functions.read_text()
    checkout.native_functions.write_text(text.replace("    CPU, CUDA: hypot_out\n", "    CPU, CUDA: [hypot_out\n"))
    assert main(["backlog", "--repo", str(checkout.root)]) == 2
    err = capsys.readouterr().err
    assert err == (f"metalport: error: {checkout.native_functions}:48: malformed YAML: did not find expected "
                   "',' or ']' (while parsing a flow sequence started at line 47); fix the indentation or quoting there\n")


def test_repo_at_a_non_checkout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backlog", "--repo", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"metalport: error: {tmp_path}: not a PyTorch checkout: missing aten/src/ATen/native/native_functions.yaml; "
        "pass --repo at a PyTorch checkout, or create one with `metalport workspace init DIR`\n")


def test_workspace_init_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workspace", "init", str(tmp_path / "ws")]) == 0
    out = capsys.readouterr().out
    assert "the torch wheel carries no .mm / .metal sources" in out.lower()
    assert (tmp_path / "ws/aten/src/ATen/native/native_functions.yaml").is_file()
    assert main(["workspace", "init", str(tmp_path / "ws")]) == 2
    assert capsys.readouterr().err == (f"metalport: error: {tmp_path / 'ws'}: directory is not empty; "
                                       "choose a new or empty directory; nothing was written\n")


def test_backlog_status_takes_a_comma_separated_list(wheel_workspace: Checkout,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["backlog", "--repo", str(wheel_workspace.root), "--status", "missing,mps-graph",
                 "--family", "binary-pointwise", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and rows
    assert {r["status"] for r in rows} <= {"missing", "mps-graph"}
    assert "heaviside" in {r["op"] for r in rows}


def test_backlog_rejects_an_unknown_status_in_a_list(wheel_workspace: Checkout,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["backlog", "--repo", str(wheel_workspace.root), "--status", "missing,nope"])
    assert exit_.value.code == 2
    assert "invalid choice nope" in capsys.readouterr().err


def test_backlog_kind_and_porter_columns_and_filters(wheel_workspace: Checkout,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    repo = ["backlog", "--repo", str(wheel_workspace.root)]
    assert main([*repo, "--status", "missing", "--kind", "reduction-stub", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["op"], r["kind"], r["stub"]) for r in rows] == [
        ("linalg__powsum", "reduction-stub", "powsum_stub"), ("hash_tensor", "reduction-stub", None)]
    covered = recipe_ops()  # the recipe tables grow; the porter follows them
    assert [r["porter"] for r in rows] == ["recipe" if r["op"] in covered else "llm" for r in rows]
    assert rows[1]["kind_reason"] == "a reduction CPU and CUDA share (hash_tensor_out); the tree does not show its stub"

    assert main([*repo, "--status", "missing", "--porter", "none", "--format", "tsv"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert lines[0] == ["ease", "op", "status", "family", "kind", "porter", "stub", "MPS implementation",
                        "xfail/skip"]
    by_hand = [r for r in lines[1:] if r[4] != "not-a-candidate"]  # candidates only a person can port: unranked
    assert len(lines) == 1 + 118 + len(by_hand)  # and the not-a-candidate ops among the 258 missing ones
    assert all(r[0] == "-" and r[5].startswith("none: ") for r in lines[1:])
    frexp = next(r for r in by_hand if r[1] == "frexp")
    assert frexp[5] == "none: writes 2 tensors (mantissa, exponent) per element; a functor returns one: port it by hand"
    assert main([*repo, "--format", "tsv"]) == 0
    ranked = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
    assert ranked[0][0] == "1" and ranked[0][5].split(":")[0] in ("recipe", "translate", "llm")  # one metalport ports
    cslt = next(r for r in lines[1:] if r[1] == "_cslt_compress")
    assert cslt[5] == "none: cuSPARSELt (a CUDA library): MPS has no counterpart"

    assert main([*repo, "--kind", "multi-tensor", "--porter", "llm,recipe", "--op", "_foreach_add",
                 "--op", "cudnn_convolution", "--json"]) == 0
    assert [r["op"] for r in json.loads(capsys.readouterr().out)] == ["_foreach_add"]


def test_backlog_unknown_kind_or_porter_is_a_usage_error(wheel_workspace: Checkout,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["backlog", "--repo", str(wheel_workspace.root), "--porter", "maybe"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "metalport backlog: error: argument --porter: invalid choice maybe (choose from recipe, translate, llm, none)")


def test_an_empty_filtered_backlog_on_a_wheel_workspace_says_why(wheel_workspace, capsys) -> None:
    from metalport.cli import main

    root = wheel_workspace.root if hasattr(wheel_workspace, "root") else wheel_workspace
    assert main(["backlog", "--repo", str(root), "--status", "mps-graph-stub", "--format", "tsv"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip().count("\n") == 0  # the header row only
    assert captured.err.startswith("note: no op matched: mps-graph-stub is read from the MPS host sources "
                                   "(aten/src/ATen/native/mps/operations/*.mm), and a wheel workspace")
