"""What a new user hits (issue #33): bad settings, damaged records, the gate without a terminal, doctor's
endpoint errors: each one line naming the cause and the fix, a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metalport.graph.records import run_dir
from tests.sweep.conftest import fabricate, workspace  # noqa: F401 (the fixture)


def _metalport(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m metalport ARGS` (stdout and stderr into pipes, not a terminal)."""
    return subprocess.run([sys.executable, "-m", "metalport", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def _one_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("url", ["garbage", "postgres://[::1", "http://s3cret-host"])
def test_a_malformed_database_url_is_one_line_without_the_url(workspace: Path, url: str) -> None:
    proc = _metalport("runs", "--repo", str(workspace), env={"METALPORT_DATABASE_URL": url})
    line = _one_line(proc)
    assert proc.returncode == 2 and line.startswith("metalport: error: METALPORT_DATABASE_URL is not a PostgreSQL URL")
    assert "write it as postgresql://USER@HOST:PORT/DATABASE" in line and url not in line


@pytest.mark.parametrize("address", ["host:port:extra", "127.0.0.1:99999", "http://127.0.0.1:7233", "notaport"])
def test_a_malformed_temporal_address_is_one_line(workspace: Path, address: str) -> None:
    proc = _metalport("fleet", "status", "--repo", str(workspace),
                      env={"METALPORT_TEMPORAL_ADDRESS": address, "METALPORT_DATABASE_URL": "postgresql://u@127.0.0.1:1/d"})
    line = _one_line(proc)
    assert proc.returncode == 2 and line == (
        f"metalport: error: METALPORT_TEMPORAL_ADDRESS {address!r} is not HOST:PORT; write it as HOST:PORT, e.g. "
        "127.0.0.1:7233 (no scheme, a port from 1 to 65535)")


def test_a_truncated_record_is_named_by_approve_runs_and_review_list(workspace: Path) -> None:
    fabricate(workspace, "heaviside-20261201-100000-aaaa", "heaviside", "awaiting-review", branch="metalport/heaviside")
    fabricate(workspace, "frac-20261201-100000-bbbb", "frac", "awaiting-review", branch="metalport/frac")
    path = run_dir(workspace, "heaviside-20261201-100000-aaaa") / "run.json"
    path.write_text(path.read_text()[:150])  # a crash or a full disk cut it short

    proc = _metalport("review", "approve", "heaviside-20261201-100000-aaaa", "--repo", str(workspace))
    line = _one_line(proc)
    assert proc.returncode == 2 and line.startswith(
        f"metalport: error: {path}: run heaviside-20261201-100000-aaaa: its record is unreadable (")
    assert line.endswith(f"; restore it, or remove {path.parent} to forget the run")

    for argv in (("runs",), ("review", "list")):
        proc = _metalport(*argv, "--repo", str(workspace))
        assert proc.returncode == 0 and "frac-20261201-100000-bbbb" in proc.stdout
        assert _one_line(proc).startswith(f"metalport: skipped {path}: run heaviside-20261201-100000-aaaa: its "
                                          "record is unreadable ("), argv


def test_the_gate_without_a_terminal_shows_the_evidence_then_how_to_read_then_decide_and_approve_names_the_author(
        workspace: Path, tmp_path: Path) -> None:
    proc = _metalport("run", "aten::heaviside", "--repo", str(workspace), "--no-input")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if "is waiting for review at the gate" in line)
    run_id = lines[start].split()[1]
    gate = lines[start:]
    assert gate[0] == f"run {run_id} is waiting for review at the gate; the evidence:"
    test = next(line for line in gate if line.startswith("  test: "))
    assert "conformance on" in test and "opinfo " in test and "/" in test  # the counts, not just "passed"
    show = gate.index(f"read the plan, the diff and the evidence: metalport review show {run_id} --repo {workspace}")
    decide = gate.index("then decide with:")
    assert gate.index(test) < show < decide  # evidence first, then where to read, then the decision
    assert gate[decide + 1] == f"  metalport review approve {run_id} --repo {workspace}"

    from metalport.graph.records import get_run
    from metalport.run_record import RunRecord

    before = get_run(workspace, run_id).elapsed_s()
    time.sleep(3.0)  # waiting at the gate is not work (README: elapsed leaves the waits out)
    proc = _metalport("resume", run_id, "--repo", str(workspace), "--no-input", "--json")  # the gate again
    assert proc.returncode == 0 and "is waiting for review at the gate" in proc.stderr
    shown = RunRecord.from_dict(json.loads(proc.stdout))
    assert shown.elapsed_s() < before + 2.0 and shown.paused_s >= 3.0

    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tuseConfigOnly = true\n")  # git has no identity and may not guess one
    env = {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}
    proc = _metalport("review", "approve", run_id, "--repo", str(workspace), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"run {run_id} (aten::heaviside) published: ")
    assert "note: git has no identity here, so the commit is authored metalport <metalport@localhost>" in proc.stderr

    # The README's way to apply a bundle keeps the "[MPS]" of the title (a plain `git am` strips it).
    bundle = workspace / ".git" / "metalport" / "runs" / run_id / "bundle"
    clone = tmp_path / "clone"
    ident = ["-c", "user.name=R", "-c", "user.email=r@localhost"]
    subprocess.run(["git", "clone", "-q", str(workspace), str(clone)], check=True)
    patches = sorted(str(p) for p in (bundle / "patches").glob("*.patch"))
    subprocess.run(["git", *ident, "am", "-q", "--keep-non-patch", *patches], cwd=clone, check=True)
    title = subprocess.run(["git", "log", "-1", "--format=%s"], cwd=clone, capture_output=True, text=True).stdout
    assert title.startswith("[MPS] "), title

    # Published, not merged: a new run of the op says so (it planned on the unmerged change before).
    proc = _metalport("run", "aten::heaviside", "--repo", str(workspace), "--no-input")
    line = _one_line(proc)
    bundle = workspace / ".git" / "metalport" / "runs" / run_id / "bundle"
    assert proc.returncode == 2 and line == (
        f"metalport: error: aten::heaviside is already published by run {run_id} ({bundle}), not yet merged; merge "
        "that change (its PR, or `git am --keep-non-patch` of its bundle); to port it again, delete branch "
        "metalport/heaviside first")


def test_a_deleted_worktree_is_named_and_the_suggested_command_works(workspace: Path) -> None:
    import shutil

    proc = _metalport("run", "aten::heaviside", "--repo", str(workspace), "--no-input")
    assert proc.returncode == 0, proc.stderr
    run_id = next(line.split()[1] for line in proc.stderr.splitlines() if "waiting for review at the gate" in line)
    worktree = workspace / ".git" / "metalport" / "worktrees" / run_id
    shutil.rmtree(worktree)  # a user cleaning up by hand
    abort = f"metalport resume {run_id} --abort --repo {workspace}"
    gone = (f"metalport: error: {worktree}: the run's worktree was deleted, and the change in it with it; abort the "
            f"run (`{abort}`), then start a new one with `run-migration aten::heaviside --repo {workspace}`")
    for argv in (("review", "approve", run_id), ("resume", run_id)):  # a retry cannot get past it: never suggested
        proc = _metalport(*argv, "--repo", str(workspace))
        assert proc.returncode == 2 and proc.stderr.splitlines()[-1] == gone, argv
    proc = _metalport("review", "approve", run_id, "--repo", str(workspace))
    line = _one_line(proc)
    assert proc.returncode == 2 and f"its worktree {worktree} was deleted" in line and f"`{abort}`" in line
    assert "retries" not in line
    proc = _metalport("resume", run_id, "--abort", "--repo", str(workspace))  # what it suggested works
    assert proc.returncode == 0, proc.stderr
    proc = _metalport("run", "aten::heaviside", "--repo", str(workspace), "--no-input")
    assert proc.returncode == 0 and "waiting for review at the gate" in proc.stderr


def test_a_byte_that_is_not_utf8_names_its_file(tmp_path: Path) -> None:
    import git as gitpython

    from tests.real_tree import overlay_real_tree

    root = overlay_real_tree(tmp_path / "real", writable=True).root
    kernel = root / "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
    data = kernel.read_bytes() + b"// caf\xe9\n"  # a Latin-1 comment
    kernel.write_bytes(data)
    repo = gitpython.Repo(root)
    repo.git.add(str(kernel))
    repo.git.commit("-qm", "a Latin-1 comment", author="T <t@localhost>")
    line = data.count(b"\n")
    proc = _metalport("run", "aten::frac", "--repo", str(root), "--no-input")
    assert proc.returncode == 2 and _one_line_last(proc) == (
        f"metalport: error: {kernel}:{line}:7: byte 0xE9 is not UTF-8 (invalid continuation byte); "
        "save the file as UTF-8; retrying or resuming cannot help until it is")


def _one_line_last(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.splitlines()[-1]


@pytest.mark.parametrize("target", ["dir", "/dev/null"])
def test_kernels_given_a_directory_or_a_device_says_which(tmp_path: Path, target: str) -> None:
    path = tmp_path if target == "dir" else Path(target)
    proc = _metalport("kernels", str(path))
    what = ("is a directory, not a shader file; name one .metal file in it" if target == "dir"
            else "not a regular file (a device or a pipe), not a shader file; name a .metal file")
    assert proc.returncode == 2 and proc.stderr == f"metalport: error: {path}: {what}\n"


def test_hostcheck_on_a_shader_points_to_kernels(wheel_workspace: object, tmp_path: Path) -> None:
    root = Path(getattr(wheel_workspace, "root", wheel_workspace))
    shader = root / "aten/src/ATen/native/mps/kernels/X.metal"  # never written: the suffix decides
    proc = _metalport("hostcheck", str(shader))
    assert proc.returncode == 2 and proc.stderr == (
        f"metalport: error: {shader}: a Metal shader, not host code; check a shader with `metalport kernels "
        f"{shader} --repo {root}`; hostcheck takes .mm files\n")
    proc = _metalport("hostcheck", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr == (
        f"metalport: error: {tmp_path}: is a directory, not a .mm file; name the .mm files in it\n")


def test_a_cold_kernels_compile_says_what_it_is_doing_on_stderr(tmp_path: Path) -> None:
    from tests.emulate.conftest import FIXTURES

    shader = FIXTURES / "pointwise.metal"
    proc = _metalport("kernels", str(shader), env={"METALPORT_CACHE_DIR": str(tmp_path / "cold")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0] == (f"metalport: compiling {shader} on the CPU (a large shader takes about "
                                           "30 s the first time; cached after)")
    assert "kernels in" in proc.stdout  # the table still goes to stdout alone


def test_sgn_on_the_real_corpus_reaches_the_gate(tmp_path: Path) -> None:
    """The issue's recipe (#33.4): a workspace with the real files laid over it, `run aten::sgn`: the
    contract check on the real UnaryKernel.metal passes and the run reaches the gate."""
    from tests.real_tree import overlay_real_tree

    root = overlay_real_tree(tmp_path / "real", writable=True).root
    proc = _metalport("run", "aten::sgn", "--repo", str(root), "--no-input")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "✓ check" in proc.stderr and "is waiting for review at the gate" in proc.stderr
