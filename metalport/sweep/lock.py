"""One sweep at a time per repository: a `filelock` lock in the git dir, with who holds it.

The lock is an OS lock on `<git-common-dir>/metalport/sweep.lock`, released by the OS when the
holder dies, so a killed sweep never blocks the next one. Beside it, `sweep.lock.json` names the
holder (pid, start time, command) for the message a second sweep prints.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from types import TracebackType

from filelock import FileLock, Timeout

from metalport.errors import SweepBusy, filesystem_error
from metalport.atomic import write_text_atomic


class SweepLock:
    """The held sweep lock of one repository; use as a context manager."""

    def __init__(self, metalport_dir: Path) -> None:
        self.path = metalport_dir / "sweep.lock"
        self.info_path = metalport_dir / "sweep.lock.json"
        self._lock = FileLock(str(self.path), timeout=0)

    def __enter__(self) -> SweepLock:
        """Take the lock: SweepBusy (exit 3) when held, FilesystemError (exit 2) when it cannot be written."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock.acquire(timeout=0)
        except Timeout:
            raise SweepBusy(f"another sweep is running on this repository ({self.holder()})",
                            hint="wait for it to finish; `metalport review` works meanwhile") from None
        except OSError as err:
            raise filesystem_error(err, what="the sweep lock", path=self.path) from None
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        try:
            write_text_atomic(self.info_path, json.dumps({"pid": os.getpid(), "started_at": started,
                                                          "argv": sys.argv[1:]}) + "\n")
        except OSError as err:
            self._lock.release()
            raise filesystem_error(err, what="the sweep lock", path=self.info_path) from None
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.info_path.unlink(missing_ok=True)
        self._lock.release()

    def holder(self) -> str:
        """Who holds the lock, in words: `pid 123, started 2026-12-02 14:00:00 UTC`."""
        try:
            info = json.loads(self.info_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return "holder unknown: it has not written its pid yet"
        return f"pid {info.get('pid')}, started {info.get('started_at')}"

