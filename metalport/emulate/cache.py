"""The compiled-shader cache: `$METALPORT_CACHE_DIR` or `~/.cache/metalport/shaders`.

Entry `<key>.json` (the manifest) names `<key>-<headers hash>.so` and lists every header the
preprocessor read with its SHA-256; `key` hashes the source bytes, all flags, the compiler's
`--version` text, the include directories and every shim file.  Files are written to a temporary
name and renamed, so a reader never sees half an entry.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from metalport.atomic import discard
from metalport.emulate.compiler import Compiler
from metalport.errors import FilesystemError, filesystem_error

FORMAT = 1


def default_cache_dir() -> Path:
    """`$METALPORT_CACHE_DIR`, else `~/.cache/metalport/shaders`."""
    env = os.environ.get("METALPORT_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "metalport" / "shaders"


@functools.lru_cache(maxsize=8)
def _version_text(argv: tuple[str, ...]) -> str:
    """The compiler's `--version` output (once per process)."""
    try:
        return subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def compiler_version(compiler: Compiler) -> str:
    """A string that changes when the compiler does."""
    return " ".join(compiler.argv) + "\n" + (compiler.version or _version_text(compiler.argv))


def _digest(data: bytes) -> str:
    """SHA-256 hex digest."""
    return hashlib.sha256(data).hexdigest()


def source_key(source: bytes, *, flags: Sequence[str], compiler_version: str,
               include_dirs: Sequence[Path], shim_dir: Path) -> str:
    """The manifest key for one build.

    Include directories count by number, not path: headers are recorded relative to them, so the
    same kernel file in another worktree (same header bytes) hits the same entry.
    """
    h = hashlib.sha256()
    h.update(f"metalport-shader-cache {FORMAT}\0".encode())
    for part in (*flags, compiler_version, f"{len(include_dirs)} include dirs"):
        h.update(part.encode() + b"\0")
    for path in [*sorted(shim_dir.iterdir()), *sorted(Path(__file__).parent.glob("*.py"))]:
        if path.is_file():
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(source)
    return h.hexdigest()[:40]


def _atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file and a rename (no temp file left on failure)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


def cache_fault(err: BaseException, cache_dir: Path) -> FilesystemError:
    """The one-line error for a shader cache that cannot be written (full, read-only, not ours)."""
    return filesystem_error(err, what="the shader cache", path=cache_dir,
                            elsewhere="set METALPORT_CACHE_DIR to a writable folder")


def prepare(cache_dir: Path) -> None:
    """Make the cache folder and prove it takes a write, before any compiler runs.

    Raises FilesystemError (disk full, read-only, permission denied) naming the folder.
    """
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=cache_dir)
        try:
            os.write(fd, b"\0")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as err:
        raise cache_fault(err, cache_dir) from None


def _relative(path: Path, roots: Sequence[Path]) -> str:
    """`path` as `<i>:rel/path` under the first root containing it, else absolute."""
    for i, root in enumerate(roots):
        try:
            return f"{i}:{path.resolve().relative_to(root.resolve())}"
        except ValueError:
            continue
    return str(path)


def _resolve(name: str, roots: Sequence[Path]) -> Path:
    """Inverse of `_relative` for the current roots."""
    index, sep, rel = name.partition(":")
    if sep and index.isdigit() and int(index) < len(roots):
        return roots[int(index)] / rel
    return Path(name)


def lookup_manifest(cache_dir: Path, key: str, roots: Sequence[Path]) -> dict[str, object] | None:
    """The manifest stored for `key`, if its format is current and every recorded header is unchanged.

    `roots` are the source's directory and the include directories, in the order used to build."""
    manifest_path = cache_dir / f"{key}.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return None
    headers: dict[str, str] = manifest.get("headers", {})
    for name, digest in headers.items():
        try:
            if _file_digest(_resolve(name, roots)) != digest:
                return None
        except OSError:
            return None
    return manifest


_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}


def _file_digest(path: Path) -> str:
    """SHA-256 of the file at `path`, read once per process while its inode, size, mtime and ctime
    stay the same: a host check of three `.mm` files looks up ~1800 shared system and tree
    headers each (5400 reads and hashes, ~0.1 s CPU, for ~1800 files)."""
    st = os.stat(path)
    stamp = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    digest = _DIGESTS.get(stamp)
    if digest is None:
        digest = _DIGESTS[stamp] = _digest(path.read_bytes())
    return digest


def lookup(cache_dir: Path, key: str, roots: Sequence[Path]) -> tuple[Path, dict[str, object]] | None:
    """The cached library and manifest for `key`, if every recorded header is unchanged."""
    manifest = lookup_manifest(cache_dir, key, roots)
    if manifest is None:
        return None
    so_path = cache_dir / str(manifest.get("library", ""))
    if not manifest.get("library") or not so_path.is_file():
        return None
    return so_path, manifest


def _recorded(headers: Sequence[Path], roots: Sequence[Path]) -> dict[str, str]:
    """Each readable header as `<root index>:relative path` -> SHA-256."""
    recorded = {}
    for header in headers:
        try:
            recorded[_relative(header, roots)] = _digest(header.read_bytes())
        except OSError:
            continue
    return recorded


def store_manifest(cache_dir: Path, key: str, manifest: dict[str, object], headers: Sequence[Path],
                   roots: Sequence[Path]) -> None:
    """Record a result without a library (a type-check) for `key`, with its headers' hashes.

    Raises FilesystemError when the cache cannot take it (nothing half-written is left)."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        full = {**manifest, "format": FORMAT, "headers": _recorded(headers, roots)}
        _atomic_write(cache_dir / f"{key}.json", json.dumps(full, indent=1).encode())
    except OSError as err:
        raise cache_fault(err, cache_dir) from None


def store(cache_dir: Path, key: str, so_file: Path, manifest: dict[str, object],
          headers: Sequence[Path], roots: Sequence[Path]) -> Path:
    """Move the built library into the cache and write its manifest; returns the library path.

    Raises FilesystemError when the cache cannot take it (nothing half-written is left)."""
    try:
        return _store(cache_dir, key, so_file, manifest, headers, roots)
    except OSError as err:
        raise cache_fault(err, cache_dir) from None


def _store(cache_dir: Path, key: str, so_file: Path, manifest: dict[str, object],
           headers: Sequence[Path], roots: Sequence[Path]) -> Path:
    cache_dir.mkdir(parents=True, exist_ok=True)
    recorded = _recorded(headers, roots)
    headers_hash = _digest(json.dumps(recorded, sort_keys=True).encode())[:16]
    library = f"{key}-{headers_hash}.so"
    _atomic_write(cache_dir / library, so_file.read_bytes())
    full = {**manifest, "format": FORMAT, "library": library, "headers": recorded}
    _atomic_write(cache_dir / f"{key}.json", json.dumps(full, indent=1).encode())
    manifest.update(full)
    return cache_dir / library
