"""`metalport doctor`: which shader compiler the emulated tier uses and why, and the LLM endpoint."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `doctor` command."""
    parser = subparsers.add_parser("doctor", help="check the compiler and the LLM endpoint",
                                   description="Say which compiler the Metal-on-CPU tier uses and why, "
                                               "and whether the LLM endpoint answers (no tokens spent).")
    parser.add_argument("--config", type=Path, default=Path("metalport.yaml"),
                        help="metalport.yaml to read (default: ./metalport.yaml when present)")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint, ending in /v1")
    parser.add_argument("--model", default=None, help="model expected on the endpoint")
    parser.add_argument("--no-endpoint", action="store_true", help="skip the endpoint check")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print one section per check; exit 1 when the compiler is missing or the endpoint is down."""
    from metalport.agent.doctor import check_endpoint
    from metalport.config import load_config
    from metalport.emulate import find_compiler
    from metalport.errors import EmulateError

    healthy = True
    try:
        compiler = find_compiler()
        print(f"compiler: {' '.join(compiler.argv)} ({compiler.family} {compiler.major}): {compiler.reason}")
    except EmulateError as err:
        healthy = False
        print(f"compiler: none: {err}")
    if not args.no_endpoint:
        config = load_config(args.config).with_flags(base_url=args.base_url, model=args.model)
        report = check_endpoint(config)
        healthy = healthy and report.ok
        for line in report.lines():
            print(line)
    return 0 if healthy else 1
