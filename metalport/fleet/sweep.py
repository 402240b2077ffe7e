"""`fleet_sweep`: today's candidate logic over the shared run records, starting one workflow per op.

The skip rules are the local sweep's (`local_skip`) read from PostgreSQL, so every machine's runs,
rejections and failures count. Starting is the engine's job: the workflow id names the op, so when
two sweeps pick the same op at once the second start is refused and reported as a skip. The sweep
does not wait for the runs; workers carry them to the gate. The report goes to the usual dashboard
files and to the shared store.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metalport.fleet.client import DEFAULT_EXECUTOR, connect, fleet_settings, start_port, workflow_id
from metalport.graph.records import RunOptions
from metalport.sweep.candidates import backlog_candidates, runs_by_op
from metalport.sweep.dashboard import SweepReport, paths_for, write_dashboard
from metalport.sweep.model import CANDIDATE, RUNNING, SKIPPED, OpOutcome, metalport_dir


@dataclass(frozen=True)
class FleetSweepOptions:
    """What a fleet sweep takes; the flags of `metalport sweep --fleet`."""

    queue: str = "linux"  # capability queue the runs go to (mac | linux)
    statuses: tuple[str, ...] = ("missing", "mps-graph")
    families: tuple[str, ...] = ()
    limit: int | None = None
    max_open: int = 5
    model: str = "recipe"
    max_attempts: int = 3
    retry_rejected: bool = False
    retry_failed: bool = False
    dashboard: str | None = None

    def to_dict(self) -> dict:
        """JSON data (the nightly Schedule's workflow input)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> FleetSweepOptions:
        """Inverse of `to_dict` (lists become tuples)."""
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
        return cls(**values)


async def fleet_sweep(root: Path, options: FleetSweepOptions) -> SweepReport:
    """Start a workflow for each candidate of `root`'s backlog that nobody is on; the sweep's report."""
    from metalport.port import recipe_ops as covered

    settings, store = fleet_settings(root)
    client = await connect(settings)
    recipe_ops = covered() if options.model == "recipe" else frozenset()
    items = backlog_candidates(root, options.statuses, options.families)
    records = store.list()
    grouped = runs_by_op(records)
    outcomes: list[OpOutcome] = []
    started: list[str] = []
    run_options = RunOptions(model=options.model, executor=DEFAULT_EXECUTOR.get(options.queue, "auto"),
                             max_attempts=options.max_attempts).to_dict()
    with store.sweep_lock():  # concurrent sweeps count and start one after the other: --max-open holds
        stop = await _start_candidates(client, settings, store, options, items, grouped, recipe_ops,
                                       store.open_count(), run_options, outcomes, started)
    md, js = paths_for(Path(options.dashboard)) if options.dashboard else (None, None)
    now = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    report = SweepReport(repo=store.repository, started_at=now, finished_at=now, outcomes=tuple(outcomes),
                         options={"fleet": options.queue, "status": ",".join(options.statuses),
                                  "family": ",".join(options.families), "limit": options.limit,
                                  "max-open": options.max_open, "model": options.model},
                         stop_reason=stop, started_runs=tuple(started),
                         markdown_path=str(md) if md else None, json_path=str(js) if js else None)
    report = write_dashboard(report, metalport_dir(root))
    store.put_report(report.to_dict())
    return report


async def _start_candidates(client: Any, settings: Any, store: Any, options: FleetSweepOptions, items: list,
                            grouped: dict, recipe_ops: frozenset, open_now: int, run_options: dict,
                            outcomes: list[OpOutcome], started: list[str]) -> str | None:
    """Start the candidates not skipped, within --limit and --max-open; why starting stopped, if it did."""
    from metalport.sweep.candidates import local_skip, offline_portable

    stop: str | None = None
    for item in items:
        skip = local_skip(item, grouped.get(item.op, []), set(), model=options.model,
                          retry_rejected=options.retry_rejected, retry_failed=options.retry_failed,
                          live=lambda run_id: True)
        if skip is None and options.model == "recipe" and not offline_portable(item, recipe_ops):
            skip = OpOutcome(op=item.op, outcome=SKIPPED, ease=item.ease, skip="needs-llm",
                             reason=f"aten::{item.op} has no recipe in the recipe table (it needs an LLM); sweep "
                                    "with --model openai:MODEL to port it")
        if skip is not None:
            outcomes.append(skip)
            continue
        if stop is None and options.limit is not None and len(started) >= options.limit:
            stop = f"--limit {options.limit} runs started"
        if stop is None and open_now + len(started) >= options.max_open:
            stop = f"{open_now + len(started)} runs are open on the fleet (--max-open {options.max_open})"
        if stop is not None:
            outcomes.append(OpOutcome(op=item.op, outcome=CANDIDATE, ease=item.ease, reason=f"not started: {stop}"))
            continue
        placed = await start_port(client, settings, store, item.op, options.queue, run_options)
        if placed is None:
            outcomes.append(OpOutcome(op=item.op, outcome=SKIPPED, ease=item.ease, skip="in-progress",
                                      reason=f"workflow {workflow_id(store.repository, item.op)} is already porting "
                                             "it (another sweep started it)"))
            continue
        run_id, wid = placed
        started.append(run_id)
        outcomes.append(OpOutcome(op=item.op, outcome=RUNNING, ease=item.ease, run_id=run_id, stage="start",
                                  reason=f"run {run_id} started on the fleet (queue {options.queue}, workflow {wid})"))
    return stop
