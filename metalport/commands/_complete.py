"""Shell completion (argcomplete) for op names and run ids, read from the `--repo` checkout.

Enable it once per shell: `eval "$(register-python-argcomplete metalport)"` (and the same for
`run-migration`). Completers never raise: a shell completion with no checkout offers nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def _root(parsed_args: argparse.Namespace) -> Path | None:
    from metalport.checkout import find_checkout
    from metalport.errors import MetalportError

    try:
        return find_checkout(getattr(parsed_args, "repo", None)).root
    except MetalportError:
        return None


def complete_ops(prefix: str, parsed_args: argparse.Namespace, **_: object) -> list[str]:
    """ATen op names of the checkout's registry (`aten::` kept when the prefix has it)."""
    from metalport.errors import MetalportError
    from metalport.registry import load_registry

    root = _root(parsed_args)
    if root is None:
        return []
    try:
        names = sorted(load_registry(root / "aten/src/ATen/native/native_functions.yaml").ops)
    except MetalportError:
        return []
    lead = "aten::" if prefix.startswith("aten::") else ""
    bare = prefix.removeprefix("aten::")
    return [f"{lead}{name}" for name in names if name.startswith(bare)]


def complete_run_ids(prefix: str, parsed_args: argparse.Namespace, **_: object) -> list[str]:
    """The ids of the checkout's runs, newest last."""
    from metalport.run_record import metalport_dir

    root = _root(parsed_args)
    if root is None:
        return []
    runs = metalport_dir(root) / "runs"
    return sorted(p.parent.name for p in runs.glob(f"{prefix}*/run.json")) if runs.is_dir() else []


def with_completer(action: argparse.Action, completer: object) -> argparse.Action:
    """`action` with its argcomplete completer set; returns it for chaining."""
    action.completer = completer  # type: ignore[attr-defined]
    return action
