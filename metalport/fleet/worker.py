"""`run_worker`: one machine's worker — the workflows, its capability queue and its own `host.<name>` queue.

A Mac worker takes one activity at a time (a PyTorch build takes the machine), like the local macOS
executor; a Linux worker takes `concurrency`. Every worker also runs workflow tasks (they are
short) and reports itself in the shared store every few seconds for `metalport fleet status`.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from temporalio.worker import Worker

from metalport.fleet.activities import FleetActivities
from metalport.fleet.client import connect, fleet_settings, host_queue
from metalport.fleet.workflow import WORKFLOW_QUEUE, PortWorkflow, SweepWorkflow
from metalport.store.settings import HOST_ENV


async def run_worker(root: Path, queue: str, executor: str, *, concurrency: int, host: str | None = None,
                     ready: asyncio.Event | None = None) -> None:
    """Poll the fleet's queues for `root` until SIGINT/SIGTERM; `ready` is set once polling."""
    settings, store = fleet_settings(root)
    host = host or settings.host_name()
    os.environ[HOST_ENV] = host  # the records this process writes name this machine (store settings read it)
    client = await connect(settings)
    activities = FleetActivities(root, host, executor, heartbeat_s=settings.heartbeat_s)
    identity = f"{host}:{queue}:{os.getpid()}"
    queues = [queue, host_queue(host)]
    workers = [
        Worker(client, task_queue=queue, activities=[activities.port, activities.sweep],
               max_concurrent_activities=concurrency, identity=identity),
        Worker(client, task_queue=host_queue(host), activities=[activities.port],
               max_concurrent_activities=concurrency, identity=identity),
        Worker(client, task_queue=WORKFLOW_QUEUE, workflows=[PortWorkflow, SweepWorkflow], identity=identity),
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.create_task(w.run()) for w in workers]
    await asyncio.to_thread(store.worker_seen, identity, host, queues, root)
    if ready is not None:
        ready.set()
    try:
        while not stop.is_set() and not any(t.done() for t in tasks):
            await asyncio.to_thread(store.worker_seen, identity, host, queues, root)
            try:
                await asyncio.wait_for(stop.wait(), timeout=5.0)
            except TimeoutError:
                pass
    finally:
        await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
        for task in tasks:
            if task.done() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
