"""`compile_shader` / `compile_file` and `ShaderLibrary`: the emulated `torch.mps.compile_shader`.

    lib = compile_shader(source)
    lib.add_dense_float_float(out, a, b, threads=out.numel())
    lib.run_batch([("add_dense_float_float", (out, a, b), {"threads": n}), ...])  # one round-trip
"""

from __future__ import annotations

import ctypes
import difflib
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from metalport.emulate.args import BytesBuffer, ListBuffer, PreparedCall, TensorBuffer, prepare
from metalport.emulate.build import build, check
from metalport.emulate.cache import default_cache_dir
from metalport.emulate.compiler import Compiler, find_compiler
from metalport.emulate.diagnostics import Diagnostic
from metalport.emulate.kernels import KernelArg, KernelInfo
from metalport.emulate.runner import SharedBuffer, Worker, layout
from metalport.errors import EmulateError, MetalportError, UnknownKernelError
from metalport.sandbox.confine import Sandbox, select_sandbox
from metalport.sandbox.leftovers import scratch_prefix


def wheel_include_dir() -> Path:
    """The installed torch wheel's `include` directory (holds `c10/metal/*.h`), without importing torch."""
    from metalport.torch_facts import torch_include_dir

    try:
        return torch_include_dir()
    except MetalportError as err:
        raise EmulateError(err.message, hint="install the torch wheel or pass include_dirs=") from None


def checkout_include_dirs(checkout_root: Path) -> tuple[Path, ...]:
    """The include path of PyTorch's Metal build for a checkout: its root, `<root>/aten/src`, then
    the wheel's `include`.

    The checkout's own (possibly edited) headers win over the wheel's copies; a directory the
    checkout lacks is left out."""
    root = Path(checkout_root)
    own = tuple(d for d in (root, root / "aten" / "src") if d.is_dir())
    return (*own, wheel_include_dir())


def _info_from_dict(data: dict[str, Any]) -> KernelInfo:
    """A KernelInfo from its manifest dict."""
    return KernelInfo(host_name=data["host_name"], template=data["template"],
                      args=tuple(KernelArg(**a) for a in data["args"]),
                      uses_threadgroup=bool(data["uses_threadgroup"]),
                      grid_indexed=tuple(data.get("grid_indexed", ())))


class ShaderLibrary:
    """A compiled shader library whose kernels run in a worker subprocess."""

    def __init__(self, so_path: Path, manifest: dict[str, Any], *, sandbox: Sandbox,
                 workers: int | None = None) -> None:
        self.so_path = so_path
        entries = manifest["kernels"]
        self.kernels: dict[str, KernelInfo] = {}
        self._index: dict[str, int] = {}
        self._param_types: dict[str, list[str]] = {}
        for i, entry in enumerate(entries):
            info = _info_from_dict(entry["info"])
            args = tuple(KernelArg(**{**a.to_dict(), "c_type": t if t != "?" else a.c_type})
                         for a, t in zip(info.args, entry["param_types"]))
            info = KernelInfo(host_name=info.host_name, template=info.template, args=args,
                              uses_threadgroup=info.uses_threadgroup, grid_indexed=info.grid_indexed)
            self.kernels[info.host_name] = info
            self._index[info.host_name] = i
            self._param_types[info.host_name] = list(entry["param_types"])
        self.warnings = tuple(Diagnostic(**w) for w in manifest.get("warnings", ()))
        self.problems = tuple(manifest.get("problems", ()))
        self.workers = workers if workers is not None else (os.cpu_count() or 1)
        self._shared: SharedBuffer | None = SharedBuffer()
        self._worker = Worker(so_path, sandbox=sandbox, shared=self._shared)
        self._lock = threading.Lock()  # one request at a time through the worker's pipe

    @property
    def timeout_s(self) -> float:
        """How long one worker round-trip may take before the worker is killed (KernelCrash)."""
        return self._worker.timeout_s

    @timeout_s.setter
    def timeout_s(self, value: float) -> None:
        self._worker.timeout_s = float(value)

    def function_names(self) -> list[str]:
        """The host names of every kernel, sorted (like torch.mps ShaderLibrary)."""
        return sorted(self.kernels)

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("_") or "kernels" not in self.__dict__:
            raise AttributeError(name)
        self._info(name)
        return lambda *args, threads, group_size=None: self.run(name, *args, threads=threads,
                                                                group_size=group_size)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.kernels]

    def _info(self, name: str) -> KernelInfo:
        """The kernel called `name`, or UnknownKernelError with the closest names."""
        info = self.kernels.get(name)
        if info is None:
            close = difflib.get_close_matches(name, list(self.kernels), n=3, cutoff=0.6)
            hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else \
                f"the library has {len(self.kernels)} kernels (see function_names())"
            raise UnknownKernelError(f"no kernel named {name!r} in the shader library", hint=hint)
        return info

    def prepare(self, name: str, args: Sequence[Any], *, threads: int | Sequence[int],
                group_size: int | Sequence[int] | None = None) -> PreparedCall:
        """Validate one call without running it."""
        info = self._info(name)
        return prepare(self._index[name], info, self._param_types[name], args, threads, group_size)

    def run(self, name: str, *args: Any, threads: int | Sequence[int],
            group_size: int | Sequence[int] | None = None) -> None:
        """Run kernel `name` over `threads`; device tensors are written in place."""
        self._execute([self.prepare(name, args, threads=threads, group_size=group_size)])

    def run_batch(self, calls: Sequence[tuple[str, Sequence[Any], dict[str, Any]]]) -> None:
        """Run several calls `(name, args, {"threads": …, "group_size": …})` in one worker round-trip.

        Calls run in order; a tensor passed to several calls is one buffer, so a later call sees
        an earlier call's writes.  All calls are validated before any runs.
        """
        self._execute([self.prepare(name, args, **kwargs) for name, args, kwargs in calls])

    def _execute(self, calls: list[PreparedCall]) -> None:
        """Copy buffers into shared memory, run the calls in the worker, copy outputs back."""
        calls = [c for c in calls if c.threads[0] * c.threads[1] * c.threads[2] > 0]
        if not calls:
            return
        with self._lock:
            self._execute_locked(calls)

    def _execute_locked(self, calls: list[PreparedCall]) -> None:
        """`_execute` with the library's lock held."""
        slots: dict[tuple[int, int] | int, int] = {}
        blobs: list[TensorBuffer | BytesBuffer] = []
        plan: list[list[tuple[int, int] | None]] = []  # per buffer: (blob, byte offset of the kernel's pointer)
        # (blob holding an address array, byte position in it, blob whose address goes there)
        relocations: list[tuple[int, int, int]] = []

        def slot_of(buf: TensorBuffer | BytesBuffer) -> int:
            key: tuple[int, int] | int = (buf.address, buf.nbytes) if isinstance(buf, TensorBuffer) \
                else id(buf)
            if key not in slots:
                slots[key] = len(blobs)
                blobs.append(buf)
            elif isinstance(buf, TensorBuffer) and buf.write_back:
                blobs[slots[key]] = buf  # a tensor written through any argument is copied back
            return slots[key]

        for call in calls:
            row: list[int | None] = []
            for buf in call.buffers:
                if buf is None:
                    row.append(None)
                elif isinstance(buf, ListBuffer):
                    table = slot_of(BytesBuffer(bytes(8 * len(buf.tensors))))
                    relocations += [(table, 8 * i, slot_of(t)) for i, t in enumerate(buf.tensors)]
                    row.append((table, 0))
                else:
                    row.append((slot_of(buf), buf.offset if isinstance(buf, TensorBuffer) else 0))
            plan.append(row)
        offsets, total = layout([b.nbytes if isinstance(b, TensorBuffer) else len(b.data) for b in blobs])
        if self._shared is None:
            raise EmulateError(f"the shader library {self.so_path.name} is closed")
        shared = self._shared
        shared.reserve(total)
        for blob, off in zip(blobs, offsets):
            if isinstance(blob, TensorBuffer):
                ctypes.memmove(shared.base + off, blob.address, blob.nbytes)
            else:
                ctypes.memmove(shared.base + off, blob.data, len(blob.data))
        request = {"shm": str(shared.path), "size": shared.size, "workers": self.workers,
                   "calls": [(c.kernel, [None if s is None else offsets[s[0]] + s[1] for s in row], c.threads, c.group)
                             for c, row in zip(calls, plan)]}
        if relocations:
            request["relocations"] = [(offsets[t] + pos, offsets[target]) for t, pos, target in relocations]
        names = ", ".join(dict.fromkeys(c.name for c in calls))
        self._worker.request(request, what=f"kernel {names}")
        for blob, off in zip(blobs, offsets):
            if isinstance(blob, TensorBuffer) and blob.write_back:
                ctypes.memmove(blob.address, shared.base + off, blob.nbytes)

    def close(self) -> None:
        """Stop the worker and free the shared memory."""
        self._worker.close()
        if self._shared is not None:
            self._shared.close()
            self._shared = None

    def __enter__(self) -> ShaderLibrary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing sensible to report
            pass


def _refuse_not_a_file(path: Path) -> None:
    """EmulateError (one line) unless `path` is a regular file: missing, a directory, a device."""
    if path.is_file():
        return
    if path.is_dir():
        raise EmulateError(f"{path}: is a directory, not a shader file", hint="name one .metal file in it")
    if path.exists():
        raise EmulateError(f"{path}: not a regular file (a device or a pipe), not a shader file",
                           hint="name a .metal file")
    raise EmulateError(f"{path}: no such shader file")


def compile_file(path: Path | str, *, include_dirs: Sequence[Path] = (), metal_version: int = 310,
                 compiler: Compiler | None = None, cache_dir: Path | None = None,
                 filename: str | None = None, kernels: Sequence[str] | None = None,
                 sandbox: Sandbox | None = None) -> ShaderLibrary:
    """Compile a `.metal` file; diagnostics name `filename` (default: the path as given).

    `kernels`: only these host names (fnmatch patterns like `"add_*"`) are instantiated and
    exported; a large kernel file then compiles in a fraction of the time. `sandbox` confines the
    compiler and the kernel worker (default: `select_sandbox()`, which raises SandboxUnavailable
    when none can be set up and the user did not pass --no-sandbox)."""
    path = Path(path)
    _refuse_not_a_file(path)
    if metal_version not in (300, 310, 320, 400):
        raise EmulateError(f"metal_version={metal_version} is not supported", hint="use 310 or 400")
    dirs = tuple(Path(d) for d in include_dirs) or (wheel_include_dir(),)
    sandbox = sandbox or select_sandbox()
    built = build(path.resolve(), filename or str(path), compiler=compiler or find_compiler(),
                  include_dirs=tuple(d.resolve() for d in dirs), metal_version=metal_version,
                  cache_dir=cache_dir or default_cache_dir(), sandbox=sandbox,
                  only=None if kernels is None else tuple(kernels))
    return ShaderLibrary(built.so_path, built.manifest, sandbox=sandbox)


def check_file(path: Path | str, *, include_dirs: Sequence[Path] = (), metal_version: int = 310,
               compiler: Compiler | None = None, cache_dir: Path | None = None,
               filename: str | None = None, kernels: Sequence[str] | None = None,
               sandbox: Sandbox | None = None) -> int:
    """Type-check a `.metal` file with every host-named kernel (or those matching `kernels`)
    instantiated, without building it; returns how many kernels were checked.

    Raises CompileError (diagnostics at `filename`, default the path as given) like `compile_file`,
    in a fraction of its time: no code is generated and nothing is loaded. `sandbox` as in
    `compile_file`."""
    path = Path(path)
    _refuse_not_a_file(path)
    dirs = tuple(Path(d) for d in include_dirs) or (wheel_include_dir(),)
    return check(path.resolve(), filename or str(path), compiler=compiler or find_compiler(),
                 include_dirs=tuple(d.resolve() for d in dirs), metal_version=metal_version,
                 cache_dir=cache_dir or default_cache_dir(), sandbox=sandbox or select_sandbox(),
                 only=None if kernels is None else tuple(kernels))


def compile_shader(source: str, *, include_dirs: Sequence[Path] = (), filename: str = "shader.metal",
                   metal_version: int = 310, compiler: Compiler | None = None,
                   cache_dir: Path | None = None, kernels: Sequence[str] | None = None,
                   sandbox: Sandbox | None = None) -> ShaderLibrary:
    """Compile Metal source text (like `torch.mps.compile_shader`); diagnostics name `filename`;
    `kernels` and `sandbox` as in `compile_file`."""
    with tempfile.TemporaryDirectory(prefix=scratch_prefix("src")) as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_text(source)
        return compile_file(path, include_dirs=include_dirs, metal_version=metal_version,
                            compiler=compiler, cache_dir=cache_dir, filename=filename, kernels=kernels,
                            sandbox=sandbox)
