"""The parent side of the worker: a persistent subprocess per library, restarted after a crash,
and the shared-memory file that carries buffers both ways."""

from __future__ import annotations

import ctypes
import mmap
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path

from metalport.emulate import worker as _worker
from metalport.errors import EmulateError, KernelCrash
from metalport.sandbox.confine import Sandbox, read_tail
from metalport.sandbox.leftovers import scratch_parents, scratch_prefix
from metalport.sandbox.runner import scrubbed_env

WORKER_SCRIPT = Path(_worker.__file__)
_ALIGN = 64


def _exit_name(returncode: int, signum: int | None) -> str:
    """`SIGFPE` for a signal; a plain exit code as `exit status N`."""
    if signum is not None:
        try:
            return signal.Signals(signum).name
        except ValueError:
            return f"signal {signum}"
    return f"exit status {returncode}"


def _remove_dir(path: Path) -> None:
    """Delete the shared-memory directory and what is in it."""
    shutil.rmtree(path, ignore_errors=True)


class SharedBuffer:
    """A growable memory-mapped file that holds every buffer of a request, alone in its own
    directory named after this process (see `leftovers`). The sandboxed worker sees this one
    file (not its directory), and its RLIMIT_FSIZE keeps it from growing the file."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix=scratch_prefix(), dir=scratch_parents()[0]))
        self.path = self.directory / "buffers.bin"
        self.path.touch(mode=0o600)
        # Removed at close() or, for a library never closed, when the interpreter exits.
        self._cleanup = weakref.finalize(self, _remove_dir, self.directory)
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
    """A persistent worker process running one compiled library, confined by `sandbox`: it reads
    the library and writes only `shared`'s directory."""

    def __init__(self, so_path: Path, *, sandbox: Sandbox, shared: SharedBuffer | None = None,
                 timeout_s: float = 300.0) -> None:
        self.so_path = so_path
        self.sandbox = sandbox
        self.shared = shared
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: tempfile._TemporaryFileWrapper[bytes] | None = None
        self.kernels: list[dict[str, object]] = []

    def start(self) -> list[dict[str, object]]:
        """Start the process if needed; returns the kernel metadata it announces."""
        if self._proc is not None and self._proc.poll() is None:
            return self.kernels
        self._stderr = tempfile.TemporaryFile()
        self._proc = self.sandbox.popen([sys.executable, "-S", str(WORKER_SCRIPT), str(self.so_path)],
                                        env=scrubbed_env(), readable=(self.so_path, WORKER_SCRIPT),
                                        writable=() if self.shared is None else (self.shared.path,),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
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
            signum = self.sandbox.exit_signal(code)
            if signum == signal.SIGXCPU:
                cpu_s = self.sandbox.limits.cpu_s
                raise KernelCrash(f"{what} used up its CPU-time limit of {cpu_s} s; the worker was stopped",
                                  hint="look for an endless loop or a grid far larger than intended")
            raise KernelCrash(f"{what} crashed the worker with {_exit_name(code, signum)}"
                              + (f" ({detail})" if detail else ""),
                              hint="integer division by zero raises SIGFPE, an out-of-range index SIGSEGV")
        if "error" in reply:  # type: ignore[operator]
            raise EmulateError(f"{what}: {reply['error']}")  # type: ignore[index]
        return reply  # type: ignore[return-value]

    def _stderr_tail(self) -> str:
        """The last line the worker wrote to stderr (a Python error when loading failed), read
        from the file's last 4 KiB only, however much the worker wrote."""
        if self._stderr is None:
            return ""
        lines = read_tail(self._stderr, 4096).strip().splitlines()
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
