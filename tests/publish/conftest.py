"""Publish tests reuse the sandbox's fixture repository and add a local GitHub API."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from tests.local_http import JsonHandler, serving
from tests.sandbox.conftest import repo  # noqa: F401  (fixture re-export)


class FakeGitHub:
    """The few REST endpoints publish uses, on 127.0.0.1:0, with every request recorded."""

    def __init__(self) -> None:
        self.pulls: list[dict] = []
        self.labels: dict[int, list[str]] = {}
        self.requests: list[tuple[str, str, dict, dict | None]] = []
        fake = self

        class Handler(JsonHandler):
            def _record(self, payload: dict | None) -> None:
                fake.requests.append((self.command, self.path, dict(self.headers), payload))

            def do_GET(self) -> None:
                self._record(None)
                url = urlparse(self.path)
                query = parse_qs(url.query)
                if self.headers.get("Authorization") != "Bearer t0ps3cret":
                    self.reply_json(401, {"message": "Bad credentials"})
                elif url.path == "/repos/pytorch/pytorch/pulls":
                    head = query["head"][0]
                    self.reply_json(200, [p for p in fake.pulls if p["head_label"] == head])
                elif url.path == "/search/issues":
                    words = query["q"][0]
                    self.reply_json(200, {"items": [p for p in fake.pulls if p["op"] in words]})
                else:
                    self.reply_json(404, {"message": "Not Found"})

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._record(payload)
                if self.headers.get("Authorization") != "Bearer t0ps3cret":
                    self.reply_json(401, {"message": "Bad credentials"})
                    return
                labels = re.fullmatch(r"/repos/pytorch/pytorch/issues/(\d+)/labels", self.path)
                if labels:
                    have = fake.labels.setdefault(int(labels.group(1)), [])
                    have += [name for name in payload["labels"] if name not in have]
                    self.reply_json(200, [{"name": name} for name in have])
                    return
                number = len(fake.pulls) + 1
                pr = {"number": number, "html_url": f"https://github.test/pytorch/pytorch/pull/{number}",
                      "draft": payload["draft"], "head_label": payload["head"], "title": payload["title"],
                      "op": payload["title"].split()[-1] if payload["title"] else ""}
                fake.pulls.append(pr)
                self.reply_json(201, pr)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A running fake GitHub API."""
    fake = FakeGitHub()
    with serving(fake.server):
        yield fake
