"""`metalport workspace init DIR`: a PyTorch-shaped git repository from the installed torch wheel."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `workspace init`."""
    parser = subparsers.add_parser("workspace", help="create a workspace from the installed torch wheel",
                                   description="Make a trial checkout in PyTorch's layout from the installed "
                                               "torch wheel's data (the wheel has no .mm/.metal sources).")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    init = actions.add_parser("init", help="create a git repository in PyTorch's layout at DIR",
                              description="Create a git repository in PyTorch's layout at DIR (new or "
                                          "empty) from the installed torch wheel's data.")
    init.add_argument("dir", type=Path, metavar="DIR", help="where to create it (must not exist, or be empty)")
    init.add_argument("--overlay", type=Path, metavar="PATH", default=None,
                      help="a folder in PyTorch's layout (e.g. real upstream .mm/.metal files) laid over the "
                           "workspace in a second commit")
    init.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Create the workspace and say what it is for."""
    from metalport.checkout import NOTICE, init_workspace

    checkout = init_workspace(args.dir, overlay=args.overlay)
    layered = f"; the files of {args.overlay} laid over it in a second commit" if args.overlay else " (one commit)"
    print(f"created a metalport workspace at {checkout.root}{layered}")
    print(NOTICE)
    print(f"next: metalport backlog --repo {checkout.root}")
    return 0
