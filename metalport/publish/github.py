"""A small GitHub REST client (draft PRs) and the push of a run's branch to the user's fork.

The token comes only from `GITHUB_TOKEN` and is never printed: not in errors, not in `repr`.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import git

from metalport.errors import PublishError

_UPSTREAM_URL = re.compile(r"github\.com[:/]+pytorch/pytorch(?:\.git)?/?$")


@dataclass(frozen=True)
class PullRequest:
    """A pull request as the API returned it: number, web address, head branch and draft flag."""

    number: int
    url: str
    head: str
    draft: bool
    created: bool


@dataclass(frozen=True)
class GitHubClient:
    """GitHub's REST API for one base repository (`owner/name`) at `api_url`."""

    api_url: str
    repo: str
    token: str = field(repr=False)
    timeout_s: float = 30.0

    @classmethod
    def from_env(cls, api_url: str, repo: str, env: Mapping[str, str] | None = None) -> GitHubClient:
        """Return a client with the token from `GITHUB_TOKEN`; PublishError when it is unset."""
        token = (os.environ if env is None else env).get("GITHUB_TOKEN", "")
        if not token:
            raise PublishError("GITHUB_TOKEN is not set", hint="export a token with pull-request scope, "
                               "or publish without a remote to get a PR bundle")
        return cls(api_url.rstrip("/"), repo, token)

    def list_pulls(self, head: str) -> list[dict]:
        """Return the open PRs whose head is `head` (`fork-owner:branch`)."""
        query = urllib.parse.urlencode({"head": head, "state": "open"})
        return self._request("GET", f"/repos/{self.repo}/pulls?{query}")

    def search_pulls(self, op: str) -> list[dict]:
        """Return open PRs of the base repository whose title names `op` (someone may be on it)."""
        q = f'repo:{self.repo} is:pr is:open in:title "{op.removeprefix("aten::")}"'
        return self._request("GET", "/search/issues?" + urllib.parse.urlencode({"q": q}))["items"]

    def search_pulls_by_head(self, branch: str) -> list[dict]:
        """Return open PRs of the base repository whose head branch is `branch` (from any fork)."""
        q = f"repo:{self.repo} is:pr is:open head:{branch}"
        return self._request("GET", "/search/issues?" + urllib.parse.urlencode({"q": q}))["items"]

    def create_pull(self, *, title: str, body: str, head: str, base: str) -> dict:
        """Create a draft PR and return the API's answer."""
        payload = {"title": title, "body": body, "head": head, "base": base, "draft": True}
        return self._request("POST", f"/repos/{self.repo}/pulls", payload)

    def add_labels(self, number: int, labels: Sequence[str]) -> list[dict]:
        """Add `labels` to PR `number` (labels it already has stay); return the PR's labels."""
        return self._request("POST", f"/repos/{self.repo}/issues/{number}/labels", {"labels": list(labels)})

    def _request(self, method: str, path: str, payload: dict | None = None):
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(f"{self.api_url}{path}", data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            detail = _api_message(err)
            raise PublishError(f"GitHub {method} {path.split('?')[0]} answered {err.code}: {detail}",
                               hint="check the token's scope and the repository name") from None
        except urllib.error.URLError as err:
            raise PublishError(f"GitHub at {self.api_url} is unreachable: {err.reason}",
                               hint="check the network or publish without a remote") from None


def open_draft_pr(client: GitHubClient, *, fork_owner: str, branch: str, base: str, title: str,
                  body: str, labels: Sequence[str] = ()) -> PullRequest:
    """Return the open PR for `fork_owner:branch`, creating a draft one only when there is none;
    `labels` are set on it either way (adding a label twice changes nothing)."""
    head = f"{fork_owner}:{branch}"
    existing = client.list_pulls(head)
    if existing:
        pr, created = existing[0], False
    else:
        pr, created = client.create_pull(title=title, body=body, head=head, base=base), True
    if labels:
        client.add_labels(int(pr["number"]), labels)
    return PullRequest(pr["number"], pr["html_url"], branch, bool(pr.get("draft")), created)


def push_branch(repo_path: Path, remote: str, branch: str, *, base_branch: str,
                upstream_remotes: frozenset[str] = frozenset({"upstream"})) -> None:
    """Push `branch` to the fork `remote` (same name there); refuse the base branch or an upstream.

    Only `metalport/*` branches are pushed, never with force. Raises PublishError with the reason.
    """
    if not branch.startswith("metalport/") or branch == base_branch:
        raise PublishError(f"refusing to push {branch!r}: only metalport/* run branches are pushed, "
                           f"never the base branch {base_branch!r}", hint="publish the run's branch")
    repo = git.Repo(repo_path)
    names = [r.name for r in repo.remotes]
    if remote not in names:
        raise PublishError(f"no git remote named {remote!r}", hint=f"add your fork with `git remote add "
                           f"{remote} <url>` (remotes: {', '.join(names) or 'none'})")
    url = repo.remote(remote).url
    if remote in upstream_remotes or _UPSTREAM_URL.search(url):
        raise PublishError(f"refusing to push to {remote!r} ({url}): it is an upstream remote",
                           hint="configure your fork as the remote (--remote / metalport.yaml)")
    try:
        repo.git.push(remote, f"refs/heads/{branch}:refs/heads/{branch}")
    except git.GitCommandError as err:
        last = [line for line in str(err.stderr).splitlines() if line.strip()]
        raise PublishError(f"git push to {remote!r} failed: {last[-1].strip() if last else err.status}",
                           hint="check the fork's URL and your credentials") from None


def _api_message(err: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(err.read()).get("message", err.reason))
    except (ValueError, AttributeError):
        return str(err.reason)
