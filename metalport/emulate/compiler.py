"""Find the C++ compiler that builds Metal shaders for the CPU, and say why it was chosen."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from metalport.atomic import discard
from metalport.errors import EmulateError

_VERSION = re.compile(r"(clang|g\+\+|gcc)[^\n]*?(\d+)\.(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Compiler:
    """A C++ compiler command, its family ("clang" or "gcc"), major version and the reason chosen."""

    argv: tuple[str, ...]
    family: str
    major: int
    reason: str
    version: str = ""  # the full `--version` text (a cache key part), when probed

    @property
    def is_zig(self) -> bool:
        """True for zig's clang driver (`python -m ziglang c++` or a `zig` binary)."""
        return any("ziglang" in part or part.endswith("zig") for part in self.argv)

    def scratch_dirs(self) -> tuple[Path, ...]:
        """Directories the compiler itself writes (zig's global cache), made if missing; the
        shader sandbox binds them writable."""
        if not self.is_zig:
            return ()
        cache = os.environ.get("ZIG_GLOBAL_CACHE_DIR") or \
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zig"
        path = Path(cache)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise EmulateError(f"{path}: cannot create zig's cache directory: {err.strerror}",
                               hint="set $ZIG_GLOBAL_CACHE_DIR to a writable directory") from err
        return (path,)


def _fingerprint(argv: tuple[str, ...]) -> str | None:
    """Identity of the files behind `argv` (path, mtime, size), or None when they cannot be found."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None
    parts = [exe]
    paths = [Path(exe)]
    if "-m" in argv[:-1]:
        spec = importlib.util.find_spec(argv[argv.index("-m") + 1])
        if spec is None or spec.origin is None:
            return None
        paths.append(Path(spec.origin).parent)
    for path in paths:
        st = path.stat()
        parts.append(f"{path}:{st.st_mtime_ns}:{st.st_size}")
    return "|".join(parts)


def _version_output(argv: tuple[str, ...]) -> str | None:
    """`argv --version` output, remembered on disk per executable identity (python -m ziglang
    takes a noticeable part of a second to start, which a cached shader reload should not pay)."""
    key = _fingerprint(argv)
    memo_path = Path(os.environ.get("METALPORT_CACHE_DIR") or Path.home() / ".cache/metalport/shaders") / \
        "compilers.json"
    try:
        memo = json.loads(memo_path.read_text()) if key else {}
    except (OSError, ValueError):
        memo = {}
    if key and isinstance(memo.get(key), str):
        return memo[key]
    try:
        out = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    if key and _VERSION.search(out):
        tmp = memo_path.with_name(f".compilers.{os.getpid()}.tmp")
        try:
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({**memo, key: out}))
            os.replace(tmp, memo_path)
        except OSError:
            discard(tmp)  # the memo only saves time: a full or read-only cache goes without it
    return out


def _probe(argv: tuple[str, ...], reason: str) -> Compiler | None:
    """Run `argv --version` and parse the family and major version, or None if it does not run."""
    out = _version_output(argv)
    if out is None:
        return None
    match = _VERSION.search(out)
    if match is None:
        return None
    family = "clang" if match.group(1).lower() == "clang" else "gcc"
    return Compiler(argv=argv, family=family, major=int(match.group(2)), reason=reason, version=out)


def find_compiler() -> Compiler:
    """Return the first usable compiler: $METALPORT_CXX, clang++ >= 16, g++ >= 12, then ziglang."""
    env = os.environ.get("METALPORT_CXX")
    if env:
        found = _probe(tuple(shlex.split(env)), "$METALPORT_CXX is set")
        if found is None:
            raise EmulateError(f"$METALPORT_CXX={env!r} does not run or print a version",
                               hint="point it at clang++ >= 16 or g++ >= 12, or unset it")
        return found
    for name, family, minimum in (("clang++", "clang", 16), ("g++", "gcc", 12)):
        path = shutil.which(name)
        if path:
            found = _probe((path,), f"{name} on PATH")
            if found is not None and found.family == family and found.major >= minimum:
                return found
    zig_reason = "python -m ziglang (no clang++ >= 16 or g++ >= 12 on PATH)"
    found = _probe((sys.executable, "-m", "ziglang", "c++"), zig_reason)
    if found is not None:
        return found
    raise EmulateError("no C++ compiler found for Metal-on-CPU",
                       hint="install clang++ >= 16 or g++ >= 12, `pip install ziglang`, "
                            "or set $METALPORT_CXX")
