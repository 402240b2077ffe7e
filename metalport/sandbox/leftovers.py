"""Scratch that a killed metalport left behind: found by the pid in its name, removed at the next
start-up.

Every scratch directory a metalport process makes for shaders (the kernel worker's shared
buffer in `/dev/shm`, build and check directories in the temp directory) is named
`metalport-[KIND-]PID-nNS-…`; `kill -9` skips the clean-up, so the next process removes those whose
PID is no longer running (and that belong to its own user).

Note [a pid names a process only in its namespace]: two metalport runs in different PID namespaces
(containers, CI jobs) may share one `/tmp`; there the other run's live PID looks dead, and
removing its build directory pulled a freshly linked `shader.so` from under its worker. So a
name also carries the PID namespace's inode (`NS`), and only names of our own namespace are
judged by their PID. A name of another namespace, or without one, is removed only once it has
not been touched for `_FOREIGN_AGE_S`.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

_NAME = re.compile(r"^metalport-(?:[a-z]+-)?(\d+)(?:-n(\d+))?(?:-|$)")
_FOREIGN_AGE_S = 2 * 24 * 3600  # a run of another PID namespace is over after two untouched days


@functools.lru_cache(maxsize=1)
def _namespace() -> str:
    """The inode of this process's PID namespace ("0" where /proc does not say)."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "0"
    digits = "".join(ch for ch in link if ch.isdigit())
    return digits or "0"


def scratch_prefix(kind: str = "") -> str:
    """The name prefix of this process's scratch directories of `kind` ("" for the shared buffer)."""
    return f"metalport-{kind + '-' if kind else ''}{os.getpid()}-n{_namespace()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scratch_parents() -> tuple[Path, ...]:
    """Where scratch directories are made: `/dev/shm` (when present) and the temp directory."""
    parents = [Path(tempfile.gettempdir())]
    if Path("/dev/shm").is_dir():
        parents.insert(0, Path("/dev/shm"))
    return tuple(parents)


_CGROUPS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))  # where `pids_cgroup` makes them


def remove_leftovers(parents: tuple[Path, ...] | None = None) -> list[Path]:
    """Remove scratch directories of dead metalport processes of this user; returns them."""
    removed = []
    uid = os.getuid()
    for parent in parents or (*scratch_parents(), *(_CGROUPS if os.geteuid() == 0 else ())):
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for entry in entries:
            match = _NAME.match(entry.name)
            if match is None or int(match.group(1)) == os.getpid():
                continue
            try:
                if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
            except OSError:
                continue
            if _gone(int(match.group(1)), match.group(2), entry):
                if parent in _CGROUPS:
                    try:
                        os.rmdir(entry.path)  # a cgroup goes with rmdir once empty
                    except OSError:
                        continue
                else:
                    shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed


def _gone(pid: int, namespace: str | None, entry: os.DirEntry[str]) -> bool:
    """Whether the process that named `entry` is over (Note [a pid names a process only in its namespace])."""
    if namespace == _namespace() and namespace != "0":
        return not _alive(pid)
    try:
        return time.time() - entry.stat(follow_symlinks=False).st_mtime > _FOREIGN_AGE_S
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def remove_leftovers_once() -> int:
    """`remove_leftovers` the first time a process asks; the number removed."""
    return len(remove_leftovers())
