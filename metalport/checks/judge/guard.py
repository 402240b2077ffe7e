"""CPU references that may crash or hang the process, computed in a forked child.

torch's CPU kernels can die on integer extremes (`lcm` divides INT_MIN by -1, which raises SIGFPE
on x86; torch checks division by zero itself), and some loop as long as an operand says
(special_shifted_chebyshev_polynomial_t(x, n) runs n steps: 2^127 from the every-magnitude set).
The calls run in a forked child that sends each result as it is done (`run_bounded`); a call that
kills the child, or takes longer than its time bound, is reported as `Crashed` (the caller drops
and counts it) and the calls after it continue in a new child.
"""

from __future__ import annotations

import faulthandler
import io
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Crashed:
    """The CPU reference killed its process (`how`: the signal or exit status)."""

    how: str


@dataclass(frozen=True)
class Refused:
    """torch refused the inputs on CPU (`kind`: the exception type, `message`: its first line)."""

    kind: str
    message: str = ""


def refusal(err: BaseException) -> Refused:
    """The Refused of torch's exception `err`."""
    return Refused(type(err).__name__, (str(err).strip().splitlines() or [type(err).__name__])[0])


Outcome = torch.Tensor | Crashed | Refused | object
_REFUSALS = (RuntimeError, ValueError, TypeError, IndexError, OverflowError, ZeroDivisionError)


def _call(fn: Callable[[], object]) -> Outcome:
    try:
        return fn()
    except _REFUSALS as err:
        return refusal(err)


def needs_guard(operands: Sequence[torch.Tensor]) -> bool:
    """Signed integer division traps on MIN / -1; floating-point, bool and unsigned arithmetic cannot."""
    return any(t.is_signed() and not (t.is_floating_point() or t.is_complex()) and t.numel()
               and bool((t == torch.iinfo(t.dtype).min).any()) for t in operands)


PER_CALL_S = 20.0  # a reference call still running after this long is stopped (an endless loop)


def run_guarded(fns: Sequence[Callable[[], object]], per_call_s: float = PER_CALL_S) -> list[Outcome]:
    """Each function's result (or Refused) computed in a forked child, in order; Crashed for a call
    that kills the child or runs longer than `per_call_s` (the rest continue in a new child)."""
    out: list[Outcome] = []
    while len(out) < len(fns):
        done, how = _in_child(fns[len(out):], per_call_s)
        out += done
        if len(out) < len(fns):
            out.append(Crashed(how))  # the call the child was running
    return out


def _in_child(fns: Sequence[Callable[[], object]], per_call_s: float) -> tuple[list[Outcome], str]:
    """(the results a forked child sent, in order; how it stopped before the rest, or "")."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: compute, send each result, leave without running the parent's cleanup
        code = 0
        try:
            os.close(read_fd)
            faulthandler.disable()  # a crash is expected here; no traceback dump on stderr
            torch.set_num_threads(1)
            with os.fdopen(write_fd, "wb") as pipe:
                for fn in fns:
                    data = _dumps(_call(fn))
                    pipe.write(struct.pack("<Q", len(data)) + data)
                    pipe.flush()
        except BaseException:  # noqa: BLE001 - the parent sees the exit status
            code = 3
        os._exit(code)
    os.close(write_fd)
    results: list[Outcome] = []
    how = ""
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while len(results) < len(fns):
            head = _read(pipe, 8, per_call_s)
            if head is not None and len(head) < 8:
                break  # the child died: its status says how
            body = None if head is None else _read(pipe, struct.unpack("<Q", head)[0], per_call_s)
            if body is None:
                how = f"did not finish within {per_call_s:.0f} s"
                break
            results.append(pickle.loads(body))
    if how:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if len(results) == len(fns) or how:
        return results, how
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return results, signal.Signals(sig).name
        except ValueError:
            return results, f"signal {sig}"
    return results, f"exit status {os.WEXITSTATUS(status)}"


class _Pickler(pickle.Pickler):
    """Tensors as their bytes, shape and strides: torch 2.13 cannot unpickle its own uint16/32/64."""

    def reducer_override(self, obj: object) -> object:
        if isinstance(obj, torch.Tensor) and obj.layout == torch.strided and not obj.is_quantized:
            data = obj.detach().contiguous()
            raw = data.view(torch.uint8) if data.element_size() == 1 or data.dim() else data.reshape(1).view(torch.uint8)
            return _tensor, (str(obj.dtype).removeprefix("torch."), tuple(obj.shape), tuple(obj.stride()),
                             bytes(raw.reshape(-1).numpy().tobytes()) if obj.numel() else b"")
        return NotImplemented


def _dumps(value: object) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buf.getvalue()


def _tensor(dtype: str, shape: tuple[int, ...], strides: tuple[int, ...], data: bytes) -> torch.Tensor:
    """The tensor `_Pickler` sent, with its strides where they describe a dense layout."""
    kind = getattr(torch, dtype)
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(kind) if data else torch.empty(0, dtype=kind)
    value = flat.reshape(shape)
    if strides != value.stride():
        try:
            value = torch.empty_strided(shape, strides, dtype=kind).copy_(value)
        except RuntimeError:  # overlapping (expanded) strides: the values alone
            pass
    return value


def _read(pipe, n: int, within_s: float) -> bytes | None:
    """`n` bytes from `pipe` (fewer at its end), or None when they do not come within `within_s`."""
    chunks, left, deadline = [], n, time.monotonic() + within_s
    while left:
        ready, _, _ = select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        chunk = pipe.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


__all__ = ["Crashed", "Refused", "needs_guard", "run_guarded"]
