"""One harness, two backends: compile kernel files and run a modelled `Launch` (of any launch
kind, Note [one emulated host] below) on either.

"emulated" compiles with `metalport.emulate.compile_file` (Metal on the CPU); "mps" uses
`torch.mps.compile_shader` when MPS is available. Buffers are the flat storage regions of the
operand views (kernels address them with the byte strides the host passes); every scalar the host
would set with setBytes goes to the emulator as a Python value packed to the parameter's C type,
and to MPS as a tensor of that type (vectors of three padded to four, as Metal lays them out);
`Tensor[]` arguments run emulated only (torch.mps.compile_shader binds no argument buffers).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from metalport.checks.host.iteration import flat_buffer
from metalport.errors import EmulateError, UsageError
from metalport.metal_types import METAL_TYPES

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]((?:c10/metal|ATen)/[\w./]+)[>"][^\n]*$', re.M)
# The tensor dtype MPS receives a scalar Metal type's constant in: the same bytes, with torch's
# barebones uint16/32/64 (`MetalType.barebones`: few MPS kernels) passed as their signed twins.
_TENSOR_DTYPE = {t.name: getattr(torch, f"int{t.bits}" if t.barebones else t.torch_name)
                 for t in METAL_TYPES if t.struct_format is not None}


# Note [one emulated host]: an elementwise port's host (`hostmodel`: the `exec_*_kernel` helpers)
# and a launch spec's (`speclaunch`: reduction, window, scan, tensor-list launches) decide different
# things but end in the same: a `Launch` (kernel, arguments in buffer-index order, grid, the tensors
# the arguments refer to) that `KernelSet` dispatches on either backend, so every launch kind is
# run, its outputs copied back and its failures reported by one runner.


@dataclass(frozen=True)
class Buffer:
    """A tensor operand (`Launch.tensors[operand]`) bound as a buffer, the kernel's pointer `offset`
    elements into its flat storage (`setBuffer:offset:`: the elements before it stay reachable)."""

    operand: int
    offset: int = 0


@dataclass(frozen=True)
class Lists:
    """A `Tensor[]` argument: the device addresses of these operands (multi-tensor kernels)."""

    operands: tuple[int, ...]


@dataclass(frozen=True)
class Const:
    """Bytes the host sets with setBytes: `c_type` is the Metal type (`uint`, `long*`, `uint4`, ...)
    and `values` its components; a params struct gives the one type of all its fields in `fields`
    (laid out without padding) or its bytes, laid out as C lays them, in `packed`."""

    c_type: str
    values: tuple[int | float | bool, ...]
    fields: str | None = None
    packed: bytes | None = None


@dataclass(frozen=True)
class Launch:
    """One kernel dispatch: host name, arguments in buffer-index order, grid (and the threadgroup
    the host sets, None for min(1024, threads)) and the bound tensors, outputs first."""

    kernel: str
    args: tuple[Buffer | Lists | Const, ...]
    threads: tuple[int, ...]
    tensors: tuple[torch.Tensor, ...]  # operand views after host-side conversions
    outputs: int = 1  # how many of `tensors` (from the first) the kernel writes
    group: tuple[int, ...] | None = None


class UnmodelledCall(Exception):
    """The modelled host launches no kernel for this call, of any launch kind: it would do something
    the model does not cover, or the MPS host would refuse it (an unregistered dtype, a slice past
    32-bit indexing). Internal: conformance counts the call as skipped, with this reason."""


class NotOnBackend(EmulateError):
    """The backend cannot make this launch at all: a limit of the harness, not a fault of the kernel."""


def wheel_include_dir() -> Path:
    """The installed torch wheel's `include` directory (holds `c10/metal`)."""
    return Path(torch.__file__).parent / "include"


def pick_backend(requested: str) -> str:
    """Resolve "auto" to "mps" when MPS is available, else "emulated"; validate the name."""
    if requested not in ("auto", "emulated", "mps"):
        raise UsageError(f"unknown backend {requested!r}", hint="use auto, emulated or mps")
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    if requested == "mps" and not mps:
        raise UsageError("backend mps requested but torch.backends.mps.is_available() is False",
                         hint="run on macOS with MPS, or use --backend emulated")
    if requested == "auto":
        return "mps" if mps else "emulated"
    return requested


def inline_includes(source: str, include_dirs: Sequence[Path], seen: set[str] | None = None) -> str:
    """`source` with every `#include <c10/metal/...>` / `<ATen/...>` replaced by the header text, each
    header once (torch.mps.compile_shader has no include path)."""
    seen = set() if seen is None else seen

    def expand(m: re.Match[str]) -> str:
        rel = m.group(1)
        if rel in seen:
            return ""
        seen.add(rel)
        for d in include_dirs:
            path = d / rel
            if path.is_file():
                text = path.read_text(encoding="utf-8").replace("#pragma once", "")
                return inline_includes(text, include_dirs, seen)
        raise UsageError(f"header {rel} not found", hint="check the checkout's c10/metal and aten/src directories")

    return _INCLUDE.sub(expand, source)


@dataclass(frozen=True)
class KernelFile:
    """One compiled kernel file: its path (as reported) and the library object."""

    path: Path
    library: Any


class KernelSet:
    """The kernels of one op drawn from one or more compiled files, callable by host name."""

    def __init__(self, backend: str, files: Sequence[KernelFile]) -> None:
        self.backend = backend
        self._owner: dict[str, KernelFile] = {}
        for f in files:
            for name in f.library.function_names():
                self._owner.setdefault(name, f)
        self.names = frozenset(self._owner)

    def close(self) -> None:
        """Stop the emulator workers of every file (MPS libraries need nothing)."""
        for f in {id(f): f for f in self._owner.values()}.values():
            close = getattr(f.library, "close", None)
            if close is not None:
                close()

    def arg_count(self, kernel: str) -> int | None:
        """Number of buffer arguments the kernel declares (emulated only; None when unknown)."""
        info = getattr(self._owner[kernel].library, "kernels", {}).get(kernel)
        return None if info is None else len(info.buffers)

    def run_many(self, launches: Sequence[Launch]) -> list[str | None]:
        """Run `launches`; per launch None or the one-line error. Emulated calls share one round-trip
        per library; after a failing batch each call is rerun alone to name the one that failed."""
        if self.backend != "emulated":
            return [self._attempt(la) for la in launches]
        errors: list[str | None] = [None] * len(launches)
        by_lib: dict[int, list[int]] = {}
        for i, la in enumerate(launches):
            by_lib.setdefault(id(self._owner[la.kernel]), []).append(i)
        for indices in by_lib.values():
            lib = self._owner[launches[indices[0]].kernel].library
            batch = [(launches[i].kernel, [self._emulated(a, launches[i]) for a in launches[i].args],
                      _dispatch(launches[i])) for i in indices]
            try:
                lib.run_batch(batch)
            except EmulateError:
                for i in indices:
                    errors[i] = self._attempt(launches[i])
        return errors

    def _attempt(self, launch: Launch) -> str | None:
        try:
            self.run(launch)
        except EmulateError as err:
            return str(err)
        return None

    def run(self, launch: Launch) -> None:
        """Dispatch `launch`; outputs are written through the operand views' storage. NotOnBackend
        for a launch this backend cannot make at all."""
        if self.backend != "emulated" and any(isinstance(a, Lists) for a in launch.args):
            raise NotOnBackend(f"{launch.kernel}: Tensor[] launches run on the emulated backend only "
                               f"(torch.mps.compile_shader binds no argument buffers)")
        lib = self._owner[launch.kernel].library
        fn = getattr(lib, launch.kernel)
        if self.backend == "emulated":
            fn(*[self._emulated(a, launch) for a in launch.args], **_dispatch(launch))
            return
        moved = [flat_buffer(t).to("mps") for t in launch.tensors]
        args = [moved[a.operand][a.offset:] if isinstance(a, Buffer) else _const_tensor(a) for a in launch.args]
        fn(*args, **_dispatch(launch))
        for k in range(launch.outputs):
            flat_buffer(launch.tensors[k]).copy_(moved[k].cpu())

    @staticmethod
    def _emulated(arg: Buffer | Lists | Const, launch: Launch) -> Any:
        from metalport.emulate import BufferOffset, TensorList

        if isinstance(arg, Buffer):
            flat = flat_buffer(launch.tensors[arg.operand])
            return BufferOffset(flat, arg.offset) if arg.offset else flat
        if isinstance(arg, Lists):
            return TensorList([flat_buffer(launch.tensors[k]) for k in arg.operands],
                              writable=all(k < launch.outputs for k in arg.operands))
        if arg.packed is not None:
            return torch.frombuffer(bytearray(arg.packed), dtype=torch.uint8).clone()
        if arg.fields is not None:  # a params struct: its bytes, as a tensor of its field type
            return torch.tensor(arg.values, dtype=_TENSOR_DTYPE[arg.fields])
        if arg.c_type.endswith("*") or arg.c_type[-1].isdigit():
            return list(arg.values)
        return arg.values[0]


MAX_GROUP = 1024  # a pipeline's usual maxTotalThreadsPerThreadgroup on Apple GPUs


def _dispatch(launch: Launch) -> dict[str, Any]:
    """Grid and group as the host sets them: the launch's own group, else for a 1-D dispatch
    min(max group, threads); 2-D grids keep the backend's default group."""
    if launch.group is not None:
        if len(launch.threads) == 1:
            return {"threads": launch.threads[0], "group_size": launch.group[0]}
        return {"threads": launch.threads, "group_size": launch.group}
    if len(launch.threads) > 1:
        return {"threads": launch.threads}
    return {"threads": launch.threads[0], "group_size": max(1, min(MAX_GROUP, launch.threads[0]))}


def _const_tensor(arg: Const) -> torch.Tensor:
    if arg.packed is not None:
        return torch.frombuffer(bytearray(arg.packed), dtype=torch.uint8).clone().to("mps")
    if arg.fields is not None:
        return torch.tensor(arg.values, dtype=_TENSOR_DTYPE[arg.fields]).to("mps")
    base = arg.c_type.rstrip("*").rstrip("234")
    values = list(arg.values)
    if arg.c_type.endswith("3"):
        values.append(0)
    return torch.tensor(values, dtype=_TENSOR_DTYPE[base]).to("mps")


def compile_files(paths: Sequence[Path], checkout_root: Path, backend: str,
                  kernels: Sequence[str] | None = None) -> KernelSet:
    """Compile each kernel file for `backend` (EmulateError/CompileError propagate, one line).

    `kernels`: host-name patterns; the emulator instantiates only those (a 4,000-kernel file then
    builds in seconds), MPS compiles the whole file as the GPU driver does."""
    from metalport.emulate import checkout_include_dirs

    dirs = checkout_include_dirs(checkout_root)  # the checkout root, `<root>/aten/src`, then the wheel's
    files = []
    for p in paths:
        if not p.is_file():
            raise UsageError(f"kernel file {p} does not exist", hint="pass an existing .metal file")
        if backend == "emulated":
            from metalport.emulate import compile_file

            files.append(KernelFile(p, compile_file(p, include_dirs=dirs, kernels=kernels)))
        else:
            source = inline_includes(p.read_text(encoding="utf-8"), dirs)
            try:
                files.append(KernelFile(p, torch.mps.compile_shader(source)))
            except (SyntaxError, RuntimeError) as err:  # torch's compile failures carry the log
                raise EmulateError(f"{p}: Metal compile failed: {str(err).splitlines()[0]}") from None
    return KernelSet(backend, files)
