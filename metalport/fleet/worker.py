"""`run_worker`: one machine's worker — the workflows, its capability queue and its own `host.<name>` queue.

A Mac worker takes one activity at a time (a PyTorch build takes the machine), like the local macOS
executor; a Linux worker takes `concurrency`. Every queue belongs to the worker's repository
(`repository_queue`). Every worker also runs workflow tasks (they are short) and reports itself
in the shared store every few seconds for `metalport fleet status`.

Outages are waited out (Note [waiting out outages] in `metalport.store.pg`): the database calls
of this process retry with backoff, and when the Temporal server goes away the pollers are
rebuilt on a new connection after backoff, with a progress line each time. A worker exits on
SIGINT/SIGTERM or a configuration error, not on an outage.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from temporalio.worker import Worker

from metalport.fleet.activities import FleetActivities
from metalport.fleet.client import connect, fleet_settings, host_queue
from metalport.fleet.workflow import LEGACY_WORKFLOW_QUEUE, PortWorkflow, SweepWorkflow, repository_queue
from metalport.store.pg import STALL_ENV, WAIT_ENV, DatabaseError
from metalport.store.settings import HOST_ENV

_FOREVER_S = 10 * 365 * 24 * 3600.0


def _pollers(client: object, activities: FleetActivities, repository: str, capability: str, own: str,
             concurrency: int, identity: str) -> list[Worker]:
    """The four pollers of one worker process: capability activities, this host's activities, the
    repository's workflows and the legacy shared workflow queue."""
    return [
        Worker(client, task_queue=capability, activities=[activities.port, activities.sweep],
               max_concurrent_activities=concurrency, identity=identity),
        Worker(client, task_queue=own, activities=[activities.port, activities.cleanup],
               max_concurrent_activities=concurrency, identity=identity),
        Worker(client, task_queue=repository_queue(repository, ""), workflows=[PortWorkflow, SweepWorkflow],
               identity=identity),
        # Workflows started before queues carried the repository wait at the gate on the old shared
        # workflow queue; their code is repository-neutral, and an approval needs no activity.
        Worker(client, task_queue=LEGACY_WORKFLOW_QUEUE, workflows=[PortWorkflow, SweepWorkflow], identity=identity),
    ]


async def _heartbeat_until(stop: asyncio.Event, tasks: list[asyncio.Task], seen: Callable[[], None]) -> None:
    """Mark the worker seen every 5 s until `stop` is set or a poller ends."""
    while not stop.is_set() and not any(t.done() for t in tasks):
        try:
            await asyncio.to_thread(seen)
        except DatabaseError as err:  # only after the (long) wait: say so and keep polling
            print(f"metalport worker: {err}", file=sys.stderr, flush=True)
        try:
            await asyncio.wait_for(stop.wait(), timeout=5.0)
        except TimeoutError:
            pass


async def run_worker(root: Path, queue: str, executor: str, *, concurrency: int, host: str | None = None,
                     ready: asyncio.Event | None = None) -> None:
    """Poll the fleet's queues for `root` until SIGINT/SIGTERM; `ready` is set once polling."""
    settings, store = fleet_settings(root)
    if settings.artifacts_remote:  # never the public fork: a configuration error, found before any run
        from metalport.store.gitremote import check_remote

        check_remote(root, settings.artifacts_remote)
    host = host or settings.host_name()
    os.environ[HOST_ENV] = host  # the records this process writes name this machine (store settings read it)
    os.environ.setdefault(STALL_ENV, str(settings.stall_s))  # leases of this process renew only on progress
    activities = FleetActivities(root, host, executor, store.repository, heartbeat_s=settings.heartbeat_s,
                                 concurrency=concurrency)
    identity = f"{host}:{queue}:{os.getpid()}"
    capability, own = repository_queue(store.repository, queue), host_queue(store.repository, host)
    queues = [capability, own]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # A server that does not answer at start is a configuration error (one line, exit); later it is an outage.
    await asyncio.to_thread(store.worker_seen, identity, host, queues, root)
    client = await connect(settings)
    os.environ.setdefault(WAIT_ENV, str(_FOREVER_S))  # from now on every database call waits out outages
    store.wait_s = float(os.environ[WAIT_ENV])
    delay = 1.0
    while not stop.is_set():
        client = client or await connect(settings, wait_s=_FOREVER_S)
        workers = _pollers(client, activities, store.repository, capability, own, concurrency, identity)
        tasks = [asyncio.create_task(w.run()) for w in workers]
        if ready is not None:
            ready.set()
        started = time.monotonic()
        try:
            await _heartbeat_until(stop, tasks, lambda: store.worker_seen(identity, host, queues, root))
        finally:
            await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
        client = None
        failed = [t.exception() for t in tasks if t.done() and not t.cancelled() and t.exception() is not None]
        if stop.is_set():
            break
        delay = 1.0 if time.monotonic() - started > 60 else min(delay * 2, 30.0)
        why = str(failed[0]).splitlines()[0][:160] if failed else "a poller stopped"
        print(f"metalport worker: lost the Temporal server at {settings.temporal} ({why}); reconnecting in "
              f"{delay:.0f}s", file=sys.stderr, flush=True)
        try:
            await asyncio.wait_for(stop.wait(), timeout=delay)
        except TimeoutError:
            pass
