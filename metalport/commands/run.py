"""`metalport run aten::OP` (also the `run-migration` script): port one op up to the approval gate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from metalport.commands._complete import complete_ops, with_completer
from metalport.commands._repo import add_repo_option, checkout_root
from metalport.commands._sandbox import add_sandbox_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `run` / `run-migration`."""
    with_completer(parser.add_argument("op", help="the ATen op to port, e.g. aten::heaviside"), complete_ops)
    parser.add_argument("more_ops", nargs="*", metavar="OP",
                        help="further ops ported in the same change (one plan, branch and PR), e.g. "
                             "aten::logical_and aten::logical_or aten::logical_xor")
    parser.add_argument("--family", action="store_true",
                        help="also port every op sharing the op's legacy MPS macro or helper, in one change")
    parser.add_argument("--issue", type=int, default=None, metavar="N",
                        help="the PyTorch issue the PR fixes (adds `Fixes #N`; default: metalport.yaml's pr.issue)")
    add_repo_option(parser)
    parser.add_argument("--model", default="recipe", help="recipe (default) or openai:MODEL")
    parser.add_argument("--executor", choices=("auto", "emulated", "macos", "command"), default="auto",
                        help="where to build and test (default: macos when MPS is available, else emulated)")
    parser.add_argument("--max-attempts", type=int, default=3, help="edit attempts, the first included (default 3)")
    parser.add_argument("--base", default="HEAD", help="commit the worktree starts from (default HEAD)")
    parser.add_argument("--wall-time", type=float, default=1800.0, dest="wall_time_s",
                        help="wall-time budget in seconds, time at the gate excluded: once spent, the run ends "
                             "budget-exhausted at the next node (default 1800)")
    parser.add_argument("--remote", default=None, help="git remote of your fork to push to after approval")
    parser.add_argument("--config", type=Path, default=None, help="metalport.yaml (default: <repo>/metalport.yaml)")
    parser.add_argument("--run-id", default=None, help="the run's id (default: <op>-<time>-<random>)")
    parser.add_argument("--force", action="store_true", help="port an op that is already native")
    add_follow_options(parser, no_input_help="never prompt: pause at the gate and exit 0")
    parser.set_defaults(func=run)


def add_follow_options(parser: argparse.ArgumentParser, *, no_input_help: str) -> None:
    """The options of a command that drives a run to the gate: `--no-input`, `--json`, `--no-sandbox`."""
    parser.add_argument("--no-input", action="store_true", help=no_input_help)
    parser.add_argument("--json", action="store_true", help="print the run record as one JSON object on stdout")
    add_sandbox_flag(parser)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `run` command."""
    parser = subparsers.add_parser("run", help="port one op to a native Metal kernel, up to the approval gate",
                                   description="Resolve, plan, edit in a worktree, build, test, then stop at a "
                                               "human approval gate; only an approval commits and publishes.")
    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Start the run, follow it, handle the gate; exit 0 at the gate or published, 1 when it ended badly."""
    from metalport.config import CONFIG_NAME, given_config, load_config
    from metalport.errors import UsageError
    from metalport.graph import RunOptions, resume_run, start_run
    from metalport.graph.console import Interruptible, conclude, is_interactive, make_progress
    from metalport.run_ids import new_run_id

    if args.max_attempts < 1:
        raise UsageError(f"--max-attempts must be at least 1, not {args.max_attempts}")
    if args.issue is not None and args.issue < 1:
        raise UsageError(f"--issue must be a positive issue number, not {args.issue}")
    if args.wall_time_s <= 0:
        raise UsageError(f"--wall-time must be positive, not {args.wall_time_s:g}")
    config = given_config(args.config)
    root = checkout_root(args)
    load_config(config or root / CONFIG_NAME)  # a bad metalport.yaml is an error before any run record
    interactive = is_interactive(args.no_input, args.json)
    issue = args.issue if args.issue is not None else _config_issue(config or root / CONFIG_NAME)
    options = RunOptions(model=args.model, executor=args.executor, max_attempts=args.max_attempts, base=args.base,
                         wall_time_s=args.wall_time_s, force=args.force, remote=args.remote,
                         config_path=str(config.resolve()) if config else None, no_input=not interactive,
                         family_ops=list(args.more_ops) or None, expand_family=args.family, issue=issue)
    progress = make_progress()
    run_id = args.run_id or new_run_id(args.op.strip().removeprefix("aten::"))
    with Interruptible(root, run_id) as guard:
        try:
            record = start_run(root, args.op, options, run_id=run_id, progress=progress)
            return conclude(record, root, progress, interactive=interactive, as_json=args.json,
                            resume=lambda run_id, decision: resume_run(root, run_id, decision, progress=progress))
        except KeyboardInterrupt:
            print(guard.interrupted_line(), file=sys.stderr)
            return 130


def _config_issue(path: Path) -> int | None:
    """metalport.yaml's `pr: {issue: N}`, if set (a positive integer), else None."""
    from metalport.config import load_config
    from metalport.errors import UsageError

    raw = load_config(path).other.get("pr") or {}
    issue = raw.get("issue") if isinstance(raw, dict) else None
    if issue is None:
        return None
    if not isinstance(issue, int) or isinstance(issue, bool) or issue < 1:
        raise UsageError(f"{path}: pr.issue must be a positive issue number, not {issue!r}")
    return issue
