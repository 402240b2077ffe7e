"""`metalport doctor`: the checkout, which shader compiler and sandbox the emulated tier uses and why,
the LLM endpoint."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `doctor` command."""
    parser = subparsers.add_parser("doctor", help="check the compiler and the LLM endpoint",
                                   description="Say which checkout metalport works on, which compiler the "
                                               "Metal-on-CPU tier uses and why, and whether the LLM endpoint "
                                               "answers (no tokens spent).")
    parser.add_argument("--repo", type=Path, default=None,
                        help="PyTorch checkout to check (default: the enclosing one, if any)")
    parser.add_argument("--config", type=Path, default=None,
                        help="metalport.yaml to read (default: the checkout's, else ./metalport.yaml, when present)")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint, ending in /v1")
    parser.add_argument("--model", default=None, help="model expected on the endpoint")
    parser.add_argument("--no-endpoint", action="store_true", help="skip the endpoint check")
    parser.add_argument("--probe", action="store_true",
                        help="also send three tiny requests (at most 48 output tokens each) to find whether the "
                             "model returns tool calls, honours a json_schema, and keeps tools beside a schema")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print one section per check; exit 1 when the compiler or the sandbox is missing or the
    endpoint is down."""
    from metalport.config import CONFIG_NAME, given_config, load_config
    from metalport.emulate import find_compiler
    from metalport.errors import EmulateError
    from metalport.sandbox.confine import SandboxUnavailable, select_sandbox

    if args.base_url is not None:
        _check_base_url(args.base_url)
    given = given_config(args.config)
    healthy, root = _checkout(args.repo)
    try:
        compiler = find_compiler()
        print(f"compiler: {' '.join(compiler.argv)} ({compiler.family} {compiler.major}): {compiler.reason}")
    except EmulateError as err:
        healthy = False
        print(f"compiler: none: {err}")
    try:
        print(f"sandbox: {select_sandbox().describe()}")
    except SandboxUnavailable as err:
        healthy = False
        print(f"sandbox: none: {err}")
    if not args.no_endpoint:
        config_path = given or (root / CONFIG_NAME if root else Path(CONFIG_NAME))
        config = load_config(config_path).with_flags(base_url=args.base_url, model=args.model)
        healthy = _endpoint(config, args.probe) and healthy
    return 0 if healthy else 1


def _check_base_url(url: str) -> None:
    """UsageError unless `url` is an http(s) URL with a host."""
    from urllib.parse import urlsplit

    from metalport.errors import UsageError

    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        ok = False
    if not ok:
        raise UsageError(f"--base-url {url!r} is not an http(s) URL",
                         hint="write it as http://HOST:PORT/v1 (e.g. http://127.0.0.1:8080/v1)")


def _endpoint(config, probe: bool) -> bool:
    """Print the endpoint section; False when it is unhealthy. Without a key for a remote endpoint
    the check is skipped: the default model (`recipe`) needs none."""
    from metalport.agent.doctor import check_endpoint
    from metalport.agent.openai_provider import is_loopback

    cap = config.provider
    if not cap.api_key(None) and not is_loopback(cap.resolved_base_url(None)):
        print(f"endpoint: skipped (${cap.api_key_env} is not set; the default --model recipe needs no model; "
              f"export {cap.api_key_env} or set provider.base_url to a local server to check one)")
        return True
    report = check_endpoint(config)
    for line in report.lines():
        print(line)
    if probe and report.ok:
        if not cap.model:
            print("probe: skipped (name the model with --model)")
        else:
            from metalport.agent.openai_provider import make_client
            from metalport.agent.probe import probe_capabilities

            for line in probe_capabilities(make_client(config), config).lines():
                print(line)
    return report.ok


def _checkout(repo: Path | None) -> tuple[bool, Path | None]:
    """Print the checkout line; (healthy, root). No checkout is only unhealthy when --repo named one."""
    from metalport.checkout import find_checkout
    from metalport.errors import MetalportError
    from metalport.registry import load_registry

    try:
        checkout = find_checkout(repo)
        registry = load_registry(checkout.native_functions)
    except MetalportError as err:
        if repo is None:
            print(f"checkout: none here ({err.message}); pass --repo")
            return True, None
        print(f"checkout: unusable: {err}")
        return False, None
    kind = "wheel workspace" if checkout.is_wheel_workspace else "PyTorch checkout"
    print(f"checkout: {checkout.root} ({kind}; {checkout.rel(checkout.native_functions)}: "
          f"{len(registry.ops)} ops, {len(registry.entries)} entries)")
    return True, checkout.root
