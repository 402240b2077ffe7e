"""The port's shape read from the op itself, not from its stub's kind alone.

Note [port shape from the op]: the stub's signature does not say how many operands its iterator
has. glu_stub takes an iterator, yet glu's iterator runs over the two halves of `self`: torch's own
CPU result (half the input along `dim`) shows it, and the port is a binary functor
(`halves_reason`). The emulated host judges such a call the same way (Note [halves],
checks/cases/samples.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metalport.port.tree.op_facts import Family

if TYPE_CHECKING:
    from metalport.port.tree.resolve import Resolution


def stub_entry_func(res: Resolution) -> str | None:
    """The schema of the entry whose CPU kernel calls the stub: the `.out` (or first) entry with a
    CPU/CUDA dispatch line."""
    served = [e for e in res.entries if e.kernel_for("CPU") or e.kernel_for("CUDA")]
    entry = next((e for e in served if e.overload in ("out", "grad_input")), served[0] if served else None)
    return entry.func if entry is not None else None


def halves_reason(res: Resolution) -> str | None:
    """Why the op's iterator runs over the two halves of its input (glu: `out = a * sigmoid(b)` for
    the halves a, b of `self` along `dim`), or None: one tensor input and an int `dim` its stub does
    not take, and torch's CPU result is half the input along `dim` on the op's OpInfo sample. Such
    an op is a binary functor over the halves (Note [port shape from the op])."""
    func = stub_entry_func(res)
    if func is None or res.family is not Family.UNARY:
        return None
    from torchgen.model import FunctionSchema

    args = FunctionSchema.parse(func).arguments
    tensors = [a for a in args.flat_positional if str(a.type) == "Tensor"]
    dims = [a for a in args.flat_positional if a.name == "dim" and str(a.type) == "int"]
    if len(tensors) != 1 or not dims:  # decided from the schema: most ops import no torch here
        return None
    import torch

    from metalport.torch_facts import find_opinfo

    info = find_opinfo(res.op)
    if info is None:
        return None
    for sample in info.sample_inputs("cpu", torch.float32):
        x = sample.input
        dim = sample.kwargs.get("dim", sample.args[0] if sample.args else -1)
        out = info.op(x, *sample.args, **sample.kwargs)
        if not isinstance(out, torch.Tensor) or x.dim() == 0 or out.dim() != x.dim():
            return None
        halved = list(x.shape)
        halved[dim] //= 2
        if list(out.shape) != halved or x.shape[dim] % 2:
            return None
        return (f"{res.op}'s result is half of {tensors[0].name} along {dims[0].name} (OpInfo {info.name}): its "
                f"iterator runs over the two halves, a binary functor")
    return None


def operand_mismatch(res: Resolution, arity: int) -> str | None:
    """Why a lambda of `arity` operands cannot serve `res.op` as its port launches it, or None: the
    op's stub entry takes as many tensors besides its outputs, or one whose two halves the iterator
    runs over (glu, `halves_reason`). `res` needs only `op`, `family` and `entries`."""
    from torchgen.model import FunctionSchema

    func = stub_entry_func(res)
    if func is None:
        return None
    args = FunctionSchema.parse(func).arguments
    operands = sum(1 for a in (*args.flat_positional, *args.flat_kwarg_only) if str(a.type).startswith("Tensor"))
    if operands == arity or (arity == 2 and operands == 1 and halves_reason(res)):
        return None
    return (f"the lambda takes {arity} operands and aten::{res.op} {operands} tensor(s): the op's CPU code builds "
            f"the iterator from other operands (one passed twice?), which no emulated host models")


__all__ = ["halves_reason", "operand_mismatch", "stub_entry_func"]
