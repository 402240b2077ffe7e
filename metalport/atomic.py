"""`write_text_atomic`: the one way metalport writes a file, so nothing is ever left half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: Path, text: str, *, newline: str | None = None) -> bool:
    """Write `text` to `path` through a temp file in the same folder and a rename.

    Returns False, writing nothing, when the file already holds `text`. Parent folders are made;
    `newline` is passed to `open` ("" keeps the text's line endings as they are).
    """
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException as err:
        if tmp is not None:
            discard(Path(tmp))
        if isinstance(err, OSError):
            err.filename = str(path)  # the file being written, not its temp name (a failed write() names none)
        raise
    return True


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same folder and a rename (parents made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException as err:
        discard(Path(tmp))
        if isinstance(err, OSError):
            err.filename = str(path)
        raise


def discard(path: Path) -> None:
    """Remove a temp file if it is there; a folder that cannot be written has none to remove."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass  # EROFS/EACCES: nothing of ours was created there
