"""Run records on the graph side: `RunOptions`, decisions, and `run.json` under the git directory
(the `RunRecord` type itself is in `metalport.run_record`).

A record is rewritten atomically after every node, so `runs`, `review` and `sweep` read a run's
status without loading the graph. Layout: `<git-common-dir>/metalport/runs/<run-id>/run.json`
(plus `transcript.jsonl`, `evidence.json`, `diff.patch`, `bundle/`), checkpoints in
`<git-common-dir>/metalport/state.sqlite`.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from metalport.atomic import write_text_atomic
from metalport.errors import PipelineError, RepoError, UnknownRunError
from metalport.run_ids import is_run_id
from metalport.run_record import JsonFields, RunRecord, finite_json, metalport_dir, repo_top


@dataclass(frozen=True)
class RunOptions(JsonFields):
    """How a run is carried out; stored in its state, so a resumed run keeps them."""

    model: str = "recipe"  # "recipe" or "openai:MODEL"
    executor: str = "auto"  # auto | emulated | macos
    max_attempts: int = 3  # edit attempts, the first included
    base: str = "HEAD"  # the commit the worktree starts from
    wall_time_s: float = 1800.0  # the run's wall-time budget (time waiting at the gate excluded)
    force: bool = False  # port an op that is already native
    remote: str | None = None  # git remote of the user's fork (else metalport.yaml's remote.name)
    config_path: str | None = None  # metalport.yaml (default: <repo>/metalport.yaml)
    no_input: bool = True  # never prompt; pause at the gate
    budget: dict | None = None  # BudgetLimits fields overriding metalport.yaml's `budget:` (a sweep's share)
    # A family port (port/plan/family.py): the further ops ported in the same change, and whether the
    # op's family is looked up in the tree (`--family`: ops sharing its legacy macro or helper).
    family_ops: list | None = None
    expand_family: bool = False
    issue: int | None = None  # the PyTorch issue the PR fixes (`Fixes #N`)



@dataclass(frozen=True)
class Approve:
    """Publish the run."""


@dataclass(frozen=True)
class Reject:
    """Send the run back to edit with the reviewer's feedback."""

    feedback: str


@dataclass(frozen=True)
class Abort:
    """Drop the run: worktree and branch removed, the record kept."""


Decision = Approve | Reject | Abort


def decision_value(decision: Decision) -> dict:
    """The resume value the approve node reads."""
    if isinstance(decision, Reject):
        return {"decision": "reject", "feedback": decision.feedback}
    return {"decision": "approve" if isinstance(decision, Approve) else "abort"}


def repo_arg(repo_root: Path | str) -> str:
    """` --repo <root>` when the working directory is not inside the repository, else "": appended
    to every command metalport prints, so each one runs as printed."""
    root = Path(repo_root).resolve()
    try:
        inside = Path.cwd().resolve().is_relative_to(root)
    except OSError:
        inside = False
    return "" if inside else f" --repo {shlex.quote(str(root))}"


def next_step(record: RunRecord, repo_root: Path | str) -> str:
    """What a run in `record`'s state needs next, as a hint with the exact command (not for the gate)."""
    repo, rid = repo_arg(repo_root), record.run_id
    if record.status == "published":
        return f"it is already published ({record.pr_url or record.bundle_path}); nothing left to decide"
    if _record_worktree_gone(record, repo_root):
        where = metalport_dir(repo_root) / "worktrees" / rid
        return (f"its worktree {where} was deleted and the change in it with it: abort the run "
                f"(`metalport resume {rid} --abort{repo}`), then start a new one with "
                f"`run-migration {record.op}{repo}`")
    if record.status == "running":
        return (f"it is at stage {record.stage}; wait for it, or `metalport resume {rid}{repo}` if its process "
                f"died (it then stops at the gate), or `metalport resume {rid} --abort{repo}`")
    if record.status == "failed" and (record.stage == "publish" or record.worktree is not None):
        what = "the publish (the approval stands)" if record.stage == "publish" else f"stage {record.stage}"
        return f"fix the cause, then `metalport resume {rid}{repo}` retries {what}"
    return f"it ended {record.status}; start a new run with `run-migration {record.op}{repo}`"


def worktree_gone(worktree: str | None, repo_root: Path | str) -> bool:
    """True when `worktree` is one of this checkout's run worktrees and no longer exists (deleted by
    hand): nothing can continue from it (a worktree on another machine of a fleet is not judged)."""
    if not worktree:
        return False
    path = Path(worktree)
    try:
        mine = path.parent.resolve() == (metalport_dir(repo_root) / "worktrees").resolve()
    except RepoError:
        return False
    return mine and not path.exists()


def _record_worktree_gone(record: RunRecord, repo_root: Path | str) -> bool:
    """Whether the run, past its sandbox and not ended, lost its worktree (this checkout's runs only:
    with a shared store the worktree may live on another machine)."""
    live = record.status in ("running", "awaiting-review") or (record.status == "failed" and record.stage == "publish")
    if not live or not record.branch or record.stage in ("resolve", "plan", "sandbox") or \
            shared_store(repo_root) is not None:
        return False
    return worktree_gone(str(metalport_dir(repo_root) / "worktrees" / record.run_id), repo_root)


def run_dir(repo_root: Path | str, run_id: str) -> Path:
    """`<git-common-dir>/metalport/runs/<run-id>/`: run.json, transcript.jsonl, evidence, bundle."""
    if not is_run_id(run_id):
        raise UnknownRunError(f"run id {run_id!r} is not a valid run id",
                              hint="list runs with `metalport runs`")
    return metalport_dir(repo_root) / "runs" / run_id


def shared_store(repo_root: Path | str):  # -> metalport.store.RunStore | None
    """The shared PostgreSQL store when a database URL is configured (`metalport.store`), else None."""
    from metalport.store import open_store

    return open_store(repo_top(repo_root))


def write_record(record: RunRecord, directory: Path) -> None:
    """Write `directory/run.json` atomically (temp file and rename)."""
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / "run.json", record.to_dict())


def write_json(path: Path, data: object) -> None:
    """Write `data` as indented JSON to `path` through a temp file and rename."""
    write_text_atomic(path, json.dumps(finite_json(data), indent=2, sort_keys=True, default=str) + "\n")


def get_run(repo_root: Path | str, run_id: str) -> RunRecord:
    """The record of `run_id`; UnknownRunError (with the known ids) when there is none."""
    path = run_dir(repo_root, run_id) / "run.json"
    store = shared_store(repo_root)
    found = store.get(run_id) if store is not None else None
    if found is not None:
        return found
    if store is not None or not path.is_file():
        known = [r.run_id for r in list_runs(repo_root)][-3:]
        raise UnknownRunError(f"unknown run id {run_id!r}", hint=(
            f"known runs include {', '.join(known)}; see `metalport runs{repo_arg(repo_root)}`" if known
            else f"no runs yet in this repository; start one with `run-migration aten::OP{repo_arg(repo_root)}`"))
    return read_record(path)


def read_record(path: Path) -> RunRecord:
    """The record in `path` (a run.json); PipelineError naming the file when it cannot be read (cut short
    by a crash or a full disk, edited by hand, written by an incompatible version)."""
    try:
        return RunRecord.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError, UnicodeDecodeError) as err:  # JSONDecodeError is a ValueError
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise PipelineError(f"run {path.parent.name}: its record is unreadable ({why})", location=str(path),
                            hint=f"restore it, or remove {path.parent} to forget the run") from None


def list_runs(repo_root: Path | str, unreadable: list[str] | None = None) -> list[RunRecord]:
    """Every run of the repository, oldest first (of every checkout, with a shared database); a record
    that cannot be read is left out, with its one-line reason appended to `unreadable` when given."""
    store = shared_store(repo_root)
    if store is not None:
        return store.list()
    root = metalport_dir(repo_root) / "runs"
    records = []
    for path in sorted(root.glob("*/run.json")) if root.is_dir() else ():
        try:
            records.append(read_record(path))
        except PipelineError as err:
            if unreadable is not None:
                unreadable.append(f"{err.location}: {err.message}")
    return sorted(records, key=lambda r: (r.created_at, r.run_id))


class RunLock:
    """An exclusive lock on a run while one process drives it (released by the OS on a crash)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / ".lock"
        self._fd: int | None = None

    def acquire(self, run_id: str) -> None:
        """Take the lock or raise RunLocked naming the holder."""
        from metalport.errors import RunLocked

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RunLocked(f"run {run_id} is being driven by another process (pid {holder})",
                                hint="wait for it to finish, or stop that process first") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        """Release the lock."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def is_live(repo_root: Path | str, run_id: str) -> bool:
    """True while some process holds the run's lock (a `running` record without one has crashed)."""
    store = shared_store(repo_root)
    if store is not None:
        return store.is_live(run_id)
    path = run_dir(repo_root, run_id) / ".lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
