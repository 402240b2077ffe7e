"""The run's commit takes git's own identity (`git var GIT_AUTHOR_IDENT`): the environment and
`GIT_CONFIG_GLOBAL` count, and with no identity at all metalport's own is used with a note."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.publish import commit_run
from metalport.sandbox import create_worktree
from tests.sandbox.conftest import git

EVIDENCE = {"check": "passed"}


@pytest.fixture()
def bare_repo(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture repository without its per-repository identity, in a home with no git config."""
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
                 "EMAIL", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    return repo


def _commit(repo: Path, run_id: str):
    wt = create_worktree(repo, "heaviside", run_id)
    (wt.path / "kernel.metal").write_text("// heaviside functor\n")
    result = commit_run(wt, "aten::heaviside", migrate=False, evidence=EVIDENCE)
    return result, git(wt.path, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip()


def test_git_config_global_names_the_author(bare_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Grace Global\n\temail = grace@example.org\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    result, who = _commit(bare_repo, "id-1")
    assert who == "Grace Global <grace@example.org>|Grace Global <grace@example.org>"
    assert result.note is None


def test_the_environment_names_the_author(bare_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tuseConfigOnly = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "env@example.org")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Env Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.org")
    result, who = _commit(bare_repo, "id-2")
    assert who == "Env Author <env@example.org>|Env Committer <committer@example.org>"
    assert result.note is None


def test_without_an_identity_metalports_own_is_used_with_a_note(bare_repo: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tuseConfigOnly = true\n")  # no guessing from the host name
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    result, who = _commit(bare_repo, "id-3")
    assert who == "metalport <metalport@localhost>|metalport <metalport@localhost>"
    assert result.note is not None and result.note.startswith("git has no identity here")
    assert "git config --global user.email" in result.note
