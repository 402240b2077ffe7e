"""Publish after approval: push to the user's fork (a local bare repo) and one draft PR on a local
GitHub API; never the base branch, never a token in the PR body."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.errors import PublishError
from metalport.graph import Approve, RunOptions, get_run, resume_run, start_run
from tests.graph.conftest import git, worktrees
from tests.publish.conftest import FakeGitHub

TOKEN = "t0ps3cret"


def _fork(fixture_repo: Path, tmp_path: Path, github: FakeGitHub, remote: str = "fork") -> Path:
    bare = tmp_path / "fork.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(fixture_repo, "remote", "add", remote, str(bare))
    (tmp_path / "metalport.yaml").write_text(
        f"remote:\n  name: {remote}\n  fork_owner: ada\n  api_url: {github.url}\n  github_repo: pytorch/pytorch\n")
    return bare


def test_approved_run_pushes_to_the_fork_and_opens_one_draft_pr(fixture_repo: Path, tmp_path: Path,
                                                                 github: FakeGitHub,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "metalport.yaml"
    bare = _fork(fixture_repo, tmp_path, github)
    git(fixture_repo, "remote", "add", "upstream", str(bare))
    config.write_text(config.read_text().replace("name: fork", "name: upstream"))
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    options = RunOptions(executor="emulated", config_path=str(config))
    assert start_run(fixture_repo, "aten::heaviside", options, run_id="pub-1").status == "awaiting-review"

    # An upstream remote is refused; the approved, committed work is kept for a retry.
    with pytest.raises(PublishError, match="refusing to push to 'upstream'"):
        resume_run(fixture_repo, "pub-1", Approve())
    failed = get_run(fixture_repo, "pub-1")
    assert (failed.status, failed.stage, failed.branch) == ("failed", "publish", "metalport/heaviside")
    assert "metalport resume pub-1" in failed.reason and github.requests == []
    assert git(bare, "branch").strip() == ""

    config.write_text(config.read_text().replace("name: upstream", "name: fork"))
    record = resume_run(fixture_repo, "pub-1")
    assert record.status == "published" and record.pr_url == "https://github.test/pytorch/pytorch/pull/1"
    assert record.bundle_path is None
    assert git(bare, "branch", "--format=%(refname:short)").split() == ["metalport/heaviside"]
    assert git(fixture_repo, "rev-list", "--count", "main..metalport/heaviside").strip() == "1"
    assert git(bare, "log", "--format=%s", "metalport/heaviside", "-1").strip() == (
        "[MPS] Migrate heaviside to native Metal")
    assert git(bare, "rev-parse", "metalport/heaviside") == git(fixture_repo, "rev-parse", "metalport/heaviside")
    posts = [r for r in github.requests if r[0] == "POST"]
    assert [p[1] for p in posts] == ["/repos/pytorch/pytorch/pulls", "/repos/pytorch/pytorch/issues/1/labels"]
    payload = posts[0][3]
    assert payload["draft"] is True and payload["head"] == "ada:metalport/heaviside" and payload["base"] == "main"
    assert "heaviside_functor" in payload["body"] and TOKEN not in payload["body"]
    assert "## Test Plan" in payload["body"] and "python test/test_mps.py -k test_output_match_heaviside" in payload["body"]
    assert "Verified in emulation only" in payload["body"]
    assert github.labels == {1: ["ciflow/mps", "release notes: mps"]}
    assert worktrees(fixture_repo) == 1

    # Resuming a published run opens no second PR and makes no second commit.
    assert resume_run(fixture_repo, "pub-1").pr_url == record.pr_url and len(github.pulls) == 1
