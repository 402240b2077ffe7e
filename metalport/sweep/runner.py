"""`run_sweep`: start port runs for the backlog's candidates, K at a time, up to the review gate.

The loop holds the repository's sweep lock, skips (with a reason) every op someone is already on,
starts each remaining candidate as a `metalport run` subprocess, and stops starting runs when the
--limit, the sweep budget or the --max-open review limit is reached. Every op it looked at ends
with an outcome; the dashboard is rewritten after every change.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from metalport.budget_limits import BudgetLimits, SweepBudget
from metalport.errors import BudgetExhausted, FilesystemError, filesystem_error
from metalport.port import recipe_ops
from metalport.run_ids import new_run_id
from metalport.sweep.candidates import (backlog_candidates, local_branches, local_skip, offline_portable, open_pr_skip,
                                        runs_by_op, search_open_prs)
from metalport.sweep.dashboard import SweepReport, paths_for, write_dashboard
from metalport.sweep.launch import RunCommand, RunProcess
from metalport.sweep.lock import SweepLock
from metalport.sweep.model import AWAITING, CANDIDATE, FAILED, SKIPPED, OpOutcome, from_record, metalport_dir, status_of


@dataclass(frozen=True)
class SweepOptions:
    """What to sweep and how; see `metalport sweep --help` for each field's flag."""

    repo_root: Path
    statuses: tuple[str, ...] = ("missing", "mps-graph", "mps-graph-stub")
    families: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()  # port kinds (`port.tree.kinds.Kind` values) to take; () takes every candidate
    porters: tuple[str, ...] = ()  # porters (`port.tree.kinds.Porter` values) whose ops to take; () takes every one
    limit: int | None = None  # most runs to start
    concurrency: int = 1  # runs at once (K)
    max_open: int = 5  # most runs awaiting review at any time (M)
    model: str = "recipe"
    executor: str = "auto"
    retry_rejected: bool = False
    retry_failed: bool = False
    resume_interrupted: bool = True  # continue runs a killed sweep left mid-way
    dashboard: Path | None = None  # Markdown path; the JSON goes beside it
    budget: BudgetLimits = field(default_factory=lambda: UNLIMITED)  # for the whole sweep
    run_limits: BudgetLimits = field(default_factory=BudgetLimits)  # for each run (capped by what is left)
    run_flags: tuple[str, ...] = ()  # passed to every `metalport run` (per-run limits)
    github: Any | None = None  # a GitHubClient when a GitHub remote is configured
    # Start one family run (`run --family`) per op family: ops sharing the started op's legacy MPS
    # macro or helper are ported in its change and skipped as runs of their own.
    port_families: bool = False
    poll_s: float = 0.3


class Runs:
    """The graph's run records (D's public API), with a missing record as None."""

    def __init__(self, repo_root: Path) -> None:
        from metalport.graph import runs

        self._runs, self.repo_root = runs, repo_root

    def all(self) -> list[Any]:
        """Every run record of the repository."""
        return list(self._runs.list_runs(self.repo_root))

    def get(self, run_id: str) -> Any | None:
        """The record of `run_id`, or None while it has not been written."""
        from metalport.errors import MetalportError

        try:
            return self._runs.get_run(self.repo_root, run_id)
        except MetalportError:
            return None

    def live(self, run_id: str) -> bool:
        """True while a process drives `run_id` (holds its run lock)."""
        from metalport.graph.records import is_live

        return is_live(self.repo_root, run_id)


_CRASH_LIMIT = 2
UNLIMITED = BudgetLimits(max_calls=0, max_input_tokens=0, max_output_tokens=0, max_cost_usd=0.0, max_wall_s=0.0)

Progress = Callable[[list[RunProcess], list[OpOutcome]], None]


def run_sweep(options: SweepOptions, *, progress: Progress | None = None) -> SweepReport:
    """Sweep the backlog of `options.repo_root` under its lock; returns the final report."""
    mdir = metalport_dir(options.repo_root)
    with SweepLock(mdir):
        return _Sweep(options, mdir, progress).run()


def repo_flag(options: SweepOptions) -> str:
    """` --repo DIR` for the commands the dashboard suggests ('' when run from the checkout)."""
    return "" if Path.cwd().resolve() == options.repo_root.resolve() else f" --repo {options.repo_root}"


class _Sweep:
    def __init__(self, options: SweepOptions, mdir: Path, progress: Progress | None) -> None:
        self.o, self.mdir, self.progress = options, mdir, progress
        self.runs = Runs(options.repo_root)
        self.flag = repo_flag(options)
        flags = (*options.run_flags, "--family") if options.port_families else options.run_flags
        self.command = RunCommand(options.repo_root, options.model, options.executor, flags)
        self.claimed: dict[str, str] = {}  # op -> the op whose family run ports it
        self.recipe_ops = recipe_ops()
        self.outcomes: dict[str, OpOutcome] = {}
        self.inflight: list[RunProcess] = []
        self.started: list[str] = []
        self.resumed: list[str] = []
        self.budget = SweepBudget(options.budget)
        self.crashed = 0
        self.budget_set = options.budget != UNLIMITED
        self.limits = options.run_limits
        self.stop_reason: str | None = None
        md, js = paths_for(options.dashboard) if options.dashboard else (None, None)
        self.report = SweepReport(
            repo=str(options.repo_root), started_at=_now(), finished_at=None, outcomes=(),
            options={"status": ",".join(options.statuses), "family": ",".join(options.families),
                     "kind": ",".join(options.kinds) or None, "porter": ",".join(options.porters) or None,
                     "limit": options.limit,
                     "concurrency": options.concurrency, "max-open": options.max_open,
                     "model": options.model, "executor": options.executor,
                     "retry-rejected": options.retry_rejected or None,
                     "retry-failed": options.retry_failed or None},
            markdown_path=str(md) if md else None, json_path=str(js) if js else None, repo_flag=self.flag)

    def run(self) -> SweepReport:
        items = backlog_candidates(self.o.repo_root, self.o.statuses, self.o.families, self.o.kinds, self.o.porters)
        grouped = runs_by_op(self.runs.all())
        branches = local_branches(self.o.repo_root)
        queue: list[tuple[Any, str | None]] = []  # (item, run id to resume or None for a new run)
        resumes: list[tuple[Any, str | None]] = []
        for item in items:
            skip = local_skip(item, grouped.get(item.op, []), branches, model=self.o.model,
                              retry_rejected=self.o.retry_rejected, retry_failed=self.o.retry_failed,
                              live=self.runs.live, repo_flag=self.flag)
            if skip is not None and skip.skip == "interrupted" and self.o.resume_interrupted:
                # A run a killed sweep (or process) left mid-way: continue it from its checkpoint first.
                resumes.append((item, skip.run_id))
                skip = replace(skip, outcome=CANDIDATE, skip=None, reason=f"{skip.reason}; waiting to resume it")
            self.outcomes[item.op] = skip or OpOutcome(op=item.op, outcome=CANDIDATE, ease=item.ease,
                                                       reason="waiting for a free run slot")
            if skip is None:
                queue.append((item, None))
        queue = resumes + queue
        self._recount()
        self._publish()  # an unwritable dashboard fails here, before any run starts
        try:
            self._loop(queue)
        except (FilesystemError, OSError) as err:
            # The disk filled or went read-only mid-sweep: stop the runs (each resumes from its checkpoint).
            for proc in self.inflight:
                proc.terminate()
            raise (err if isinstance(err, FilesystemError) else filesystem_error(err)).add_hint(
                f"then `metalport sweep{self.flag}` resumes the runs it stopped") from None
        except KeyboardInterrupt:
            self.stop_reason = "interrupted (Ctrl-C); the runs that were going are resumable"
            for proc in self.inflight:
                proc.terminate()
                self._finish(proc, proc.proc.returncode)
            self._close(queue)
            raise
        self._close(queue)
        return self.report

    def _loop(self, queue: list[Any]) -> None:
        while True:
            while queue and len(self.inflight) < self.o.concurrency and self._may_start(resume=queue[0][1]):
                item, resume = queue.pop(0)
                if resume is not None:
                    self._launch(item, resume=resume)
                elif not self._pr_skip(item) and not self._unportable(item) and not self._in_family(item):
                    self._launch(item)
            for proc in list(self.inflight):
                code = proc.poll(self.runs.get)
                if code is not None:
                    self.inflight.remove(proc)
                    self._finish(proc, code)
            self._publish()
            if not self.inflight and (not queue or self.stop_reason):
                return
            time.sleep(self.o.poll_s)

    def _recount(self) -> None:
        """Count the runs awaiting review, and the runs other processes drive (they may reach the gate)."""
        records = self.runs.all()
        self.awaiting = sum(1 for r in records if status_of(r) == "awaiting-review")
        self.elsewhere = sum(1 for r in records if status_of(r) == "running" and self.runs.live(r.run_id)
                             and r.run_id not in {p.run_id for p in self.inflight})

    def _may_start(self, *, resume: str | None = None) -> bool:
        """Whether another run may start (or resume) now; sets `stop_reason` when that is over for good."""
        if self.stop_reason:
            return False
        if resume is None and self.o.limit is not None and len(self.started) >= self.o.limit:
            self.stop_reason = f"--limit {self.o.limit} runs started"
            return False
        try:
            self.limits = self.budget.limits_for_run(self.o.run_limits)
        except BudgetExhausted as err:
            self.stop_reason = err.message
            return False
        if self.awaiting + self.elsewhere + len(self.inflight) >= self.o.max_open:
            if not self.inflight:
                self._recount()  # a run driven elsewhere may have ended meanwhile
                if self.awaiting + self.elsewhere < self.o.max_open:
                    return True
                also = f" and {self.elsewhere} more are running" if self.elsewhere else ""
                self.stop_reason = (f"{self.awaiting} runs await review{also} (--max-open {self.o.max_open}); "
                                    f"review them with `metalport review{self.flag}`")
            return False
        return True

    def _unportable(self, item: Any) -> bool:
        """With the recipe model, skip (without spending --limit) an op no recipe covers (the
        functor table or the spec recipes) and the translate porter declines: its run could only end
        needs-llm."""
        if self.o.model != "recipe" or offline_portable(item, self.recipe_ops):
            return False
        self.outcomes[item.op] = OpOutcome(
            op=item.op, outcome=SKIPPED, ease=item.ease, skip="needs-llm",
            reason=f"aten::{item.op} has no recipe in the recipe table (it needs an LLM); sweep with "
                   "--model openai:MODEL to port it")
        return True

    def _pr_skip(self, item: Any) -> bool:
        if self.o.github is None:
            return False
        skip = open_pr_skip(item, search_open_prs(self.o.github, item.op))
        if skip is not None:
            self.outcomes[item.op] = skip
        return skip is not None

    def _in_family(self, item: Any) -> bool:
        """With `port_families`: True (and the op skipped) when an earlier family run ports it; else
        the op's family is claimed for the run about to start."""
        if not self.o.port_families:
            return False
        lead = self.claimed.get(item.op)
        if lead is not None:
            self.outcomes[item.op] = OpOutcome(op=item.op, outcome="skipped", ease=item.ease, skip="family",
                                               reason=f"ported in the family run of aten::{lead}")
            return True
        from metalport.checkout import find_checkout
        from metalport.errors import MetalportError
        from metalport.port import family_of

        try:
            members, _ = family_of(find_checkout(self.o.repo_root), item.op)
        except MetalportError:
            members = (item.op,)
        for op in members:
            self.claimed.setdefault(op, item.op)
        return False

    def _launch(self, item: Any, *, resume: str | None = None) -> None:
        run_id = resume or new_run_id(item.op)
        limits = self.limits if self.budget_set else None
        argv = self.command.resume_argv(run_id) if resume else self.command.argv(item.op, run_id, limits)
        proc = RunProcess(item.op, run_id, argv, self.mdir / "sweep" / "logs", ease=item.ease)
        self.inflight.append(proc)
        (self.resumed if resume else self.started).append(run_id)
        self.outcomes[item.op] = OpOutcome(op=item.op, outcome="running", ease=item.ease, run_id=run_id,
                                           reason=f"run {run_id} {'resumed' if resume else 'started'}",
                                           stage="start")

    def _finish(self, proc: RunProcess, code: int | None) -> None:
        """Record the outcome of a run whose process ended (exit `code`)."""
        record = self.runs.get(proc.run_id) or proc.record
        if record is None:
            error = proc.last_error_line() or "no message"
            self.outcomes[proc.op] = OpOutcome(
                op=proc.op, outcome=FAILED, ease=proc.ease, run_id=proc.run_id, stage="start",
                reason=f"the run process exited with code {code} before writing a record: {error} "
                       f"(log {proc.stderr_path})")
            self.crashed += 1
            if self.crashed >= _CRASH_LIMIT and not self.stop_reason:
                # The same breakage would fail every candidate: stop instead of burning the backlog.
                self.stop_reason = f"{self.crashed} runs in a row exited before they started: {error}"
            return
        self.crashed = 0
        self.budget.add(record.usage or {})
        outcome = from_record(record, ease=proc.ease, repo_flag=self.flag)
        if status_of(record) == "running":
            why = proc.last_error_line() or f"exit code {code}"
            outcome = replace(outcome, outcome="running" if code is None else FAILED,
                              reason=f"the run process exited with code {code} at stage {record.stage}: {why} "
                                     f"(log {proc.stderr_path})")
        if outcome.outcome == AWAITING:
            self.awaiting += 1
        self.outcomes[proc.op] = outcome

    def _close(self, queue: list[Any]) -> None:
        why = self.stop_reason or "not started"
        for item, resume in queue:
            if resume is not None:
                self.outcomes[item.op] = replace(self.outcomes[item.op], outcome=SKIPPED, skip="interrupted",
                                                 reason=f"run {resume} is resumable but was not resumed: {why}")
            else:
                self.outcomes[item.op] = OpOutcome(op=item.op, outcome=CANDIDATE, ease=item.ease,
                                                   reason=f"not started: {why}")
        self._publish(finished=True)

    def _publish(self, *, finished: bool = False) -> None:
        """Rewrite the dashboard from the current outcomes and tell the progress view."""
        for proc in self.inflight:
            if proc.record is not None and status_of(proc.record) == "running":
                self.outcomes[proc.op] = from_record(proc.record, ease=proc.ease, repo_flag=self.flag)
        self.report = write_dashboard(replace(
            self.report, outcomes=tuple(self.outcomes.values()), stop_reason=self.stop_reason,
            usage=self.budget.usage(), started_runs=tuple(self.started),
            resumed_runs=tuple(self.resumed),
            finished_at=_now() if finished else None), self.mdir)
        if self.progress is not None:
            self.progress(list(self.inflight), list(self.outcomes.values()))


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def default_concurrency(executor: str) -> int:
    """K when --concurrency is not given: 1 for the macOS executor (its builds take the machine), else 2."""
    on_mac = executor == "macos" or (executor == "auto" and sys.platform == "darwin")
    return 1 if on_mac else 2
