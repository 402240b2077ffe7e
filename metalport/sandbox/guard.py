"""`PathGuard`: every write of a run resolves inside its worktree and onto the plan's allow-list,
and holds no secret."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path

from metalport.atomic import write_text_atomic
from metalport.errors import SandboxError
from metalport.sandbox.secrets import secret_values

_MIN_SECRET_CHARS = 8  # shorter values would refuse ordinary code


class PathGuard:
    """Resolve and check paths against a worktree `root` and a set of allowed relative paths, and
    refuse text holding the value of a secret variable (the defaults plus `secret_env`)."""

    def __init__(self, root: Path | str, allowed: set[str], *, secret_env: Iterable[str] = ()) -> None:
        self.root = Path(root).resolve()
        self.allowed = frozenset(Path(p).as_posix() for p in allowed)
        self._secrets = secret_values(secret_env, min_chars=_MIN_SECRET_CHARS)

    def resolve(self, path: Path | str) -> Path:
        """Return the absolute path of `path` (relative to the root) once it passes every check.

        Raises SandboxError (one line, with the nearest allowed path) for a path outside the root,
        a `..` escape, a symlink leading out, or a path not on the allow-list.
        """
        raw = Path(path)
        candidate = raw if raw.is_absolute() else self.root / raw
        lexical = Path(os.path.normpath(candidate))
        if not lexical.is_relative_to(self.root):
            reason = "escapes the worktree through '..'" if ".." in raw.parts else "is outside the worktree"
            raise SandboxError(f"path {str(path)!r} {reason} {self.root}", hint=self._nearest(raw))
        resolved = candidate.resolve()
        if not resolved.is_relative_to(self.root):
            raise SandboxError(f"path {str(path)!r} is a symlink (or under one) leading out of the "
                               f"worktree to {resolved}", hint=self._nearest(raw))
        relative = resolved.relative_to(self.root).as_posix()
        if relative not in self.allowed:
            raise SandboxError(f"path {relative!r} is not on the plan's allow-list",
                               hint=self._nearest(Path(relative)))
        return resolved

    def check_text(self, path: Path | str, text: str) -> None:
        """Raise SandboxError (naming the variable, never its value) when `text` holds a secret."""
        for name, value in self._secrets:
            if value in text:
                raise SandboxError(f"the edit to {Path(path).as_posix()!r} holds the value of ${name}; "
                                   "a secret never goes into code",
                                   hint="write the code without it; nothing was written")

    def write_text(self, path: Path | str, text: str) -> bool:
        """Write `text` to a guarded path through a temp file and rename; return whether it changed.

        Raises SandboxError for a refused path or a text holding a secret (nothing written)."""
        target = self.resolve(path)
        self.check_text(path, text)
        return write_text_atomic(target, text, newline="")

    def _nearest(self, path: Path) -> str:
        if not self.allowed:
            return "the allow-list is empty"
        # File names carry the intent ("BinaryOps.mm"); the folders of a refused path do not.
        by_name = {Path(name).name: name for name in sorted(self.allowed, reverse=True)}
        match = difflib.get_close_matches(path.name, sorted(by_name), n=1, cutoff=0.0)
        return f"did you mean {by_name[match[0]] if match else sorted(self.allowed)[0]!r}?"
