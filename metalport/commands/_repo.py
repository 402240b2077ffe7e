"""The `--repo` option of the commands that work on one PyTorch checkout, and the root it names."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_repo_option(parser: argparse.ArgumentParser) -> None:
    """Add `--repo PATH` (default: the checkout enclosing the working directory)."""
    parser.add_argument("--repo", type=Path, default=None, help="PyTorch checkout (default: the enclosing one)")


def checkout_root(args: argparse.Namespace) -> Path:
    """The root of the checkout `--repo` names (or encloses the working directory); raises RepoError."""
    from metalport.checkout import find_checkout

    return find_checkout(args.repo).root
