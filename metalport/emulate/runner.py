"""The parent side of the worker: a persistent subprocess per library, restarted after a crash,
and the shared-memory file that carries buffers both ways."""

from __future__ import annotations

import ctypes
import mmap
import os
import select
import signal
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path

from metalport.emulate import worker as _worker
from metalport.errors import EmulateError, KernelCrash
from metalport.sandbox.runner import scrubbed_env

WORKER_SCRIPT = Path(_worker.__file__)
_ALIGN = 64


def _signal_name(returncode: int) -> str:
    """`-8` -> `SIGFPE`; a plain exit code as `exit status N`."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


def _unlink(path: Path) -> None:
    """Delete `path` if it still exists."""
    path.unlink(missing_ok=True)


class SharedBuffer:
    """A growable memory-mapped file that holds every buffer of a request."""

    def __init__(self) -> None:
        shm = Path("/dev/shm")
        fd, name = tempfile.mkstemp(prefix="metalport-", suffix=".buf", dir=shm if shm.is_dir() else None)
        os.close(fd)
        self.path = Path(name)
        # Removed at close() or, for a library never closed, when the interpreter exits.
        self._cleanup = weakref.finalize(self, _unlink, self.path)
        self.size = 0
        self._map: mmap.mmap | None = None
        self._anchor: ctypes.c_char | None = None
        self.base = 0

    def reserve(self, size: int) -> None:
        """Make the file at least `size` bytes (rounded up to 1 MiB) and map it."""
        size = max(1 << 20, -(-size // (1 << 20)) * (1 << 20))
        if size <= self.size:
            return
        self._unmap()
        with open(self.path, "r+b") as handle:
            os.ftruncate(handle.fileno(), size)
            self._map = mmap.mmap(handle.fileno(), size)
        self._anchor = ctypes.c_char.from_buffer(self._map)
        self.base = ctypes.addressof(self._anchor)
        self.size = size

    def _unmap(self) -> None:
        """Drop the mapping (the anchor must go first: it pins the buffer)."""
        self._anchor = None
        if self._map is not None:
            self._map.close()
            self._map = None

    def close(self) -> None:
        """Unmap and delete the file."""
        self._unmap()
        self._cleanup()


def layout(sizes: list[int]) -> tuple[list[int], int]:
    """Offsets of buffers of `sizes` bytes, each 64-byte aligned, and the total size."""
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += -(-max(size, 1) // _ALIGN) * _ALIGN
    return offsets, total


class Worker:
    """A persistent worker process running one compiled library."""

    def __init__(self, so_path: Path, *, timeout_s: float = 300.0) -> None:
        self.so_path = so_path
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: tempfile._TemporaryFileWrapper[bytes] | None = None
        self.kernels: list[dict[str, object]] = []

    def start(self) -> list[dict[str, object]]:
        """Start the process if needed; returns the kernel metadata it announces."""
        if self._proc is not None and self._proc.poll() is None:
            return self.kernels
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen([sys.executable, "-S", str(WORKER_SCRIPT), str(self.so_path)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                      env=scrubbed_env())
        hello = self._read(what="loading the library")
        self.kernels = list(hello["kernels"])  # type: ignore[index]
        return self.kernels

    def request(self, message: dict[str, object], *, what: str) -> dict[str, object]:
        """Send one request and wait for the reply; a dead worker raises KernelCrash."""
        self.start()
        assert self._proc is not None and self._proc.stdin is not None
        try:
            _worker.send(self._proc.stdin, message)  # type: ignore[arg-type]
        except BrokenPipeError:
            pass
        return self._read(what=what)

    def _read(self, *, what: str) -> dict[str, object]:
        """Read a reply within the time limit, or diagnose the death of the process."""
        assert self._proc is not None and self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], self.timeout_s)
        if not ready:
            self.close()
            raise KernelCrash(f"{what} did not finish within {self.timeout_s:.0f} s; the worker was stopped",
                              hint="look for an endless loop or a grid far larger than intended")
        reply = _worker.receive(self._proc.stdout)  # type: ignore[arg-type]
        if reply is None:
            code = self._proc.wait()
            detail = self._stderr_tail()
            self.close()  # also closes the dead worker's pipes (else ResourceWarning)
            raise KernelCrash(f"{what} crashed the worker with {_signal_name(code)}"
                              + (f" ({detail})" if detail else ""),
                              hint="integer division by zero raises SIGFPE, an out-of-range index SIGSEGV")
        if "error" in reply:  # type: ignore[operator]
            raise EmulateError(f"{what}: {reply['error']}")  # type: ignore[index]
        return reply  # type: ignore[return-value]

    def _stderr_tail(self) -> str:
        """The last line the worker wrote to stderr (a Python error when loading failed)."""
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1][:300] if lines else ""

    def close(self) -> None:
        """Stop the process (it exits when its stdin closes; killed if it does not)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=2)
            except (subprocess.TimeoutExpired, OSError):
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
