"""Find the C++ compiler that builds Metal shaders for the CPU, and say why it was chosen."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

from metalport.errors import EmulateError

_VERSION = re.compile(r"(clang|g\+\+|gcc)[^\n]*?(\d+)\.(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Compiler:
    """A C++ compiler command, its family ("clang" or "gcc"), major version and the reason chosen."""

    argv: tuple[str, ...]
    family: str
    major: int
    reason: str


def _probe(argv: tuple[str, ...], reason: str) -> Compiler | None:
    """Run `argv --version` and parse the family and major version, or None if it does not run."""
    try:
        out = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION.search(out)
    if match is None:
        return None
    family = "clang" if match.group(1).lower() == "clang" else "gcc"
    return Compiler(argv=argv, family=family, major=int(match.group(2)), reason=reason)


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
