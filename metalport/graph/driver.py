"""Drive one run's graph: its lock, its checkpoints, the stream to the gate, a record per update.

Checkpoints: `<git-common-dir>/metalport/state.sqlite` (or the shared store), `durability="sync"`,
thread id = run id. Errors raised by a node (bad input) end the run as failed, remove what the run
created (worktree, branch) and propagate as one-line MetalportErrors; a filesystem fault keeps the
worktree and checkpoint and says how to continue once it is fixed.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import StateSnapshot

from metalport.agent.provider import Provider
from metalport.errors import FilesystemError, MetalportError, filesystem_error, is_filesystem_fault, not_utf8
from metalport.graph.context import RunContext, kill_point
from metalport.graph.finish import finish_run
from metalport.graph.provider import run_config_path, run_provider
from metalport.graph.prune import forget_run
from metalport.graph.records import (
                                     RunLock,
                                     RunOptions,
                                     get_run,
                                     repo_arg,
                                     run_dir,
                                     shared_store,
                                     worktree_gone,
                                     write_json,
                                     write_record,
                                     )
from metalport.run_record import RunRecord, metalport_dir, now_iso
from metalport.graph.wiring import compile_graph, recursion_limit
from metalport.sandbox.runner import commands_checked
from metalport.store.pg import DatabaseError, LeaseLost, held_lease
from metalport.store.portable import share_record

Progress = Callable[[dict], None]
_CHECKING = frozenset({"edit", "hostcheck", "check", "build", "test"})


class RunDriver:
    """One process's hold on a run: its lock, the SQLite checkpointer, the compiled graph."""

    def __init__(self, root: Path, run_id: str, options: RunOptions | None, progress: Progress | None,
                 provider: Provider | None) -> None:
        self.root, self.run_id, self.directory = root, run_id, run_dir(root, run_id)
        self.options, self.progress, self.provider = options, progress or (lambda event: None), provider
        self.db_path = metalport_dir(root) / "state.sqlite"
        self._lock = RunLock(self.directory)
        self._started: dict[str, tuple[float, float]] = {}
        self.store = shared_store(root)
        self._stack = ExitStack()

    def __enter__(self) -> RunDriver:
        """Take the run's lock and open the checkpoints; a filesystem fault is a FilesystemError."""
        if getattr(self, "graph", None) is not None:
            return self  # opened by start_run already
        try:
            self._lock.acquire(self.run_id)
        except OSError as err:
            raise filesystem_error(err, what="the run lock") from None
        try:
            if self.store is not None:  # the lock and the checkpoints are shared by every machine
                self._stack.enter_context(self.store.hold(self.run_id))
                self.db_path = Path(f"the shared database ({self.store.repository})")
                self.graph = compile_graph(self._stack.enter_context(self.store.saver()))
                return self
            self.graph = compile_graph(self._open_sqlite())
        except BaseException:
            self.__exit__()
            raise
        return self

    def _open_sqlite(self) -> SqliteSaver:
        """The embedded checkpointer, proven writable: a read-only database fails here, not mid-run."""
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.db_path), check_same_thread=False, timeout=30)
            self._stack.callback(conn.close)
            saver = SqliteSaver(conn)
            saver.setup()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute(f"PRAGMA user_version = {int(version)}")
        except (OSError, sqlite3.Error) as err:
            raise filesystem_error(err, what="the checkpoints", path=self.db_path) from None
        return saver

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        self._lock.release()
        self.graph = None

    def config(self, max_attempts: int) -> dict:
        """The graph config of this run's thread, with the recursion limit `max_attempts` needs."""
        return {"configurable": {"thread_id": self.run_id}, "recursion_limit": recursion_limit(max_attempts)}

    def snapshot(self) -> StateSnapshot:
        """The thread's latest checkpoint (`values == {}` for an unknown thread)."""
        return self.graph.get_state(self.config(3))

    @contextmanager
    def _stop_when_lease_lost(self) -> Iterator[Callable[[], None]]:
        """While the graph streams, a run on the shared store stops once its lease is gone (the
        machine slept past it, another took it): a running command (a build) is killed within a
        second and LeaseLost raised; between nodes the yielded check raises it. Without a store: a no-op."""
        lease = held_lease(self.run_id) if self.store is not None else None

        def check() -> None:
            if lease is not None and lease.lost_to is not None:
                lease.check()  # raises LeaseLost naming the new holder

        if lease is None:
            yield check
            return
        with commands_checked(check):
            yield check

    def drive(self, graph_input: object) -> RunRecord:
        """Stream the graph from `graph_input` to the gate or an end, writing the record per update."""
        values = dict(self.snapshot().values) if not isinstance(graph_input, dict) else dict(graph_input)
        options = self.options or RunOptions.from_dict(values.get("options", {}))
        config = self.config(options.max_attempts)
        awaiting = False
        try:
            provider = self.provider or run_provider(options, self.root, self.directory)
            context = RunContext(self.root, self.directory, provider, executor_name=options.executor,
                                 usage_base=dict(values.get("usage") or {}),
                                 config_path=run_config_path(options, self.root))
            try:
                with self._stop_when_lease_lost() as lease_check:
                    for part in self.graph.stream(graph_input, config, stream_mode=["updates", "custom", "tasks"],
                                                  durability="sync", version="v2", context=context):
                        lease_check()
                        awaiting = self._on_part(part, values) or awaiting
            except UnicodeDecodeError as err:  # bad input, not a fault a resume gets past
                raise not_utf8(err, _file_holding(err, self.root)) from None
            except _OverWallTime as over:
                values.update(status="budget-exhausted", reason=str(over))
                return self.finish(values)
        except (FilesystemError, OSError, sqlite3.Error) as err:
            raise self._fault(values, err, fresh=isinstance(graph_input, dict)) from None
        except (DatabaseError, LeaseLost):
            raise  # the shared store is down, or the run is another machine's now: nothing of it to record here
        except MetalportError as err:
            if isinstance(graph_input, dict) and not values.get("worktree") and self.store is None:
                # Input refused before any worktree existed: nothing to keep or resume. (A shared
                # store keeps the failed record: it has claimed the op's live-run slot.)
                self.forget()
                raise
            values.update(status="failed", reason=str(err))
            if values.get("stage") == "publish":
                # Approved work is kept: the checkpoint still points at publish, so a resume retries it.
                retry = f"then `metalport resume {self.run_id}{repo_arg(self.root)}` retries the publish"
                values["reason"] = f"{err} ({retry})"
                self._write(values)
                err.add_hint(retry)  # on screen too, not only in run.json
                raise
            finish_run(values, self.directory, keep_branch=False)
            self._write(values, cleaned=True)
            raise
        except Exception as err:
            if is_filesystem_fault(err):  # git failing on a full or read-only disk
                raise self._fault(values, err, fresh=isinstance(graph_input, dict)) from None
            retry = f"metalport resume {self.run_id}{repo_arg(self.root)}"
            values.update(status="failed", reason=f"internal error in {values.get('stage')}: "
                          f"{type(err).__name__}: {err} (`{retry}` retries it)")
            self._write(values)
            raise
        try:
            if awaiting:
                record = self._write(values, awaiting=True)
                self.progress({"event": "gate", "run_id": self.run_id})
                return record
            return self.finish(dict(self.graph.get_state(config).values))
        except (OSError, sqlite3.Error) as err:
            raise self._fault(values, err, fresh=False) from None

    def _fault(self, values: dict, err: BaseException, *, fresh: bool) -> FilesystemError:
        """Record a filesystem fault as the run's failure, keeping its worktree and checkpoint.

        Returns the one-line error with what to do once the fault is fixed: decide again when the
        run still waits at the gate, resume when there is work to continue from, else start anew
        (a fresh run refused before any worktree existed is forgotten, like one refused on input).
        """
        if isinstance(err, FilesystemError):
            fault = err
        elif isinstance(err, sqlite3.Error):
            fault = filesystem_error(err, what="the checkpoints", path=self.db_path)
        else:
            fault = filesystem_error(err)
        repo = repo_arg(self.root)
        worktree = (values.get("worktree") or {}).get("path")
        if worktree_gone(worktree, self.root):  # deleted by hand: no retry can get past it
            # The record keeps its state (so `resume --abort` takes the run); next_step says the same.
            return FilesystemError("the run's worktree was deleted, and the change in it with it", location=worktree,
                                   hint=f"abort the run (`metalport resume {self.run_id} --abort{repo}`), then start "
                                        f"a new one with `run-migration {values.get('op')}{repo}`")
        if self._at_gate():  # the decision did not get through: nothing was published, the run still waits
            try:
                self._write(values, awaiting=True)
            except OSError:
                pass  # the record still says what it said at the gate
            return fault.add_hint(f"then the run is still at the gate: decide again "
                                  f"(`metalport resume {self.run_id} --approve{repo}`)")
        worktree = (values.get("worktree") or {}).get("path")
        resume = f"then `metalport resume {self.run_id}{repo}` retries it"
        anew = f"then start a new run with `run-migration {values.get('op')}{repo}`"
        resumable = values.get("stage") == "publish" or bool(worktree and Path(worktree).is_dir())
        if not resumable and fresh and self.store is None:
            try:
                self.forget()
                return fault.add_hint(anew)
            except (OSError, sqlite3.Error):
                pass  # a disk that refused the run may refuse its removal too: the record says it failed
        then = resume if resumable else anew
        values.update(status="failed", reason=f"{fault} ({then})")
        try:
            self._write(values)
        except OSError:  # the record keeps its last state ("running"): a resume continues from the checkpoint
            then = resume
        return fault.add_hint(then)

    def _at_gate(self) -> bool:
        """Whether the latest checkpoint still waits for a decision at the gate."""
        try:
            return bool(self.snapshot().interrupts)
        except sqlite3.Error:
            return False

    def _on_part(self, part: dict, values: dict) -> bool:
        kind, data = part["type"], part["data"]
        if kind == "tasks":
            if "input" in data:  # a task starts (finish events carry `result`)
                name = data["name"]
                self._started[name] = (time.monotonic(), _cpu_s())
                _check_wall_time(name, values)
                values["stage"] = name
                self._write(values)
                kill_point(name)
                self.progress({"event": "start", "node": name})
            return False
        if kind == "custom":
            self.progress(dict(data))
            return False
        for node, update in data.items():
            if node == "__interrupt__":
                return True
            if node.startswith("__"):  # langgraph's own channels (pending writes applied on resume)
                continue
            values.update(update or {})
            if node in ("plan", "edit", "rebase") and update.get("plan"):  # edit: a model-written spec's plan
                write_json(self.directory / "plan.json", update["plan"])
            if node in ("plan", "rebase") and update.get("family"):  # every member's plan (a family of one included)
                write_json(self.directory / "family.json", update["family"])
            self._write(values)
            wall0, cpu0 = self._started.pop(node, (time.monotonic(), _cpu_s()))
            self.progress({"event": "done", "node": node, "seconds": round(time.monotonic() - wall0, 3),
                           "cpu_s": round(_cpu_s() - cpu0, 3),
                           "failures": len(values.get("failures") or []) if node in _CHECKING else 0,
                           "status": values.get("status")})
        return False

    def forget(self) -> None:
        """Remove every trace of the run: base snapshot, checkpoints and folder (record, plan, lock file)."""
        forget_run(self.root, self.run_id, self.graph.checkpointer)

    def finish(self, values: dict) -> RunRecord:
        """Record an ended run: evidence into the run folder, worktree (and branch) removed."""
        finish_run(values, self.directory, keep_branch=values.get("status") == "published")
        record = self._write(values, cleaned=True)
        self.progress({"event": "end", "status": record.status, "reason": record.reason})
        return record

    def record_from(self, values: dict, *, awaiting: bool = False, cleaned: bool = False) -> RunRecord:
        """The record of `values`, keeping the creation time of the stored one."""
        stored = get_run(self.root, self.run_id)
        status = "awaiting-review" if awaiting else values.get("status") or "running"
        worktree = values.get("worktree") or {}
        exists = bool(worktree) and Path(worktree.get("path", "")).is_dir()
        branch = worktree.get("branch") if worktree else None
        if cleaned and status != "published":
            branch = None if not worktree.get("reused_branch") else branch
        return RunRecord(
            run_id=self.run_id, op=values.get("op", stored.op), status=status,
            stage=values.get("stage", stored.stage), attempts=int(values.get("attempts", 0)),
            branch=branch, worktree=worktree.get("path") if exists else None,
            created_at=stored.created_at, updated_at=now_iso(), reason=values.get("reason"),
            feedback=values.get("feedback"), pr_url=values.get("pr_url"), bundle_path=values.get("bundle_path"),
            verdicts=dict(values.get("verdicts") or {}), usage=dict(values.get("usage") or {}),
            paused_s=round(_paused_s(values, awaiting), 3))

    def _write(self, values: dict, *, awaiting: bool = False, cleaned: bool = False) -> RunRecord:
        record = self.record_from(values, awaiting=awaiting, cleaned=cleaned)
        write_record(record, self.directory)
        if self.store is not None:
            share_record(self.store, record, values, self.directory)
        return record


def _paused_s(values: dict, awaiting: bool) -> float:
    """Seconds the run has waited at the gate: the decided waits, and at the gate the wait so far (a
    record written again there, e.g. by a resume without a decision, does not count the wait as work)."""
    paused = float(values.get("paused_s") or 0.0)
    if awaiting and values.get("gate_at"):
        paused += max(0.0, time.time() - float(values["gate_at"]))
    return paused


class _OverWallTime(Exception):
    """The run's `--wall-time` budget is spent: it ends at the next node, budget-exhausted."""


_UNTIMED = frozenset({"approve", "rebase", "publish"})  # the decision and what follows it are not work to bound


def _check_wall_time(node: str, values: dict) -> None:
    """Raise _OverWallTime when the run's working time (gate waits left out) has reached its
    `--wall-time` as `node` is about to start."""
    budget = float((values.get("options") or {}).get("wall_time_s", 0) or 0)
    started = values.get("started_at")
    if node in _UNTIMED or budget <= 0 or not started:
        return
    spent = time.time() - float(started) - float(values.get("paused_s") or 0.0)
    if spent >= budget:
        raise _OverWallTime(f"wall time {spent:.0f} s reached the budget of {budget:g} s (--wall-time) "
                            f"before {node}")


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (compilers): load-independent timing."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _file_holding(err: UnicodeDecodeError, root: Path) -> Path | None:
    """The tracked file of the checkout at `root` whose bytes are the ones that failed to decode, so
    the error names it (a reader deep in the port read it with `read_text`); None when none is."""
    import subprocess

    data = err.object
    if not isinstance(data, (bytes, bytearray)) or not data:
        return None
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for rel in filter(None, listed.split(b"\0")):
        path = root / os.fsdecode(rel)
        try:
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                return path.relative_to(root) if Path.cwd() == root else path
        except OSError:
            continue
    return None
