"""`metalport sweep`: port the backlog's candidates up to the review gate, K at a time."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from metalport.commands._repo import add_repo_option, checkout_root
from metalport.commands._sandbox import add_sandbox_flag
from metalport.commands.backlog import _choice_list


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `sweep` command."""
    from metalport.backlog.model import Family, Status
    from metalport.port import Kind, Porter

    parser = subparsers.add_parser(
        "sweep", help="start port runs for backlog candidates and leave them at the review gate",
        description="Take candidates from the backlog in ease order, skip (with a reason) every op someone is "
                    "already on, run up to K migrations at once to the approval gate, and write a dashboard. "
                    "Exit 0 when the sweep ran (each op's outcome is in the dashboard), 2 on bad input, "
                    "3 when another sweep holds the repository's lock.")
    add_repo_option(parser)
    parser.add_argument("--status", type=_choice_list([s.value for s in Status]), action="extend",
                        help="backlog statuses to take (default: missing,mps-graph,mps-graph-stub)")
    parser.add_argument("--family", type=_choice_list([f.value for f in Family]), action="extend",
                        help="only ops of these families (comma-separated)")
    parser.add_argument("--kind", type=_choice_list([k.value for k in Kind if k is not Kind.NOT_A_CANDIDATE]),
                        action="extend", help="only ops whose port is of these kinds (comma-separated)")
    parser.add_argument("--porter", type=_choice_list([p.value for p in Porter if p is not Porter.NONE]),
                        action="extend", help="only ops these can port: recipe, translate or llm (comma-separated)")
    parser.add_argument("--limit", type=_positive, default=None, help="start at most N runs")
    parser.add_argument("--port-families", action="store_true",
                        help="one run per op family (`run --family`): ops sharing a legacy macro or helper "
                             "are ported in one change")
    parser.add_argument("--concurrency", "-K", type=_positive, default=None,
                        help="runs at once (default: 1 with the macOS executor, else 2)")
    parser.add_argument("--max-open", type=_positive, default=5,
                        help="never leave more than M runs awaiting review (default 5)")
    parser.add_argument("--model", default="recipe", help="recipe (default) or openai:MODEL")
    parser.add_argument("--executor", default="auto", choices=["auto", "emulated", "macos", "command"],
                        help="where each run builds and tests (default auto: macos when MPS is available, "
                             "else emulated)")
    parser.add_argument("--retry-rejected", action="store_true", help="start ops a reviewer rejected before")
    parser.add_argument("--retry-failed", action="store_true",
                        help="start ops whose last run failed or ran out of budget")
    parser.add_argument("--no-resume", action="store_true",
                        help="leave runs a killed sweep interrupted alone (default: continue them first)")
    parser.add_argument("--dashboard", type=Path, default=None,
                        help="Markdown dashboard path; the JSON goes beside it (default: the git dir's metalport/)")
    parser.add_argument("--json", action="store_true", help="print the sweep report as JSON on stdout")
    parser.add_argument("--fleet", action="store_true",
                        help="start one Temporal workflow per candidate on the fleet instead of local runs "
                             "(needs METALPORT_TEMPORAL_ADDRESS and METALPORT_DATABASE_URL); returns once started")
    parser.add_argument("--queue", choices=("mac", "linux"), default="linux",
                        help="with --fleet: the capability queue the runs go to (default linux)")
    add_sandbox_flag(parser)
    budget = parser.add_argument_group("sweep budget (0 = unlimited; summed over the runs it starts)")
    budget.add_argument("--budget-calls", type=int, default=0, help="model calls")
    budget.add_argument("--budget-input-tokens", type=int, default=0, help="input tokens")
    budget.add_argument("--budget-output-tokens", type=int, default=0, help="output tokens")
    budget.add_argument("--budget-usd", type=float, default=0.0, help="cost in USD (models with a price)")
    budget.add_argument("--budget-wall-s", type=float, default=0.0, help="seconds since the sweep started")
    run = parser.add_argument_group("each run")
    run.add_argument("--max-attempts", type=_positive, default=None, help="build/test attempts per run")
    run.add_argument("--config", type=Path, default=None, help="metalport.yaml (per-run budget, provider)")
    gh = parser.add_argument_group("open-PR check (when a GitHub repository is named; token from GITHUB_TOKEN)")
    gh.add_argument("--github-repo", default=None, help="OWNER/NAME whose open PRs to search, e.g. pytorch/pytorch")
    gh.add_argument("--github-api", default="https://api.github.com", help="GitHub REST API address")
    parser.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Run the sweep, show progress on stderr, print the summary (or JSON)."""
    from rich.console import Console

    from metalport.budget_limits import BudgetLimits
    from metalport.config import CONFIG_NAME, given_config, load_config
    from metalport.executors import select_executor
    from metalport.graph.provider import check_model
    from metalport.publish.github import GitHubClient
    from metalport.sweep import SweepOptions, SweepView, default_concurrency, run_sweep

    check_model(args.model)
    root = checkout_root(args)
    given = given_config(args.config)
    if args.fleet:
        return _fleet(root, args)
    config_path = given or (root / CONFIG_NAME)
    config = load_config(config_path if config_path.exists() else None)
    select_executor(args.executor, config)  # no compiler or sandbox: refuse before any run starts
    flags: list[str] = []
    if args.max_attempts:
        flags += ["--max-attempts", str(args.max_attempts)]
    if config_path.exists():
        flags += ["--config", str(config_path)]
    github = None
    if args.github_repo:
        github = GitHubClient.from_env(args.github_api, args.github_repo, os.environ)
    options = SweepOptions(
        repo_root=root, statuses=tuple(args.status or SweepOptions.statuses), families=tuple(args.family or ()),
        kinds=tuple(args.kind or ()), porters=tuple(args.porter or ()), limit=args.limit, concurrency=args.concurrency or default_concurrency(args.executor),
        max_open=args.max_open, model=args.model, executor=args.executor, retry_rejected=args.retry_rejected,
        retry_failed=args.retry_failed, resume_interrupted=not args.no_resume,
        dashboard=args.dashboard.resolve() if args.dashboard else None,
        budget=BudgetLimits(max_calls=args.budget_calls, max_input_tokens=args.budget_input_tokens,
                            max_output_tokens=args.budget_output_tokens, max_cost_usd=args.budget_usd,
                            max_wall_s=args.budget_wall_s),
        run_limits=config.budget, run_flags=tuple(flags), github=github,
        port_families=getattr(args, "port_families", False))
    err = Console(stderr=True)
    with SweepView(err) as view:
        report = run_sweep(options, progress=view)
    return _print_report(report, as_json=args.json)


def _fleet(root: Path, args: argparse.Namespace) -> int:
    """`sweep --fleet`: start workflows for the candidates (`metalport.fleet.sweep`) and print the report."""
    import asyncio

    from metalport.fleet.sweep import FleetSweepOptions, fleet_sweep

    options = FleetSweepOptions(
        queue=args.queue, statuses=tuple(args.status or ("missing", "mps-graph")), families=tuple(args.family or ()),
        limit=args.limit, max_open=args.max_open, model=args.model, max_attempts=args.max_attempts or 3,
        retry_rejected=args.retry_rejected, retry_failed=args.retry_failed,
        dashboard=str(args.dashboard.resolve()) if args.dashboard else None)
    return _print_report(asyncio.run(fleet_sweep(root, options)), as_json=args.json)


def _print_report(report: object, *, as_json: bool) -> int:
    """Print the sweep's report as JSON, or its summary."""
    from rich.console import Console

    from metalport.sweep import print_summary

    if as_json:
        json.dump(report.to_dict(), sys.stdout, indent=2, sort_keys=True)  # type: ignore[attr-defined]
        print()
    else:
        print_summary(Console(), report)
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value
