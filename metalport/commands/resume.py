"""`metalport resume ID`: continue a run from its last checkpoint, or decide it at the gate."""

from __future__ import annotations

import argparse
import sys

from metalport.commands._complete import complete_run_ids, with_completer
from metalport.commands._repo import add_repo_option, checkout_root
from metalport.commands.run import add_follow_options


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `resume` command."""
    parser = subparsers.add_parser("resume", help="continue a run, or approve/reject/abort it at the gate",
                                   description="Continue a run that stopped (crash, kill) from its last "
                                               "checkpoint, or give a paused run its decision.")
    with_completer(parser.add_argument("run_id", metavar="ID", help="the run id (see `metalport runs`)"),
                   complete_run_ids)
    add_repo_option(parser)
    decision = parser.add_mutually_exclusive_group()
    decision.add_argument("--approve", action="store_true", help="approve: commit and publish")
    decision.add_argument("--reject", metavar="FEEDBACK", default=None, help="send back to edit with feedback")
    decision.add_argument("--abort", action="store_true", help="drop the run: worktree and branch removed")
    add_follow_options(parser, no_input_help="never prompt at the gate")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Resume the run; exit codes as for `metalport run`."""
    from metalport.errors import UsageError
    from metalport.fleet.decide import send_decision
    from metalport.graph import Abort, Approve, Reject, get_run, resume_run
    from metalport.graph.console import Interruptible, conclude, is_interactive, make_progress

    root = checkout_root(args)
    if args.reject is not None and not args.reject.strip():
        raise UsageError("--reject needs feedback text", hint='e.g. --reject "register bfloat too"')
    decision = Approve() if args.approve else Abort() if args.abort else (
        Reject(args.reject.strip()) if args.reject is not None else None)
    progress = make_progress()
    record = None
    with Interruptible(root, args.run_id) as guard:
        try:
            if decision is not None:  # a run the fleet drives takes its decision through its workflow
                record = send_decision(root, get_run(root, args.run_id), decision)
            record = record or resume_run(root, args.run_id, decision, progress=progress)
            return conclude(record, root, progress, interactive=is_interactive(args.no_input, args.json),
                            as_json=args.json, resume=lambda run_id, d: resume_run(root, run_id, d, progress=progress))
        except KeyboardInterrupt:
            print(guard.interrupted_line(), file=sys.stderr)
            return 130
