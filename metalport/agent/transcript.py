"""JSONL transcripts of a run's model requests, replies and tool calls, with secrets redacted."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from metalport.sandbox.secrets import DEFAULT_SECRET_ENV, secret_values

REDACTED = "[REDACTED]"
_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}"
                     r"|hf_[A-Za-z0-9]{16,})|(?i:bearer\s+)[A-Za-z0-9._\-]{8,}")
_SECRET_KEYS = re.compile(r"(?i)(api[_-]?key|token|secret|password|authorization)")


class Redactor:
    """Replaces secret values (given, from secret env variables, and key-shaped strings)."""

    def __init__(self, secret_env: Iterable[str] = (), values: Iterable[str] = (),
                 environ: Mapping[str, str] | None = None) -> None:
        self.secret_env = (*DEFAULT_SECRET_ENV, *secret_env)  # the names, for the edit guard too
        found = [v for _, v in secret_values(secret_env, environ)] + [v for v in values if v]
        self._values = sorted({v for v in found if len(v) >= 4}, key=len, reverse=True)

    def text(self, value: str) -> str:
        """`value` with every secret replaced by [REDACTED]."""
        for secret in self._values:
            value = value.replace(secret, REDACTED)
        return _SHAPES.sub(REDACTED, value)

    def any(self, value: Any) -> Any:
        """Redact strings inside nested dicts/lists; values under secret-named keys go entirely."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: (REDACTED if isinstance(v, str) and _SECRET_KEYS.search(str(k)) else self.any(v))
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.any(v) for v in value]
        return value


class Transcript:
    """Appends one JSON object per event to `path` (no file when `path` is None), mode 0600.

    A string longer than `max_string_chars` is kept as its head plus a note of its full length,
    so one oversized reply cannot blow the file up."""

    def __init__(self, path: Path | None, redactor: Redactor, max_string_chars: int = 16_000) -> None:
        self.path = path
        self.redactor = redactor
        self.max_string_chars = max_string_chars

    def write(self, kind: str, data: Any) -> None:
        """Record one event (`request`, `reply`, `tool_call`, `tool_result`, `error`)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = _truncate(self.redactor.any(data), self.max_string_chars)
        line = json.dumps({"t": round(time.time(), 3), "kind": kind, "data": data}, default=str)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def _truncate(value: Any, limit: int) -> Any:
    """`value` with every string over `limit` characters cut to its head and its original length."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}[... cut: {len(value)} chars in all]"
    if isinstance(value, Mapping):
        return {k: _truncate(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_truncate(v, limit) for v in value]
    return value


def read_transcript(path: Path) -> list[dict]:
    """The events of a transcript file, in order."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
