"""Talking to the fleet's Temporal server: connect, name workflows and queues, start ops, send decisions.

Without a Temporal address nothing here is used. The address comes from METALPORT_TEMPORAL_ADDRESS
or `fleet: temporal:` (loopback in every example); a connection failure is one FleetError line.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from temporalio.client import Client, WorkflowHandle

from metalport.errors import MetalportError
from metalport.store import FleetSettings, RunStore, load_settings, open_store

QUEUES = ("mac", "linux")
DEFAULT_EXECUTOR = {"mac": "macos", "linux": "emulated"}


class FleetError(MetalportError):
    """The fleet (Temporal) cannot be reached, or refused what was asked."""


def fleet_settings(root: Path) -> tuple[FleetSettings, RunStore]:
    """The checkout's fleet settings and shared store; FleetError when either is not configured."""
    settings = load_settings(root)
    store = open_store(root)
    if settings.temporal is None or store is None:
        missing = " and ".join(n for n, v in (("a Temporal address", settings.temporal), ("a database URL", store))
                               if v is None)
        raise FleetError(f"the fleet needs {missing}", hint="set METALPORT_TEMPORAL_ADDRESS and "
                         "METALPORT_DATABASE_URL (or `fleet: temporal:` and `database: url:` in metalport.yaml)")
    return settings, store


async def connect(settings: FleetSettings, *, wait_s: float = 0.0) -> Client:
    """A client of the configured Temporal server; FleetError when it does not answer (after `wait_s`
    of retries with backoff and a progress line each, for a worker riding out a server restart)."""
    import asyncio
    import sys

    waited, delay = 0.0, 0.5
    while True:
        try:
            return await Client.connect(settings.temporal or "", namespace=settings.namespace,
                                        tls=settings.temporal_tls())
        except RuntimeError as err:
            tls = tls_failure(str(err), bool(settings.temporal_tls()))
            if tls is not None and (tls[2] or waited >= wait_s):  # a refused certificate is no passing outage
                raise FleetError(f"cannot reach the Temporal server at {settings.temporal}: {tls[0]}",
                                 hint=tls[1]) from None
            why = "connection refused" if "Connection refused" in str(err) else str(err).splitlines()[0][:160]
            if waited >= wait_s:
                raise FleetError(f"cannot reach the Temporal server at {settings.temporal} ({why})",
                                 hint="start it (`temporal server start-dev --ip 127.0.0.1`) or check "
                                      "METALPORT_TEMPORAL_ADDRESS") from None
            print(f"metalport: Temporal at {settings.temporal} unreachable ({why}); retrying in {delay:g}s "
                  f"(waited {waited:.0f}s)", file=sys.stderr, flush=True)
            await asyncio.sleep(delay)
            waited += delay
            delay = min(delay * 2, 10.0)


def tls_failure(error: str, tls_on: bool) -> tuple[str, str, bool] | None:
    """(what went wrong, what to do, certain) when the Temporal client's `error` looks like a TLS
    failure, else None. A certificate refused is certain (no wait helps); a plain client whose first
    call was cut off may be talking to a TLS server, or to one going down."""
    import re

    if "InvalidCertificate(UnknownIssuer)" in error:
        return ("TLS: the server's certificate is not signed by the configured CA",
                "point fleet.tls_ca (or METALPORT_TEMPORAL_TLS_CA) at the CA that signed it", True)
    named = re.search(r"NotValidForName\w*\s*\{\s*expected:\s*\w+\(\"?([^\")]+)\"?\),\s*presented:\s*\[(.*?)\]", error)
    if named:
        names = ", ".join(re.findall(r'\w+\(\\?"?([^\\")]+)\\?"?\)', named.group(2)))
        return (f"TLS: the server's certificate does not name {named.group(1)} (it names {names or 'nothing'})",
                "connect by a name it carries, or set fleet.tls_server_name (or METALPORT_TEMPORAL_TLS_SERVER_NAME)",
                True)
    if "InvalidCertificate(" in error:
        kind = re.search(r"InvalidCertificate\((\w+)", error)
        return (f"TLS: the server's certificate was refused ({kind.group(1) if kind else 'invalid'})",
                "renew or replace the server's certificate", True)
    if tls_on and "InvalidContentType" in error:
        return ("TLS was asked but the server answered in plain TCP",
                "unset fleet.tls_* (or METALPORT_TEMPORAL_TLS_*), or turn TLS on at the server", True)
    # A TLS server hanging up on a plain client's first call is seen, by timing, as a broken pipe, a
    # transport error or a call cancelled with its transport ("code: Cancelled ... tonic::transport").
    cut_off = ("broken pipe" in error or "transport error" in error
               or ("code: Cancelled" in error and "tonic::transport" in error))
    if not tls_on and "after connection" in error and cut_off:
        return ("the server closed the connection at the first call (does it require TLS?)",
                "set fleet.tls_ca (or METALPORT_TEMPORAL_TLS_CA) to the server's CA, or check that it is up", False)
    return None


def workflow_id(repository: str, op: str) -> str:
    """The id of the workflow porting `op` in `repository` (the engine refuses a second one while it runs)."""
    name = op.removeprefix("aten::")
    digest = hashlib.sha256(repository.encode()).hexdigest()[:12]
    return f"metalport-{digest}-{name}"


def host_queue(repository: str, host: str) -> str:
    """The task queue of one machine for one repository (decisions go there first: it holds the worktree)."""
    from metalport.fleet.workflow import repository_queue

    return repository_queue(repository, f"host.{host}")


async def decision_handle(client: Client, store: RunStore, op: str) -> WorkflowHandle | None:
    """The running workflow of `op`, or None when the fleet is not driving it."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError

    handle = client.get_workflow_handle(workflow_id(store.repository, op))
    try:
        description = await handle.describe()
    except RPCError:
        return None
    return handle if description.status == WorkflowExecutionStatus.RUNNING else None


async def start_port(client: Client, settings: FleetSettings, store: RunStore, op: str, queue: str,
                     options: dict) -> tuple[str, str] | None:
    """Start the workflow porting `op` on `queue`; (run id, workflow id), or None when one already runs."""
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from metalport.fleet.workflow import repository_queue
    from metalport.run_ids import new_run_id

    run_id, wid = new_run_id(op), workflow_id(store.repository, op)
    request = {"repository": store.repository, "op": op.removeprefix("aten::"), "run_id": run_id, "queue": queue,
               "options": options, "heartbeat_s": settings.heartbeat_s, "publish_wait_s": settings.publish_wait_s,
               "attempts": 10, "repository_queues": True}
    await asyncio.to_thread(store.queue_run, run_id, f"aten::{request['op']}", wid)  # open from now (--max-open)
    try:
        await client.start_workflow("PortWorkflow", request, id=wid, task_queue=repository_queue(store.repository, ""),
                                    id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                                    id_conflict_policy=WorkflowIDConflictPolicy.FAIL)
    except WorkflowAlreadyStartedError:
        await asyncio.to_thread(store.unqueue_run, run_id)
        return None
    return run_id, wid
