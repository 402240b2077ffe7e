"""CPU references that may crash the process, computed in a forked child.

torch's CPU kernels can die on integer extremes (`lcm` divides INT_MIN by -1, which raises SIGFPE
on x86; torch checks division by zero itself). A reference whose signed integer operands hold their
type's minimum therefore runs in a child process; when the child dies, each call is retried in a
child of its own so only the crashing cases are lost, each one reported as `Crashed` (the caller
drops and counts it). Floating-point arithmetic never traps, so everything else runs in-process.
"""

from __future__ import annotations

import faulthandler
import io
import os
import pickle
import signal
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


def run_guarded(fns: Sequence[Callable[[], object]]) -> list[Outcome]:
    """Each function's result (or Refused) computed in a forked child; Crashed for those that kill it."""
    if not fns:
        return []
    whole, _ = _in_child(fns)
    if whole is not None:
        return whole
    out: list[Outcome] = []
    for fn in fns:
        one, how = _in_child([fn])
        out.append(one[0] if one is not None else Crashed(how))
    return out


def _in_child(fns: Sequence[Callable[[], object]]) -> tuple[list[Outcome] | None, str]:
    """(results, "") from a forked child, or (None, how the child died)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: compute, send, leave without running the parent's cleanup
        code = 0
        try:
            os.close(read_fd)
            faulthandler.disable()  # the crash is expected here; no traceback dump on stderr
            torch.set_num_threads(1)
            buf = io.BytesIO()
            pickle.dump([_call(fn) for fn in fns], buf, protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(buf.getvalue())
        except BaseException:  # noqa: BLE001 - the parent sees the exit status
            code = 3
        os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return None, signal.Signals(sig).name
        except ValueError:
            return None, f"signal {sig}"
    if os.WEXITSTATUS(status) != 0 or not data:
        return None, f"exit status {os.WEXITSTATUS(status)}"
    return pickle.loads(data), ""


__all__ = ["Crashed", "Refused", "needs_guard", "run_guarded"]
