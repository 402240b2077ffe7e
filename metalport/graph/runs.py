"""Start and resume migration runs: the graph driven over SQLite checkpoints, one record per run.

Checkpoints: `<git-common-dir>/metalport/state.sqlite`, `durability="sync"`, thread id = run id.
A resume checks the thread first (`get_state().next/.interrupts`): an unknown id is an
UnknownRunError, never a fresh start. Errors raised by a node (bad input) end the run as failed,
remove what the run created (worktree, branch) and propagate as one-line MetalportErrors.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from contextlib import ExitStack, closing
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command, StateSnapshot

from metalport.agent.provider import Provider
from metalport.errors import (
    FilesystemError,
    MetalportError,
    PipelineError,
    UnknownRunError,
    UsageError,
    filesystem_error,
    is_filesystem_fault,
)
from metalport.graph.base import remove_snapshot
from metalport.graph.context import RunContext, kill_point
from metalport.graph.finish import finish_run
from metalport.graph.records import (
    Abort,
    Approve,
    Decision,
    Reject,
    RunLock,
    RunOptions,
    RunRecord,
    decision_value,
    get_run,
    is_live,
    list_runs,
    metalport_dir,
    next_step,
    now_iso,
    repo_arg,
    repo_top,
    run_dir,
    shared_store,
    write_json,
    write_record,
)
from metalport.graph.state import PRUNABLE_DEFAULT, TERMINAL_STATUSES, PortState
from metalport.graph.wiring import compile_graph, recursion_limit
from metalport.run_ids import new_run_id
from metalport.sandbox.worktree import branch_name
from metalport.store.portable import needs_relocation, relocate, share_record

__all__ = ["Abort", "Approve", "Decision", "Reject", "RunOptions", "RunRecord", "get_run", "list_runs",
           "prune_runs", "resume_run", "run_dir", "start_run"]

Progress = Callable[[dict], None]
_MODEL_HINT = "use --model recipe or --model openai:MODEL"


def start_run(repo_root: Path | str, op: str, options: RunOptions, *, run_id: str | None = None,
              progress: Progress | None = None, provider: Provider | None = None) -> RunRecord:
    """Run `op` from resolve to the approval gate (awaiting-review) or to an end; return its record.

    `provider` overrides the one `options.model` names (tests use a recipe table override).
    """
    root = repo_top(repo_root)
    name = op.strip().removeprefix("aten::")
    branch_name(name)  # rejects names that cannot be an op before anything is written
    _check_model(options.model)
    _refuse_open_run(root, f"aten::{name}")
    run_id = run_id or new_run_id(name)
    directory = run_dir(root, run_id)
    if directory.exists():
        raise PipelineError(f"run {run_id} already exists",
                            hint=f"resume it with `metalport resume {run_id}{repo_arg(root)}`")
    provider = provider or _make_provider(options, root, directory)  # a missing key fails before any record
    stamp = now_iso()
    first = RunRecord(run_id, f"aten::{name}", "running", "resolve", 0, None, None, stamp, stamp)
    store = shared_store(root)
    if store is not None:  # the unique live-run index refuses a second run of the op on any machine
        store.claim(first, store.settings.host_name())
    state: PortState = {
        "run_id": run_id, "op": f"aten::{name}", "repo_root": str(root), "options": options.to_dict(),
        "attempts": 0, "stage": "resolve", "failures": [], "verdicts": {}, "feedback": None, "decision": None,
        "usage": {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0},
        "started_at": time.time(), "paused_s": 0.0, "status": "running", "reason": None}
    driver = _Driver(root, run_id, options, progress, provider)
    try:
        try:
            directory.mkdir(parents=True)
            write_record(first, directory)
        except OSError as err:
            raise filesystem_error(err, what="the run record",
                                   then=f"`run-migration aten::{name}{repo_arg(root)}` again") from None
        driver.__enter__()
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)  # the run never started: leave no record of it
        raise
    with driver:
        return driver.drive(state)


def resume_run(repo_root: Path | str, run_id: str, decision: Decision | None = None, *,
               progress: Progress | None = None, provider: Provider | None = None) -> RunRecord:
    """Continue `run_id` from its last checkpoint, or give the gate its decision; return the record.

    UnknownRunError for an id without record or checkpoint; PipelineError for approve/reject on a
    run that is not awaiting review, or for a run that already ended. Abort also drops a run that
    stopped before the gate (a crash): worktree and branch removed, the record kept.
    """
    root = repo_top(repo_root)
    record = get_run(root, run_id)
    if decision is not None and not isinstance(decision, (Approve, Reject, Abort)):
        raise UsageError(f"unknown decision {decision!r}", hint="use Approve(), Reject(feedback) or Abort()")
    with _Driver(root, run_id, None, progress, provider) as driver:
        snapshot = driver.snapshot()
        if not snapshot.values:
            raise UnknownRunError(f"run {run_id} has a record but no checkpoint in {driver.db_path}",
                                  hint=f"start a new run with `run-migration {record.op}{repo_arg(root)}`")
        at_gate = bool(snapshot.interrupts) or (snapshot.next == ("approve",) and record.status == "awaiting-review")
        if driver.store is not None and record.status not in TERMINAL_STATUSES \
                and needs_relocation(snapshot.values, root):
            # A portable run: its worktree is rebuilt here from base + diff (Note [portable runs]).
            update = relocate(dict(snapshot.values), root, driver.store.portable(run_id))
            driver.graph.update_state(driver._config(3), update)
            snapshot = driver.snapshot()
        if at_gate:
            if decision is None:
                return driver.record_from({**snapshot.values, "stage": "approve"}, awaiting=True)
            return driver.drive(Command(resume=decision_value(decision)))
        if isinstance(decision, Abort) and record.status not in TERMINAL_STATUSES:
            values = dict(snapshot.values)
            values.update(status="aborted", reason=f"aborted by the user at stage {record.stage} (not at the gate)")
            return driver.finish(values)
        if decision is not None:
            raise PipelineError(f"run {run_id} is {record.status} at stage {record.stage}, not awaiting review",
                                hint=next_step(record, root))
        if snapshot.next:
            # A run that failed on bad input had its worktree removed: nothing to continue. After an
            # internal error (worktree kept) or a publish error (approved work kept) a resume retries.
            if record.status in TERMINAL_STATUSES and record.worktree is None and record.stage != "publish":
                raise PipelineError(f"run {run_id} ended {record.status}: {record.reason}",
                                    hint=f"start a new run with `run-migration {record.op}{repo_arg(root)}`")
            return driver.drive(None)
        return driver.finish(dict(snapshot.values))


class _Driver:
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

    def __enter__(self) -> _Driver:
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

    def _config(self, max_attempts: int) -> dict:
        return {"configurable": {"thread_id": self.run_id}, "recursion_limit": recursion_limit(max_attempts)}

    def snapshot(self) -> StateSnapshot:
        """The thread's latest checkpoint (`values == {}` for an unknown thread)."""
        return self.graph.get_state(self._config(3))

    def drive(self, graph_input: object) -> RunRecord:
        """Stream the graph from `graph_input` to the gate or an end, writing the record per update."""
        values = dict(self.snapshot().values) if not isinstance(graph_input, dict) else dict(graph_input)
        options = self.options or RunOptions.from_dict(values.get("options", {}))
        config = self._config(options.max_attempts)
        awaiting = False
        try:
            provider = self.provider or _make_provider(options, self.root, self.directory)
            context = RunContext(self.root, self.directory, provider, executor_name=options.executor,
                                 usage_base=dict(values.get("usage") or {}),
                                 config_path=_config_path(options, self.root))
            for part in self.graph.stream(graph_input, config, stream_mode=["updates", "custom", "tasks"],
                                          durability="sync", version="v2", context=context):
                awaiting = self._on_part(part, values) or awaiting
        except (FilesystemError, OSError, sqlite3.Error) as err:
            raise self._fault(values, err, fresh=isinstance(graph_input, dict)) from None
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
            values.update(update or {})
            if node == "plan" and update.get("plan"):
                write_json(self.directory / "plan.json", update["plan"])
            self._write(values)
            wall0, cpu0 = self._started.pop(node, (time.monotonic(), _cpu_s()))
            self.progress({"event": "done", "node": node, "seconds": round(time.monotonic() - wall0, 3),
                           "cpu_s": round(_cpu_s() - cpu0, 3),
                           "failures": len(values.get("failures") or []) if node in _CHECKING else 0,
                           "status": values.get("status")})
        return False

    def forget(self) -> None:
        """Remove every trace of the run: base snapshot, checkpoints and folder (record, plan, lock file)."""
        _forget(self.root, self.run_id, self.graph.checkpointer)

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
            verdicts=dict(values.get("verdicts") or {}), usage=dict(values.get("usage") or {}))

    def _write(self, values: dict, *, awaiting: bool = False, cleaned: bool = False) -> RunRecord:
        record = self.record_from(values, awaiting=awaiting, cleaned=cleaned)
        write_record(record, self.directory)
        if self.store is not None:
            share_record(self.store, record, values, self.directory)
        return record


_CHECKING = frozenset({"edit", "check", "build", "test"})


def prune_runs(repo_root: Path | str, statuses: tuple[str, ...] = PRUNABLE_DEFAULT, *,
               older_than_s: float = 0.0, dry_run: bool = False) -> tuple[list[RunRecord], list[tuple[RunRecord, str]]]:
    """Remove the records and checkpoints of ended runs in `statuses` older than `older_than_s`.

    Returns (pruned, kept with the reason). UsageError for a status that has not ended (running,
    awaiting-review): those are decided with `metalport resume`, never pruned. A run that still
    has a worktree (kept after an internal error, so a resume can retry it) or holds its lock is kept.
    """
    open_ = [s for s in statuses if s not in TERMINAL_STATUSES]
    if open_:
        raise UsageError(f"runs that are {', '.join(open_)} are never pruned",
                         hint="end them first with `metalport resume ID --abort`")
    root = repo_top(repo_root)
    if shared_store(root) is not None:
        raise UsageError("runs prune works on the embedded (SQLite) state only",
                         hint="unset METALPORT_DATABASE_URL to prune this checkout's local runs")
    pruned: list[RunRecord] = []
    kept: list[tuple[RunRecord, str]] = []
    now = time.time()
    chosen = [r for r in list_runs(root) if r.status in statuses and r.age_s(now) >= older_than_s]
    if not chosen or dry_run:
        return chosen, kept
    with closing(sqlite3.connect(str(metalport_dir(root) / "state.sqlite"), timeout=30)) as conn:
        saver = SqliteSaver(conn)
        for record in chosen:
            if record.worktree and Path(record.worktree).is_dir():
                kept.append((record, f"its worktree {record.worktree} is kept for "
                                     f"`metalport resume {record.run_id}{repo_arg(root)}`"))
            elif is_live(root, record.run_id):
                kept.append((record, "a process still holds it"))
            else:
                _forget(root, record.run_id, saver)
                pruned.append(record)
    return pruned, kept


def _forget(root: Path, run_id: str, checkpointer: SqliteSaver) -> None:
    """Remove a run's base snapshot, checkpoints and folder (record, plan, evidence, lock file)."""
    remove_snapshot(root, run_id)
    checkpointer.delete_thread(run_id)
    shutil.rmtree(run_dir(root, run_id), ignore_errors=True)


def _refuse_open_run(root: Path, op: str) -> None:
    """PipelineError when another run of `op` still holds its branch (at the gate, running, stopped)."""
    for record in list_runs(root):
        if record.op == op and (record.status not in TERMINAL_STATUSES or record.worktree is not None):
            what = "is waiting for review" if record.status == "awaiting-review" else f"is {record.status}"
            command = f"metalport resume {record.run_id}"
            repo = repo_arg(root)
            raise PipelineError(f"run {record.run_id} of {op} {what} on {record.branch}", hint=(
                f"decide it first (`{command} --approve{repo}` / `{command} --abort{repo}`)"
                if record.status == "awaiting-review" else f"`{command}{repo}` or `{command} --abort{repo}`"))


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (compilers): load-independent timing."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _check_model(model: str) -> None:
    if model == "recipe":
        return
    if not model.startswith("openai:") or not model.removeprefix("openai:").strip():
        raise UsageError(f"unknown model {model!r}", hint=_MODEL_HINT)


def _make_provider(options: RunOptions, root: Path, directory: Path) -> Provider:
    """The provider `options.model` names, with the run's budget (wall time capped by the option)."""
    from metalport.agent.factory import make_provider

    _check_model(options.model)
    config_path = _config_path(options, root)
    budget = dict(options.budget or {})
    budget["max_wall_s"] = min(float(budget.get("max_wall_s") or options.wall_time_s), options.wall_time_s)
    return make_provider(options.model, config_path=config_path, run_dir=directory, budget_limits=budget)


def _config_path(options: RunOptions, root: Path) -> Path:
    """The run's metalport.yaml: --config, else the repository's own."""
    return Path(options.config_path) if options.config_path else root / "metalport.yaml"

