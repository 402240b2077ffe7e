"""The registry index: a parsed native_functions.yaml kept per file content, so one text is parsed once.

Note [registry index]: parsing the 2.13 registry takes ~0.5 s and one run reads it in resolve,
plan, edit and check, each time from a fresh process or worktree. The records of a parse are
pickled to `<user cache>/registry/<key>.pickle`, where `key` hashes the text and the parser's own
source (`model.py`), so an edited registry (new text) or a changed parser is parsed again; an old
entry is never read for a different text. The file name each `Span` carries is left out of the
pickle (a persistent id), so the same text in another checkout or worktree hits the same entry.
Entries are written through a temp file and a rename; an unreadable entry is parsed again and
rewritten. Parse errors are never cached: a bad file raises the same `file:line` error every time.
Each entry is ~1 MB for the real registry, so the index keeps the `KEEP` most recently written.
"""

from __future__ import annotations

import gc
import hashlib
import io
import pickle
from pathlib import Path

from metalport.atomic import write_bytes_atomic
from metalport.errors import RegistryError, read_source
from metalport.registry import model
from metalport.registry.model import Registry, parse_registry
from metalport.user_cache import user_cache_dir

_FILE_ID = "span-file"
KEEP = 32  # index entries kept (a sweep writes one per edited registry text)


def index_dir() -> Path:
    """The folder of the registry index (in the user cache)."""
    return user_cache_dir("registry")


def index_key(text: str) -> str:
    """The index key of a registry `text`: its SHA-256 together with the parser's source."""
    h = hashlib.sha256(b"metalport-registry-index\0")
    h.update(Path(model.__file__).read_bytes())
    h.update(b"\0")
    h.update(text.encode("utf-8"))
    return h.hexdigest()


def registry_from_text(text: str, path: Path | str, *, cache_dir: Path | None = None) -> Registry:
    """`parse_registry(text, path)`, read from the index when this text was parsed before."""
    entry = (cache_dir or index_dir()) / f"{index_key(text)}.pickle"
    file = str(path)
    try:
        data = entry.read_bytes()
    except OSError:
        data = b""  # not indexed yet: parse and write it below
    if data:
        gc_was_on = gc.isenabled()
        gc.disable()  # the load allocates ~100k objects and no cycles; collections would only slow it
        try:
            entries, ops = _Unpickler(data, file).load()
            return Registry(Path(path), text, entries, ops)
        except (EOFError, pickle.UnpicklingError):
            pass  # a damaged entry: parse and rewrite it below
        finally:
            if gc_was_on:
                gc.enable()
    registry = parse_registry(text, path)
    try:
        write_bytes_atomic(entry, _dumps((registry.entries, registry.ops), file))
        _trim(entry.parent)
    except OSError:
        pass  # a read-only cache only costs the next parse
    return registry


def _trim(folder: Path) -> None:
    """Remove all but the `KEEP` newest index entries (by modification time)."""
    entries = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)


def load_registry(path: Path | str, *, cache_dir: Path | None = None) -> Registry:
    """Read the native_functions.yaml at `path` and return its records (through the index)."""
    p = Path(path)
    try:
        text = read_source(p)  # Note [source bytes]
    except OSError as err:
        raise RegistryError(f"cannot read the registry: {err.strerror}", location=str(p),
                            hint="pass --repo at a PyTorch checkout") from None
    return registry_from_text(text, p, cache_dir=cache_dir)


def _dumps(value: object, file: str) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.persistent_id = lambda obj: _FILE_ID if obj.__class__ is str and obj == file else None
    pickler.dump(value)
    return buffer.getvalue()


class _Unpickler(pickle.Unpickler):
    """Loads an index entry, putting this checkout's file name back into every span."""

    def __init__(self, data: bytes, file: str) -> None:
        super().__init__(io.BytesIO(data))
        self._file = file

    def persistent_load(self, pid: object) -> str:
        """The file name for the span-file id; anything else is a damaged entry."""
        if pid != _FILE_ID:
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return self._file
