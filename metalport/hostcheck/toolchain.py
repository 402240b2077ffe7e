"""The Objective-C++ front end of the host check: zig's clang, PyTorch's MPS build flags.

zig's `c++` driver adds its libc++ include paths and configuration macros, but insists on
producing an object file (with `-fsyntax-only` it fails renaming one that was never written).
So its additions are read once from `zig c++ -###` and handed to zig's plain `clang` driver,
which type-checks without writing anything.  The target is arm64 macOS, whose libc headers zig
ships, so integer types, `__APPLE__` and libc calls are the Mac's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from metalport.atomic import write_text_atomic
from metalport.errors import EmulateError

SHIM_DIR = Path(__file__).parent / "shim"
TARGET = "aarch64-macos"
TARGET_TRIPLE = "arm64-apple-macos14"

# What PyTorch's CMake gives every MPS `.mm` (aten/src/ATen/CMakeLists.txt, cmake/Dependencies):
# Objective-C++ in C++20, manual reference counting, blocks, per-operator headers, USE_MPS.
# A message to a selector no declaration names is an error, as is a method missing on a class.
MPS_FLAGS = ("-x", "objective-c++", "-std=c++20", "-fblocks",
             "-fno-objc-arc", "-fobjc-exceptions", "-DUSE_MPS", "-DAT_PER_OPERATOR_HEADERS",
             "-Werror=objc-method-access", "-Werror=incomplete-implementation",
             "-Werror=return-type", "-Werror=implicit-function-declaration",
             "-Wno-c++20-extensions", "-Wno-unused-command-line-argument", "-Wno-nullability-completeness",
             "-Wno-deprecated-declarations", "-Wno-unknown-warning-option", "-Wno-unqualified-std-cast-call",
             "-ferror-limit=50", "-fno-color-diagnostics", "-fno-caret-diagnostics")


@dataclass(frozen=True)
class FrontEnd:
    """The argv prefix that type-checks one Objective-C++ file, and its identity for cache keys."""

    argv: tuple[str, ...]
    system: tuple[str, ...]  # -nostdinc and zig's libc++/Darwin libc include dirs and macros, last
    identity: str  # compiler version text plus the adopted flags
    reason: str
    scratch: tuple[Path, ...] = ()  # directories the compiler writes (zig's global cache)


def _zig_cache_dir() -> Path:
    from metalport.emulate.compiler import Compiler

    probe = Compiler(argv=(sys.executable, "-m", "ziglang", "c++"), family="clang", major=0, reason="")
    return probe.scratch_dirs()[0]


def _adopted_flags(argv: tuple[str, ...]) -> list[str]:
    """The include directories and macros zig's `c++` driver adds, read from its `-###` plan."""
    # `-c -fno-sanitize=all`: without them zig first builds its compiler-rt and UBSan runtimes
    # for the target (minutes in a fresh cache) although nothing will be linked.
    probe = subprocess.run([*argv, "-x", "objective-c++", "-fsyntax-only", "-std=c++20", "-c", "-fno-sanitize=all",
                            "-###", "-"],
                           input="", capture_output=True, text=True, timeout=120)
    lines = [ln for ln in probe.stderr.splitlines() if '"-cc1"' in ln]
    if not lines:
        raise EmulateError("zig's c++ driver printed no compile plan for `-###`",
                           hint="reinstall ziglang (`pip install ziglang`) or put clang++ >= 16 on PATH")
    words = shlex.split(lines[-1])
    adopted: list[str] = []
    for i, word in enumerate(words[:-1]):
        nxt = words[i + 1]
        if word == "-isystem":
            adopted += ["-isystem", nxt]
        elif word == "-D" and not nxt.startswith("__GLIBC"):
            adopted.append(f"-D{nxt}")
    return ["-nostdinc", "-nostdinc++", *adopted]


def _plan(zig: tuple[str, ...]) -> tuple[str, list[str]]:
    """zig's `--version` text and the flags its `c++` driver adds (two zig runs, ~0.1 s CPU)."""
    try:
        version = subprocess.run([*zig, "c++", "--version"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired) as err:
        raise EmulateError(f"no Objective-C++ compiler for the host check: {err}",
                           hint="`pip install ziglang`") from None
    if "clang" not in version:
        raise EmulateError("no Objective-C++ compiler for the host check (python -m ziglang does not run)",
                           hint="`pip install ziglang`")
    return version, _adopted_flags((*zig, "c++", "-target", TARGET))


def _remembered_plan(zig: tuple[str, ...]) -> tuple[str, list[str]]:
    """`_plan(zig)`, remembered on disk per identity of the Python and ziglang files behind it (as the
    emulator's compiler versions are: `emulate.compiler._fingerprint`), so a run with a warm host-check
    cache starts no zig process."""
    from metalport.emulate.cache import default_cache_dir
    from metalport.emulate.compiler import _fingerprint

    found = _fingerprint(zig)
    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]  # this probe's own code
    key = f"{found}|{TARGET}|{code}" if found else None
    memo_path = default_cache_dir().parent / "hostcheck" / "front-end.json"
    try:
        memo = json.loads(memo_path.read_text()) if key else {}
        version, adopted = memo[key]["version"], memo[key]["adopted"]
        if isinstance(version, str) and isinstance(adopted, list) and all(isinstance(a, str) for a in adopted):
            return version, adopted
    except (OSError, ValueError, KeyError, TypeError):
        pass
    version, adopted = _plan(zig)
    if key:
        try:
            memo = json.loads(memo_path.read_text())
            memo = memo if isinstance(memo, dict) else {}
        except (OSError, ValueError):
            memo = {}
        try:
            write_text_atomic(memo_path, json.dumps({**memo, key: {"version": version, "adopted": adopted}}))
        except OSError:
            pass  # the memo only saves time: a full or read-only cache goes without it
    return version, adopted


@functools.lru_cache(maxsize=1)
def front_end() -> FrontEnd:
    """zig's clang aimed at arm64 macOS (Apple's type model: `int64_t` is `long long`, `__APPLE__`,
    Darwin's libc headers, which zig ships), with the libc++ setup of its `c++` driver.

    Raises EmulateError when `python -m ziglang` does not run."""
    zig = (sys.executable, "-m", "ziglang")
    version, adopted = _remembered_plan(zig)
    return FrontEnd(argv=(*zig, "clang", "-target", TARGET_TRIPLE, "-fno-sanitize=all"), system=tuple(adopted),
                    identity=version + json.dumps(adopted), reason=f"python -m ziglang clang for {TARGET_TRIPLE}",
                    scratch=(_zig_cache_dir(),))
