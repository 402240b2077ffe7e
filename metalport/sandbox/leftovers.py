"""Scratch that a killed metalport left behind: found by the pid in its name, removed at the next
start-up.

Every scratch directory a metalport process makes for shaders (the kernel worker's shared
buffer in `/dev/shm`, build and check directories in the temp directory) is named
`metalport-[KIND-]PID-…`; `kill -9` skips the clean-up, so the next process removes those whose
PID is no longer running (and that belong to its own user).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from pathlib import Path

_NAME = re.compile(r"^metalport-(?:[a-z]+-)?(\d+)(?:-|$)")


def scratch_prefix(kind: str = "") -> str:
    """The name prefix of this process's scratch directories of `kind` ("" for the shared buffer)."""
    return f"metalport-{kind + '-' if kind else ''}{os.getpid()}-"


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
            if not _alive(int(match.group(1))):
                if parent in _CGROUPS:
                    try:
                        os.rmdir(entry.path)  # a cgroup goes with rmdir once empty
                    except OSError:
                        continue
                else:
                    shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed


@functools.lru_cache(maxsize=1)
def remove_leftovers_once() -> int:
    """`remove_leftovers` the first time a process asks; the number removed."""
    return len(remove_leftovers())
