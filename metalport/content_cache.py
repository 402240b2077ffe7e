"""`ContentCache`: what is computed from a file's text alone, kept per text (by git blob id).

Note [content cache]: one run reads the same big files in several stages (the OpInfo modules in
plan, edit and check; each in a fresh worktree), and every run reads the same base tree again.
A value that depends only on a text (a parse, an index of it) is kept twice: in this process, so
every stage after the first gets it for free, and pickled in `<user cache>/<kind>/<key>.pickle`,
so the next run does too. The key is the text's git blob id (what `git hash-object` prints, the
same in every checkout and worktree) joined with a hash of the computing code's sources, so an
edited text or a changed parser is computed anew and an old entry is never read for another text.
Entries are written through a temp file and a rename; an unreadable one is computed again and
rewritten; a read-only cache only costs the next computation. Errors are never cached: a bad text
raises the same error every time. Each folder keeps its `keep` most recently written entries.
A value that also depends on other files (a preprocessed source on the headers it included) is
kept with what it read and checked by the caller's `valid` before use; a stale one is computed
again and replaces the entry.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

from metalport.atomic import write_bytes_atomic
from metalport.user_cache import user_cache_dir

T = TypeVar("T")


def blob_id(data: bytes) -> str:
    """The git blob id of `data` (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class ContentCache(Generic[T]):
    """`compute(text)` kept per text: in memory (the last `memory` texts) and in the user cache."""

    def __init__(self, kind: str, sources: Iterable[str | Path], *, keep: int = 64, memory: int = 16) -> None:
        self.kind, self._sources, self.keep, self._memory_size = kind, tuple(sources), keep, memory
        self._version: str | None = None
        self._memory: dict[str, T] = {}

    @property
    def version(self) -> str:
        """A hash of the computing code's sources (read once per process)."""
        if self._version is None:
            h = hashlib.sha256(self.kind.encode() + b"\0")
            for source in self._sources:
                h.update(Path(source).read_bytes())
                h.update(b"\0")
            self._version = h.hexdigest()[:16]
        return self._version

    def folder(self) -> Path:
        """Where the entries are pickled (follows $XDG_CACHE_HOME at each call)."""
        return user_cache_dir(self.kind)

    def get(self, text: str, compute: Callable[[str], T], valid: Callable[[T], bool] | None = None) -> T:
        """`compute(text)`, from memory or the user cache when this text was computed before and
        `valid(value)` (when given) holds for the kept value."""
        key = f"{blob_id(text.encode('utf-8'))}-{self.version}"
        if key in self._memory and (valid is None or valid(self._memory[key])):
            return self._memory[key]
        entry = self.folder() / f"{key}.pickle"
        try:
            value = pickle.loads(entry.read_bytes())
            if valid is not None and not valid(value):
                raise ValueError("stale")
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            value = compute(text)
            try:
                write_bytes_atomic(entry, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
                self._trim(entry.parent)
            except OSError:
                pass  # a read-only cache only costs the next computation
        self._memory[key] = value
        while len(self._memory) > self._memory_size:
            self._memory.pop(next(iter(self._memory)))
        return value

    def forget(self) -> None:
        """Drop the in-memory entries (the user cache stays)."""
        self._memory.clear()

    def _trim(self, folder: Path) -> None:
        entries = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[self.keep:]:
            old.unlink(missing_ok=True)
