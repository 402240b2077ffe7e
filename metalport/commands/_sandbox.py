"""The `--no-sandbox` flag of the commands that build and run shaders (see Note [the shader sandbox])."""

from __future__ import annotations

import argparse
import os

from metalport.sandbox.confine import NO_SANDBOX_ENV


def add_sandbox_flag(parser: argparse.ArgumentParser) -> None:
    """Add `--no-sandbox` to a command that compiles or runs shaders."""
    parser.add_argument("--no-sandbox", action="store_true",
                        help="build and run shaders (which the model may have written) as plain host "
                             "processes, outside the bubblewrap sandbox: only where no sandbox can be set "
                             "up, and only for code you trust")


def apply_sandbox_flag(args: argparse.Namespace) -> None:
    """Carry `--no-sandbox` to this process and the runs it starts (through the environment)."""
    if getattr(args, "no_sandbox", False):
        os.environ[NO_SANDBOX_ENV] = "1"
