"""The worker process that runs compiled kernels, so a crashing kernel never kills metalport.

Run as a script (`python worker.py LIB.so`), it imports nothing from metalport or torch, so it
starts in tens of milliseconds.  Protocol on its stdin/stdout (stdout is moved off fd 1 first so
kernel output cannot corrupt it): 4-byte little-endian length + pickle.  The first message it
sends is the library's kernel metadata; each request names a shared-memory file holding every
buffer and a list of calls `(kernel, buffer offsets, threads, group)`, run in order.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import pickle
import struct
import sys
from typing import BinaryIO

_HEADER = struct.Struct("<I")


def send(stream: BinaryIO, message: object) -> None:
    """Write one length-prefixed pickled message."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream: BinaryIO) -> object | None:
    """Read one message, or None at end of stream."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def _metadata(lib: ctypes.CDLL) -> list[dict[str, object]]:
    """Kernel names and each parameter's element type name and size, from the C entry points."""
    lib.mshim_kernel_name.restype = ctypes.c_char_p
    lib.mshim_param_type.restype = ctypes.c_char_p
    lib.mshim_param_size.restype = ctypes.c_uint
    kernels = []
    for k in range(lib.mshim_num_kernels()):
        params = [(lib.mshim_param_type(k, p).decode(), int(lib.mshim_param_size(k, p)))
                  for p in range(lib.mshim_kernel_nparams(k))]
        kernels.append({"name": lib.mshim_kernel_name(k).decode(), "params": params})
    return kernels


class _Shared:
    """The request's shared-memory file, mapped once and remapped when it grows."""

    def __init__(self) -> None:
        self.path: str | None = None
        self.size = 0
        self.map: mmap.mmap | None = None
        self.anchor: ctypes.c_char | None = None
        self.base = 0

    def attach(self, path: str, size: int) -> int:
        """The base address of `path` mapped with at least `size` bytes."""
        if path != self.path or size != self.size:
            self.anchor = None
            if self.map is not None:
                self.map.close()
            with open(path, "r+b") as handle:
                self.map = mmap.mmap(handle.fileno(), size)
            self.anchor = ctypes.c_char.from_buffer(self.map)
            self.base = ctypes.addressof(self.anchor)
            self.path, self.size = path, size
        return self.base


def serve(so_path: str, inp: BinaryIO, out: BinaryIO) -> int:
    """Load the library, announce its kernels, then run requests until the input closes."""
    lib = ctypes.CDLL(so_path)
    lib.mshim_run.restype = ctypes.c_int
    send(out, {"kernels": _metadata(lib)})
    shared = _Shared()
    uint3 = ctypes.c_uint * 3
    while True:
        request = receive(inp)
        if request is None:
            return 0
        assert isinstance(request, dict)
        base = shared.attach(request["shm"], request["size"])
        for where, target in request.get("relocations", ()):
            # An address array (TensorList): each entry is a buffer's address in this process.
            ctypes.c_uint64.from_address(base + where).value = base + target
        for kernel, offsets, threads, group in request["calls"]:
            buffers = (ctypes.c_void_p * max(1, len(offsets)))(
                *[None if off is None else base + off for off in offsets])
            rc = lib.mshim_run(kernel, buffers, uint3(*threads), uint3(*group), request["workers"])
            if rc != 0:
                send(out, {"error": f"kernel index {kernel} is not in the library"})
                break
        else:
            send(out, {"ok": True})


def main() -> int:
    """Entry point: keep the protocol on a private fd and send kernel stdout to stderr."""
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return serve(sys.argv[1], sys.stdin.buffer, proto_out)


if __name__ == "__main__":
    sys.exit(main())
