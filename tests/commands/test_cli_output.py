"""The command line as a new user meets it: help, output into pipes and files, prune, ids, completion."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import git
import pytest

from metalport.cli import build_parser, main
from metalport.graph.records import run_dir, write_record
from metalport.run_record import RunRecord
from metalport.run_ids import RUN_ID, new_run_id
from tests.sweep.conftest import fabricate, workspace  # noqa: F401 (the fixture)

LONG_OP = "special_scaled_modified_bessel_k1_with_a_long_name"


def _metalport(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m metalport ARGS` with stdout into a pipe (not a terminal)."""
    return subprocess.run([sys.executable, "-m", "metalport", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env={**os.environ, **(env or {})})


def test_help_says_the_purpose_in_one_line_and_where_to_start() -> None:
    proc = _metalport("--help")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0
    assert lines[2] == ("Bring PyTorch operators to Apple Silicon: port ATen ops to native Metal kernels, up to "
                        "a human review.")
    start = lines.index("start here:")
    examples = [line.split("#")[0].strip() for line in lines[start + 1:start + 4]]
    assert examples == ["metalport workspace init /tmp/ws", "run-migration aten::heaviside --repo /tmp/ws",
                        "metalport backlog --repo ~/pytorch --status missing"]
    assert "console scripts" not in proc.stdout and "metalport.commands" not in proc.stdout


def test_every_subcommand_and_option_has_help() -> None:
    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {choice.dest: choice.help for choice in action._choices_actions}
                for name, sub in action.choices.items():
                    if not helps.get(name):
                        missing.append(f"{path} {name}")
                    walk(sub, f"{path} {name}")
            elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)) and (
                    not action.help or action.help == argparse.SUPPRESS):
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "metalport")
    assert missing == []


def test_tables_off_a_terminal_are_full_width_or_tsv_or_json(workspace: Path) -> None:
    run_id = new_run_id(LONG_OP)
    fabricate(workspace, run_id, LONG_OP, "failed", stage="plan", reason="x " * 200,
              branch=f"metalport/{LONG_OP}")
    table = _metalport("runs", "--repo", str(workspace))
    assert table.returncode == 0
    row = next(line for line in table.stdout.splitlines() if run_id in line)
    assert f"aten::{LONG_OP}" in row and f"metalport/{LONG_OP}" in row  # one line: nothing folded

    tsv = _metalport("runs", "--repo", str(workspace), "--format", "tsv").stdout.splitlines()
    assert tsv[0] == "id\top\tstatus\tstage\tattempts\tbranch\tage"
    assert tsv[1].split("\t")[:6] == [run_id, f"aten::{LONG_OP}", "failed", "plan", "1", f"metalport/{LONG_OP}"]
    listed = json.loads(_metalport("runs", "--repo", str(workspace), "--format", "json").stdout)
    assert [r["run_id"] for r in listed] == [run_id]

    backlog = _metalport("backlog", "--repo", str(workspace), "--status", "missing", "--format", "tsv").stdout
    rows = [line.split("\t") for line in backlog.splitlines()]
    assert rows[0][:3] == ["ease", "op", "status"] and len(rows) > 5
    assert all(len(r) == 9 and r[2] == "missing" for r in rows[1:])
    wide = _metalport("backlog", "--repo", str(workspace), "--status", "missing").stdout
    for op in (r[1] for r in rows[1:]):  # every op name whole on one line, however long
        assert re.search(rf"│ {re.escape(op)} +│", wide), op


def test_review_show_into_a_file_gives_a_diff_that_applies(workspace: Path, tmp_path: Path) -> None:
    repo = git.Repo(workspace)
    tree = tmp_path / "wt"
    repo.git.worktree("add", "-q", "-b", "metalport/heaviside", str(tree))
    target = tree / "aten/src/ATen/native/mps/kernels/LongLines.metal"
    long_line = "constexpr int table[] = {" + ", ".join(str(i) for i in range(120)) + "};"
    target.write_text(f"// a kernel file with a long line\n{long_line}\n", encoding="utf-8")
    registry = tree / "aten/src/ATen/native/native_functions.yaml"
    registry.write_text(registry.read_text(encoding="utf-8") + "# " + "y" * 300 + "\n", encoding="utf-8")
    run_id = new_run_id("heaviside")
    write_record(RunRecord(run_id, "aten::heaviside", "awaiting-review", "approve", 1, "metalport/heaviside",
                           str(tree), "2026-12-03T09:00:00Z", "2026-12-03T09:00:00Z"), run_dir(workspace, run_id))
    saved = tmp_path / "review.txt"
    with saved.open("w") as out:
        proc = subprocess.run([sys.executable, "-m", "metalport", "review", "show", run_id, "--repo", str(workspace)],
                              stdout=out, stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    text = saved.read_text(encoding="utf-8")
    assert f"+{long_line}" in text.splitlines() and "\x1b[" not in text
    check = subprocess.run(["git", "apply", "--check", "-v", str(saved)], cwd=workspace, capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    assert "LongLines.metal" in check.stderr and "native_functions.yaml" in check.stderr


def test_runs_prune_by_status_and_age_never_touches_open_runs(workspace: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    old, new = "2026-11-01T10:00:00Z", "2099-01-01T10:00:00Z"  # ~a month old / not yet old at all
    fabricate(workspace, "heaviside-20261101-100000-aaaa", "heaviside", "failed", created_at=old)
    fabricate(workspace, "frexp-20261101-100000-bbbb", "frexp", "needs-llm", created_at=old)
    fabricate(workspace, "sub-20261101-100000-cccc", "sub", "rejected", created_at=old)
    fabricate(workspace, "sign-20261101-100000-dddd", "sign", "awaiting-review", created_at=old)
    fabricate(workspace, "sgn-20990101-100000-eeee", "sgn", "failed", created_at=new)
    repo = str(workspace)

    assert main(["runs", "prune", "--repo", repo, "--older-than", "7d", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would prune heaviside-20261101-100000-aaaa (aten::heaviside, failed," in out
    assert "would prune 2 runs (failed, aborted, needs-llm, budget-exhausted, base-broken, older than 7d)" in out
    assert (run_dir(workspace, "heaviside-20261101-100000-aaaa") / "run.json").is_file()

    assert main(["runs", "prune", "--repo", repo, "--older-than", "7d"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == ("pruned 2 runs (failed, aborted, needs-llm, "
                                                        "budget-exhausted, base-broken, older than 7d)")
    left = {r["run_id"] for r in json.loads(_metalport("runs", "--repo", repo, "--json").stdout)}
    assert left == {"sub-20261101-100000-cccc", "sign-20261101-100000-dddd", "sgn-20990101-100000-eeee"}

    assert main(["runs", "prune", "--repo", repo, "--status", "rejected"]) == 0
    assert "pruned sub-20261101-100000-cccc (aten::sub, rejected," in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["runs", "prune", "--repo", repo, "--status", "awaiting-review"])
    assert exit_.value.code == 2
    assert "invalid status awaiting-review" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["runs", "prune", "--repo", repo, "--older-than", "3 weeks"])
    assert "invalid duration '3 weeks' (use e.g. 30m, 12h, 7d or 2w)" in capsys.readouterr().err
    assert (run_dir(workspace, "sign-20261101-100000-dddd") / "run.json").is_file()


@pytest.mark.parametrize("op", ["heaviside", "_aminmax", "_foreach_add", "aten::add.Tensor",
                                "_scaled_dot_product_flash_attention_for_cpu_backward"])
def test_one_run_id_format_for_every_aten_op(op: str) -> None:
    run_id = new_run_id(op)
    name = op.removeprefix("aten::").replace(".", "_")[:40]
    assert re.fullmatch(rf"{re.escape(name)}-\d{{8}}-\d{{6}}-[0-9a-f]{{4}}", run_id)
    assert RUN_ID.match(run_id)


def test_ids_with_a_leading_underscore_are_accepted_by_every_command(workspace: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    run_id = new_run_id("_foreach_add")
    fabricate(workspace, run_id, "_foreach_add", "failed", stage="plan")
    assert main(["runs", "show", run_id, "--repo", str(workspace)]) == 0
    assert f"run {run_id}: aten::_foreach_add" in capsys.readouterr().out
    assert main(["resume", "_aminmax-20261203-090000-0000", "--repo", str(workspace)]) == 2
    assert "unknown run id '_aminmax-20261203-090000-0000'" in capsys.readouterr().err
    assert main(["resume", "../etc", "--repo", str(workspace)]) == 2
    assert "is not a valid run id" in capsys.readouterr().err


def test_doctor_checks_the_repo_it_is_given(workspace: Path, tmp_path: Path) -> None:
    good = _metalport("doctor", "--repo", str(workspace), "--no-endpoint")
    assert good.returncode == 0
    assert re.search(rf"^checkout: {re.escape(str(workspace))} \(wheel workspace; "
                     r"aten/src/ATen/native/native_functions.yaml: \d+ ops, \d+ entries\)$", good.stdout, re.M)
    bad = _metalport("doctor", "--repo", str(tmp_path), "--no-endpoint")
    assert bad.returncode == 1
    assert f"checkout: unusable: {tmp_path}: not a PyTorch checkout" in bad.stdout


def test_shell_completion_offers_ops_and_run_ids(workspace: Path, tmp_path: Path) -> None:
    run_id = new_run_id("heaviside")
    fabricate(workspace, run_id, "heaviside", "awaiting-review")

    def complete(line: str) -> list[str]:
        out = tmp_path / "completions.txt"
        env = {"_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
               "_ARGCOMPLETE_STDOUT_FILENAME": str(out), "_ARGCOMPLETE_COMP_WORDBREAKS": " \t\n"}
        proc = _metalport(cwd=workspace, env=env)
        assert proc.returncode == 0, proc.stderr
        return out.read_text().replace("\x0b", "\n").split()

    assert complete("metalport run aten::heavi") == ["aten::heaviside"]
    assert "heaviside" in complete("metalport conformance heav")
    assert complete("metalport review show heavi") == [run_id]
    assert complete("metalport resume heav") == [run_id]


def test_a_reader_that_stops_early_ends_the_command_quietly(workspace: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "metalport", "backlog", "--repo", str(workspace), "--format",
                             "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == "[\n"  # hundreds of KB follow: more than a pipe holds
    proc.stdout.close()  # like `metalport backlog --json | head -1`
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=300) == 141 and err == ""
