"""Which environment variables hold secrets, and their values: for redaction and the edit guard."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

DEFAULT_SECRET_ENV = ("OPENAI_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "ANTHROPIC_API_KEY", "HF_TOKEN")


def secret_values(names: Iterable[str] = (), environ: Mapping[str, str] | None = None,
                  min_chars: int = 4) -> list[tuple[str, str]]:
    """`(name, value)` of every set variable among DEFAULT_SECRET_ENV and `names`, longest value
    first; values shorter than `min_chars` are left out (they would match ordinary text)."""
    env = os.environ if environ is None else environ
    found = {(n, env[n]) for n in {*DEFAULT_SECRET_ENV, *names} if len(env.get(n) or "") >= min_chars}
    return sorted(found, key=lambda pair: (-len(pair[1]), pair[0]))
