"""Publish: one commit per run, the bundle's files, push to the fork only, one PR per branch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.errors import PublishError
from metalport.publish import (
                               PR_LABELS,
                               GitHubClient,
                               commit_run,
                               conventions_section,
                               find_run_commit,
                               open_draft_pr,
                               push_branch,
                               write_bundle,
                               )
from metalport.sandbox import create_worktree, remove_worktree
from tests.sandbox.conftest import git

EVIDENCE = {"check": "8/8 passed", "conformance": "412 cases, max ulp 0", "attempts": 1}


def _edited(repo: Path, run_id: str = "run-9"):
    wt = create_worktree(repo, "heaviside", run_id)
    (wt.path / "kernel.metal").write_text("// heaviside functor\n")
    return wt


def test_commit_is_metalport_style_and_idempotent(repo: Path) -> None:
    wt = _edited(repo)
    first = commit_run(wt, "aten::heaviside", migrate=False, evidence=EVIDENCE)
    assert first.created and first.title == "[MPS] Add native Metal kernel for heaviside"
    again = commit_run(wt, "aten::heaviside", migrate=False, evidence=EVIDENCE)
    assert (again.sha, again.created) == (first.sha, False)
    assert git(wt.path, "rev-list", "--count", f"{wt.base_commit}..HEAD").strip() == "1"
    assert git(wt.path, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip() == (
        "Ada Human <ada@example.com>|Ada Human <ada@example.com>")  # the repository's user
    assert git(wt.path, "log", "-1", "--format=%B") == (
        "[MPS] Add native Metal kernel for heaviside\n\ncheck: 8/8 passed\n"
        "conformance: 412 cases, max ulp 0\nattempts: 1\n\n"
        "Generated-by: metalport <metalport@localhost>\nMetalport-Run: run-9\n\n")
    assert find_run_commit(wt, "run-9") == first.sha and find_run_commit(wt, "other") is None
    assert git(repo, "status", "--porcelain") == ""
    remove_worktree(wt, delete_branch=False)
    # A metalport branch with only metalport's commits can be picked up by a later run.
    reused = create_worktree(repo, "heaviside", "run-10")
    assert reused.reused_branch
    remove_worktree(reused)


def test_the_users_identity_authors_the_commit_and_metalport_is_a_trailer(repo: Path) -> None:
    git(repo, "config", "user.name", "Ada Lovelace")
    git(repo, "config", "user.email", "ada@example.com")
    wt = _edited(repo, "run-12")
    commit_run(wt, "aten::heaviside", migrate=False, evidence=EVIDENCE)
    assert git(wt.path, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip() == (
        "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>")
    trailers = git(wt.path, "log", "-1", "--format=%(trailers:only)").split("\n")
    assert trailers[:2] == ["Generated-by: metalport <metalport@localhost>", "Metalport-Run: run-12"]
    remove_worktree(wt, delete_branch=False)
    assert create_worktree(repo, "heaviside", "run-13").reused_branch  # still metalport's branch


def test_migrate_title_and_nothing_to_commit(repo: Path) -> None:
    wt = create_worktree(repo, "heaviside", "run-11")
    with pytest.raises(PublishError, match="run run-11 has no changes to commit; check the edit"):
        commit_run(wt, "heaviside", migrate=True, evidence={})
    (wt.path / "README").write_text("migrated\n")
    assert commit_run(wt, "heaviside", migrate=True, evidence={}).title == (
        "[MPS] Migrate heaviside to native Metal")
    remove_worktree(wt)


def test_bundle_contents(repo: Path, tmp_path: Path) -> None:
    wt = _edited(repo)
    commit_run(wt, "heaviside", migrate=False, evidence=EVIDENCE)
    dest = write_bundle(wt, tmp_path / "bundle", title="[MPS] Add native Metal kernel for heaviside",
                        body="Ports heaviside.", evidence=EVIDENCE)
    write_bundle(wt, dest, title="[MPS] Add native Metal kernel for heaviside", body="Ports heaviside.",
                 evidence=EVIDENCE)
    patches = sorted(p.name for p in (dest / "patches").iterdir())
    assert patches == ["0001-MPS-Add-native-Metal-kernel-for-heaviside.patch"]
    patch = (dest / "patches" / patches[0]).read_text()
    assert "+// heaviside functor" in patch and "Metalport-Run: run-9" in patch
    assert (dest / "PR.md").read_text() == (
        "# [MPS] Add native Metal kernel for heaviside\n\nPorts heaviside.\n")
    assert json.loads((dest / "evidence.json").read_text()) == EVIDENCE
    assert sorted(p.name for p in dest.iterdir()) == ["PR.md", "evidence.json", "patches"]
    # The patch applies on the base and reproduces the commit's tree.
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "check"), wt.base_commit)
    git(tmp_path / "check", "apply", str(dest / "patches" / patches[0]))
    assert (tmp_path / "check" / "kernel.metal").read_text() == "// heaviside functor\n"
    git(repo, "worktree", "remove", "--force", str(tmp_path / "check"))
    remove_worktree(wt)


def test_push_to_fork_only(repo: Path, tmp_path: Path) -> None:
    fork = tmp_path / "fork.git"
    git(tmp_path, "init", "-q", "--bare", str(fork))
    git(repo, "remote", "add", "fork", str(fork))
    git(repo, "remote", "add", "upstream", str(fork))
    git(repo, "remote", "add", "origin", "https://github.com/pytorch/pytorch.git")
    wt = _edited(repo)
    sha = commit_run(wt, "heaviside", migrate=False, evidence=EVIDENCE).sha
    push_branch(repo, "fork", wt.branch, base_branch="main")
    push_branch(repo, "fork", wt.branch, base_branch="main")  # a retry is a no-op
    assert git(fork, "rev-parse", "refs/heads/metalport/heaviside").strip() == sha
    assert git(fork, "branch", "--list", "main") == ""
    with pytest.raises(PublishError, match="^refusing to push 'main': only metalport/"):
        push_branch(repo, "fork", "main", base_branch="main")
    with pytest.raises(PublishError, match="^refusing to push to 'upstream' .*an upstream remote"):
        push_branch(repo, "upstream", wt.branch, base_branch="main")
    with pytest.raises(PublishError, match=r"^refusing to push to 'origin' \(https://github.com/pytorch"):
        push_branch(repo, "origin", wt.branch, base_branch="main")
    with pytest.raises(PublishError, match="^no git remote named 'myfork'; add your fork"):
        push_branch(repo, "myfork", wt.branch, base_branch="main")
    remove_worktree(wt)


def test_draft_pr_is_created_once(github) -> None:
    client = GitHubClient.from_env(github.url, "pytorch/pytorch", env={"GITHUB_TOKEN": "t0ps3cret"})
    assert "t0ps3cret" not in repr(client)
    kwargs = dict(fork_owner="ada", branch="metalport/heaviside", base="main",
                  title="[MPS] Add native Metal kernel for heaviside", body="evidence")
    first = open_draft_pr(client, **kwargs)
    second = open_draft_pr(client, **kwargs)
    assert (first.number, first.created, first.draft) == (1, True, True)
    assert (second.number, second.created) == (1, False)
    assert len(github.pulls) == 1
    posts = [r for r in github.requests if r[0] == "POST"]
    assert len(posts) == 1 and posts[0][3] == {"title": kwargs["title"], "body": "evidence",
                                               "head": "ada:metalport/heaviside", "base": "main",
                                               "draft": True}
    assert [p["number"] for p in client.search_pulls("aten::heaviside")] == [1]
    assert client.search_pulls("atan2") == []


def test_labels_are_set_through_the_api_once(github) -> None:
    client = GitHubClient.from_env(github.url, "pytorch/pytorch", env={"GITHUB_TOKEN": "t0ps3cret"})
    kwargs = dict(fork_owner="ada", branch="metalport/sgn", base="main", title="[MPS] Migrate sgn to native Metal",
                  body="evidence", labels=PR_LABELS)
    first = open_draft_pr(client, **kwargs)
    open_draft_pr(client, **kwargs)
    assert github.labels == {first.number: ["ciflow/mps", "release notes: mps"]}


def test_pr_conventions_name_the_tests_the_tier_and_new_files() -> None:
    plan = {"op": "addcmul", "xfail_keys": ["addcmul"], "host_family": "ternary",
            "kernel_file": "aten/src/ATen/native/mps/kernels/PointwiseOps.metal", "host_file": "x.mm"}
    text = conventions_section(plan, ["emulated", "emulated"], [plan["kernel_file"]])
    assert "```\npython test/test_mps.py -k test_output_match_addcmul\n```" in text
    assert "python test/test_mps.py -k test_output_grad_match_addcmul" in text
    assert "Verified in emulation only" in text
    assert ("- `aten/src/ATen/native/mps/kernels/PointwiseOps.metal`: no kernel file of the tree holds ternary "
            "functors yet") in text
    assert text.rstrip().endswith("Labels: ciflow/mps, release notes: mps")
    on_mac = conventions_section({"op": "sigmoid_backward"}, ["emulated", "macos"], [])
    assert "emulation only" not in on_mac and "New files" not in on_mac
    assert "python test/test_mps.py -k test_output_grad_match_sigmoid\n" in on_mac


def test_token_errors_never_show_the_token(github) -> None:
    with pytest.raises(PublishError, match="^GITHUB_TOKEN is not set; export a token"):
        GitHubClient.from_env(github.url, "pytorch/pytorch", env={})
    client = GitHubClient.from_env(github.url, "pytorch/pytorch", env={"GITHUB_TOKEN": "wrong-secret"})
    with pytest.raises(PublishError) as info:
        client.list_pulls("ada:metalport/heaviside")
    assert str(info.value) == ("GitHub GET /repos/pytorch/pytorch/pulls answered 401: Bad credentials; "
                               "check the token's scope and the repository name")
    assert "wrong-secret" not in str(info.value)
