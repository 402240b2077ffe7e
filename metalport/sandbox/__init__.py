"""The sandbox of a run: its git worktree, the path guard on writes and the command runner."""

from __future__ import annotations

from metalport.sandbox.guard import PathGuard
from metalport.sandbox.runner import CommandResult, run_command
from metalport.sandbox.worktree import METALPORT_IDENTITY, Worktree, create_worktree, remove_worktree

__all__ = ["METALPORT_IDENTITY", "CommandResult", "PathGuard", "Worktree", "create_worktree",
           "remove_worktree", "run_command"]
