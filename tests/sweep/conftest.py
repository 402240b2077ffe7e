"""Sweep fixtures: a writable wheel workspace, fabricated run records and a local GitHub API."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import git
import pytest

from tests.local_http import JsonHandler, serving

TOKEN = "sw33p-t0ken"


@pytest.fixture
def workspace(wheel_workspace, tmp_path: Path) -> Path:
    """A writable copy of the session's wheel workspace (a git repository)."""
    root = getattr(wheel_workspace, "root", wheel_workspace)
    return Path(shutil.copytree(root, tmp_path / "ws", symlinks=True))


def fabricate(repo: Path, run_id: str, op: str, status: str, *, stage: str = "approve", **fields: object) -> None:
    """Write a run record in the contract's shape (`run.json`), as a run of another process would."""
    from metalport.graph.records import run_dir, write_record
    from metalport.run_record import RunRecord

    stamp = fields.pop("created_at", "2026-12-01T10:00:00Z")
    record = RunRecord(run_id=run_id, op=f"aten::{op}", status=status, stage=stage,
                       attempts=int(fields.pop("attempts", 1)), branch=fields.pop("branch", None),
                       worktree=None, created_at=str(stamp), updated_at=str(stamp), **fields)
    write_record(record, run_dir(repo, run_id))


def add_branch(repo: Path, name: str) -> None:
    """Create a local branch at HEAD, as a person would."""
    git.Repo(repo).git.branch(name)


class FakeGitHub:
    """`/search/issues` of GitHub's REST API on 127.0.0.1:0: open PRs matched by title phrase or head."""

    def __init__(self) -> None:
        self.pulls: list[dict] = []
        self.queries: list[str] = []
        fake = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    self.reply_json(401, {"message": "Bad credentials"})
                    return
                if url.path != "/search/issues":
                    self.reply_json(404, {"message": "Not Found"})
                    return
                q = parse_qs(url.query)["q"][0]
                fake.queries.append(q)
                words = q.split()
                head = next((w.removeprefix("head:") for w in words if w.startswith("head:")), None)
                phrase = q.split('"')[1] if q.count('"') >= 2 else None
                items = [p for p in fake.pulls if p["state"] == "open"
                         and ((head and p["head"]["ref"] == head) or (phrase and phrase in p["title"]))]
                self.reply_json(200, {"total_count": len(items), "items": items})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def open_pr(self, number: int, title: str, login: str, head_ref: str) -> None:
        """Add an open PR as the search API returns it."""
        self.pulls.append({"number": number, "title": title, "state": "open", "user": {"login": login},
                           "html_url": f"https://github.test/pytorch/pytorch/pull/{number}",
                           "head": {"ref": head_ref}, "pull_request": {}})


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    """A running local GitHub API, with GITHUB_TOKEN set for it."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    fake = FakeGitHub()
    with serving(fake.server):
        yield fake
