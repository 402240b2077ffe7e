"""A run's artifacts through a git remote (`fleet: artifacts_remote:`) instead of PostgreSQL.

Note [artifact refs]: with `artifacts_remote` set (a remote name of the checkout, or a URL), a run
at the gate pushes two refs there, never a branch:

- `refs/metalport/runs/<id>`: the change as one commit on the run's base (the commit the patch
  series is made from; made on a scratch index, no local ref moves). Fetching it brings the base,
  so a reviewer's checkout that lacks the base commit can still rebuild and publish the run.
- `refs/metalport/evidence/<id>`: a parentless commit whose tree holds `patch-series.mbox` and
  the run folder's files under `evidence/` (whole, not cut as in the database).

The database keeps only a pointer (`artifacts.json`: remote, refs, commits), so every checkout
knows where to look; each reads the remote through its own `artifacts_remote` (a worker's URL may
be a path on that worker), else the URL the worker pushed to. A remote that is the publish remote
(`remote: name:`) or upstream PyTorch is refused: nothing reaches the public fork before approval.
A push that fails (the remote down) is not a failed run: the worker says so in one line and the
artifacts go to the database as without the option. A rework that reaches the gate again
force-updates both refs.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import yaml

from metalport.errors import MetalportError, UsageError

RUN_REF = "refs/metalport/runs/{}"
EVIDENCE_REF = "refs/metalport/evidence/{}"
POINTER_FILE = "artifacts.json"  # the run file (in the database) that says where the artifacts are
SERIES_NAME = "patch-series.mbox"
_UPSTREAM = ("github.com/pytorch/pytorch", "github.com:pytorch/pytorch")
_IDENTITY = {"GIT_AUTHOR_NAME": "metalport", "GIT_AUTHOR_EMAIL": "metalport@localhost",
             "GIT_COMMITTER_NAME": "metalport", "GIT_COMMITTER_EMAIL": "metalport@localhost"}


class ArtifactsUnreachable(MetalportError):
    """The artifacts remote did not take or give what was asked (down, refused, missing ref)."""


def _git(cwd: Path, *args: str, env: dict | None = None, input: str | bytes | None = None,
         text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **(env or {}), "GIT_TERMINAL_PROMPT": "0"},
                          input=input, capture_output=True, text=text, check=False, timeout=300)


def _last_line(done: subprocess.CompletedProcess) -> str:
    """git's last complaint, with any `user:password@` of a URL in it replaced by `user:***@`."""
    import re

    err = done.stderr if isinstance(done.stderr, str) else done.stderr.decode("utf-8", "replace")
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    last = lines[-1] if lines else f"git exited with {done.returncode}"
    return re.sub(r"(://[^/:@\s]+):[^@/\s]+@", r"\1:***@", last)


def remote_url(root: Path, remote: str) -> str:
    """The URL of `remote` in the checkout at `root` when it is a remote's name, else `remote` itself."""
    done = _git(root, "remote", "get-url", remote)
    return done.stdout.strip() if done.returncode == 0 else remote


def shown_url(root: Path, remote: str) -> str:
    """`remote_url` with any password or token in it replaced by `***` (messages, the stored pointer)."""
    from metalport.store.settings import safe_url

    return safe_url(remote_url(root, remote))


def check_remote(root: Path, remote: str) -> None:
    """UsageError when `remote` is the publish remote or upstream PyTorch (Note [artifact refs])."""
    url = remote_url(root, remote)
    publish = _publish_remote(root)
    public = publish is not None and (remote == publish or url == remote_url(root, publish))
    if public or any(u in url.removesuffix(".git") for u in _UPSTREAM):
        raise UsageError(f"fleet.artifacts_remote {shown_url(root, remote)} is the public fork or upstream: runs "
                         "are never pushed there before approval", location=str(root / "metalport.yaml"),
                         hint="name a private remote for artifacts (or unset fleet.artifacts_remote)")


def _publish_remote(root: Path) -> str | None:
    path = root / "metalport.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, yaml.YAMLError):
        return None
    section = data.get("remote") if isinstance(data, dict) else None
    return str(section["name"]) if isinstance(section, dict) and section.get("name") else None


def evidence_commit(cwd: Path, files: dict[str, bytes], series: str, message: str) -> str:
    """A parentless commit of `series` and the run folder's `files` (under evidence/), made in the
    object store of the repository at `cwd` on a scratch index; no ref moves."""
    with tempfile.TemporaryDirectory(prefix="metalport-index-") as scratch:
        env = {**_IDENTITY, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        entries = {SERIES_NAME: series.encode("utf-8"), **{f"evidence/{k}": v for k, v in files.items()}}
        for name, data in sorted(entries.items()):
            blob = _git(cwd, "hash-object", "-w", "--stdin", input=data, text=False)
            if blob.returncode != 0:
                raise ArtifactsUnreachable(f"cannot store {name} in {cwd}: {_last_line(blob)}")
            sha = blob.stdout.decode().strip()
            added = _git(cwd, "update-index", "--add", "--cacheinfo", f"100644,{sha},{name}", env=env)
            if added.returncode != 0:
                raise ArtifactsUnreachable(f"cannot index {name}: {_last_line(added)}")
        tree = _git(cwd, "write-tree", env=env).stdout.strip()
        done = _git(cwd, "commit-tree", tree, "-F", "-", env=env, input=message)
        if done.returncode != 0:
            raise ArtifactsUnreachable(f"cannot commit the evidence: {_last_line(done)}")
        return done.stdout.strip()


def push_artifacts(root: Path, cwd: Path, remote: str, run_id: str, change: str, evidence: str) -> dict:
    """Push the change and evidence commits (in the repository at `cwd`) to the run's refs on
    `remote`; the pointer to keep in the database. ArtifactsUnreachable when the push fails."""
    check_remote(root, remote)
    run_ref, evidence_ref = RUN_REF.format(run_id), EVIDENCE_REF.format(run_id)
    done = _git(cwd, "push", "--quiet", "--force", remote, f"{change}:{run_ref}", f"{evidence}:{evidence_ref}")
    url = shown_url(root, remote)  # a token in the URL stays out of messages and the database
    if done.returncode != 0:
        raise ArtifactsUnreachable(f"cannot push run {run_id}'s artifacts to {url}: {_last_line(done)}")
    return {"remote": url, "run_ref": run_ref, "evidence_ref": evidence_ref, "change": change,
            "evidence": evidence}


def pointer(store: object, run_id: str) -> dict | None:
    """The run's artifacts pointer from the database, or None (artifacts in the database, or none)."""
    text = store.get_file(run_id, POINTER_FILE)  # type: ignore[attr-defined]
    return json.loads(text) if text else None


def fetch(root: Path, where: dict, ref: str, configured: str | None) -> str:
    """Fetch `ref` of the run's artifacts into the checkout at `root` (same ref name) from this
    checkout's artifacts remote, else the URL the worker pushed to; the fetched commit.
    ArtifactsUnreachable naming the remote when it cannot."""
    remote = configured or where["remote"]
    done = _git(root, "fetch", "--quiet", "--no-tags", remote, f"+{ref}:{ref}")
    if done.returncode != 0:
        raise ArtifactsUnreachable(f"cannot fetch {ref} from the artifacts remote {shown_url(root, remote)}: "
                                   f"{_last_line(done)}",
                                   hint="check fleet.artifacts_remote (or METALPORT_ARTIFACTS_REMOTE) here and "
                                        "that the remote is reachable")
    return _git(root, "rev-parse", ref).stdout.strip()


def listing(root: Path, commit: str) -> list[tuple[str, int]]:
    """(name, bytes) of the evidence files in an evidence commit."""
    out = _git(root, "ls-tree", "-r", "-l", commit, "--", "evidence/").stdout
    rows = []
    for line in out.splitlines():
        meta, name = line.split("\t", 1)
        rows.append((name.removeprefix("evidence/"), int(meta.split()[3])))
    return rows


def read(root: Path, commit: str, name: str) -> str | None:
    """One file of an evidence commit (`patch-series.mbox`, or `evidence/NAME`), or None."""
    done = _git(root, "cat-file", "blob", f"{commit}:{name}", text=False)
    return done.stdout.decode("utf-8", errors="replace") if done.returncode == 0 else None


def fetch_change(root: Path, run_id: str, configured: str | None) -> bool:
    """Fetch the run's change ref (and so its base) from this checkout's artifacts remote; False
    when none is configured or the remote has no such ref."""
    if not configured:
        return False
    ref = RUN_REF.format(run_id)
    return _git(root, "fetch", "--quiet", "--no-tags", configured, f"+{ref}:{ref}").returncode == 0
