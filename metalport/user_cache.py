"""Where metalport keeps what it can rebuild: `$XDG_CACHE_HOME/metalport/<kind>`, else
`~/.cache/metalport/<kind>` (the compiled-shader cache has its own `$METALPORT_CACHE_DIR`)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir(kind: str) -> Path:
    """The folder for cached `kind` data (`registry`, `opinfo`); not created here."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "metalport" / kind
