"""JSONL transcripts of a run's model requests, replies and tool calls, with secrets redacted."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REDACTED = "[REDACTED]"
DEFAULT_SECRET_ENV = ("OPENAI_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "ANTHROPIC_API_KEY", "HF_TOKEN")
_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}"
                     r"|hf_[A-Za-z0-9]{16,})|(?i:bearer\s+)[A-Za-z0-9._\-]{8,}")
_SECRET_KEYS = re.compile(r"(?i)(api[_-]?key|token|secret|password|authorization)")


class Redactor:
    """Replaces secret values (given, from secret env variables, and key-shaped strings)."""

    def __init__(self, secret_env: Iterable[str] = (), values: Iterable[str] = (),
                 environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        names = {*DEFAULT_SECRET_ENV, *secret_env}
        found = [env[n] for n in names if env.get(n)] + [v for v in values if v]
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
    """Appends one JSON object per event to `path` (no file when `path` is None)."""

    def __init__(self, path: Path | None, redactor: Redactor) -> None:
        self.path = path
        self.redactor = redactor

    def write(self, kind: str, data: Any) -> None:
        """Record one event (`request`, `reply`, `tool_call`, `tool_result`, `error`)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"t": round(time.time(), 3), "kind": kind, "data": self.redactor.any(data)},
                          default=str)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def read_transcript(path: Path) -> list[dict]:
    """The events of a transcript file, in order."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
