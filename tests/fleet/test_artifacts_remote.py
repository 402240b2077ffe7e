"""Run artifacts through a git remote (`fleet: artifacts_remote:`): pushed at the gate to run refs,
read and approved from a checkout that never sees the worker's disk nor has the run's base commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.cli import main
from tests.fleet.conftest import git


def _cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_artifacts_pushed_to_run_refs_then_shown_and_approved_from_a_checkout_without_the_base(
        checkouts: tuple[Path, Path], database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    from metalport.store import open_store

    a, b = checkouts
    remote = tmp_path / "artifacts.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    # A moves on after B was cloned: the run's base commit is A's alone, and B has no way to A.
    (a / "NOTES.txt").write_text("a commit B never fetched\n")
    git(a, "add", "NOTES.txt")
    git(a, "-c", "user.name=F", "-c", "user.email=f@localhost", "commit", "-qm", "later")
    base = git(a, "rev-parse", "HEAD").strip()
    git(b, "remote", "remove", "origin")
    monkeypatch.setenv("METALPORT_ARTIFACTS_REMOTE", str(remote))

    code, out, err = _cli(capsys, "run", "special_ndtri", "--repo", str(a), "--executor", "command", "--no-input",
                          "--json")
    run_id = json.loads(out.strip().splitlines()[-1])["run_id"]
    assert code == 0, err

    refs = git(remote, "for-each-ref", "--format=%(refname)").split()
    assert refs == [f"refs/metalport/evidence/{run_id}", f"refs/metalport/runs/{run_id}"]  # no branch pushed
    change = f"refs/metalport/runs/{run_id}"
    assert git(remote, "rev-parse", f"{change}^").strip() == base
    assert "special_ndtri_mps_kernel" in git(remote, "show", change)
    assert "evidence/plan.json" in git(remote, "ls-tree", "-r", "--name-only", f"refs/metalport/evidence/{run_id}")
    store = open_store(a)
    assert store.files(run_id, "evidence/") == [] and store.get_file(run_id, "patch-series.mbox") is None
    assert json.loads(store.get_file(run_id, "artifacts.json"))["remote"] == str(remote)

    hidden = tmp_path / "hidden-runs"
    (a / ".git" / "metalport" / "runs").rename(hidden)  # the reviewer never sees the worker's disk

    monkeypatch.setenv("METALPORT_ARTIFACTS_REMOTE", str(tmp_path / "nowhere.git"))
    code, out, err = _cli(capsys, "review", "show", run_id, "--repo", str(b))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"metalport: error: cannot fetch refs/metalport/evidence/{run_id} from the artifacts "
                          f"remote {tmp_path / 'nowhere.git'}: ")
    monkeypatch.setenv("METALPORT_ARTIFACTS_REMOTE", str(remote))

    code, out, err = _cli(capsys, "review", "show", run_id, "--repo", str(b))
    assert code == 0, err
    assert f"evidence in git remote {remote} (refs/metalport/evidence/{run_id}) (made on" in out
    assert "plan.json" in out and "run.json" in out
    assert "Subject: [PATCH] [metalport] aten::special_ndtri" in out and str(a) not in out
    code, out, _ = _cli(capsys, "review", "show", run_id, "--repo", str(b), "--file", "plan.json")
    assert code == 0 and json.loads(out)
    code, _, err = _cli(capsys, "review", "show", run_id, "--repo", str(b), "--file", "nope.txt")
    assert code == 2 and f"run {run_id} has no evidence file 'nope.txt'" in err

    code, out, err = _cli(capsys, "review", "approve", run_id, "--repo", str(b))
    assert code == 0, err
    bundle = b / ".git" / "metalport" / "runs" / run_id / "bundle"
    assert out == f"run {run_id} (aten::special_ndtri) published: {bundle}\n"  # one line, the reviewer's side
    log = git(b, "log", "--format=%s%n%b", "-2", "metalport/special_ndtri")
    assert log.count("[MPS] Add native Metal kernel for special_ndtri") == 1 and f"Metalport-Run: {run_id}" in log
    assert git(b, "rev-parse", "metalport/special_ndtri^").strip() == base  # the base came with the run ref
    assert "special_ndtri_mps_kernel" in git(b, "show", "metalport/special_ndtri")
    assert f"Metalport-Run: {run_id}" not in git(a, "log", "--all", "--format=%b")  # nothing committed on A


def test_an_unreachable_artifacts_remote_keeps_the_artifacts_in_the_database(
        checkouts: tuple[Path, Path], database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    from metalport.store import open_store

    a, b = checkouts
    monkeypatch.setenv("METALPORT_ARTIFACTS_REMOTE", str(tmp_path / "down.git"))
    code, out, err = _cli(capsys, "run", "heaviside", "--repo", str(a), "--executor", "command", "--no-input", "--json")
    run_id = json.loads(out.strip().splitlines()[-1])["run_id"]
    assert code == 0, err
    assert f"cannot push run {run_id}'s artifacts to {tmp_path / 'down.git'}: " in err
    assert f"run {run_id}'s artifacts go to the database instead" in err
    store = open_store(a)
    assert store.get_file(run_id, "artifacts.json") is None
    assert store.get_file(run_id, "patch-series.mbox").startswith("From ")
    (a / ".git" / "metalport" / "runs").rename(tmp_path / "hidden-runs")
    code, out, err = _cli(capsys, "review", "show", run_id, "--repo", str(b))
    assert code == 0 and "evidence in the shared store (made on" in out, err


def test_the_public_fork_or_upstream_is_refused_as_artifacts_remote(tmp_path: Path) -> None:
    from metalport.errors import UsageError
    from metalport.store.gitremote import check_remote

    git(tmp_path, "init", "-q")
    git(tmp_path, "remote", "add", "fork", "git@github.com:someone/pytorch.git")
    git(tmp_path, "remote", "add", "private", str(tmp_path / "private.git"))
    (tmp_path / "metalport.yaml").write_text("remote:\n  name: fork\n")
    for remote in ("fork", "git@github.com:someone/pytorch.git", "https://github.com/pytorch/pytorch.git"):
        with pytest.raises(UsageError, match="is the public fork or upstream: runs are never pushed there"):
            check_remote(tmp_path, remote)
    check_remote(tmp_path, "private")  # a private remote is fine


def test_a_token_in_the_artifacts_remote_url_is_never_shown(tmp_path: Path) -> None:
    from metalport.store.gitremote import ArtifactsUnreachable, fetch
    from tests.fleet.services import free_port

    git(tmp_path, "init", "-q")
    url = f"https://metalport:s3cret-token@127.0.0.1:{free_port()}/artifacts.git"
    with pytest.raises(ArtifactsUnreachable) as err:
        fetch(tmp_path, {"remote": url}, "refs/metalport/evidence/heaviside-1", None)
    assert "s3cret-token" not in str(err.value) and "metalport:***@127.0.0.1" in str(err.value)
