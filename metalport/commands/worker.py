"""`metalport worker --queue mac|linux`: this machine works for the fleet until stopped (Ctrl-C / SIGTERM)."""

from __future__ import annotations

import argparse

from metalport.commands._repo import add_repo_option, checkout_root


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `worker` command."""
    parser = subparsers.add_parser(
        "worker", help="run a fleet worker for this checkout (needs Temporal and the shared database)",
        description="Take fleet runs from a capability queue (mac: the macOS executor, one build at a time; linux: "
                    "the emulated executor) and decisions for the runs this machine holds (queue host.NAME). "
                    "Needs METALPORT_TEMPORAL_ADDRESS and METALPORT_DATABASE_URL (or metalport.yaml's fleet:/database:).")
    parser.add_argument("--queue", required=True, choices=("mac", "linux"), help="the capability this machine offers")
    add_repo_option(parser)
    parser.add_argument("--host", default=None, help="this machine's fleet name (default: METALPORT_HOST, "
                                                       "fleet.host, or the host name)")
    parser.add_argument("--executor", default=None, choices=("emulated", "macos", "command"),
                        help="how this worker builds and tests (default: macos on mac, emulated on linux)")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="runs at once (default: 1 on mac, 2 on linux)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the worker until a signal stops it."""
    import asyncio

    from metalport.fleet.client import DEFAULT_EXECUTOR
    from metalport.fleet.worker import run_worker

    root = checkout_root(args)
    executor = args.executor or DEFAULT_EXECUTOR[args.queue]
    concurrency = args.concurrency or (1 if args.queue == "mac" else 2)
    print(f"metalport worker: queue {args.queue}, executor {executor}, {concurrency} at a time, checkout {root}",
          flush=True)
    asyncio.run(run_worker(root, args.queue, executor, concurrency=concurrency, host=args.host))
    return 0
