"""Fixtures shared by the hostile-shader tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A shader cache of the test's own (also for compiler probes run in subprocesses)."""
    path = tmp_path / "shader-cache"
    monkeypatch.setenv("METALPORT_CACHE_DIR", str(path))
    return path
