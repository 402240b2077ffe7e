"""The op's OpInfo samples as ATen calls, bound to a kernel family's operands (see `cases` for the rest).

Samples are taken at the ATen level: each OpInfo sample runs on CPU under a dispatch mode that
records calls to the target op, so a Python-level alias or composite still yields the exact
overload, arguments and CPU result the MPS host would see. Each recorded call is bound to the
kernel family's operands (iterator inputs) and alpha scalar; calls with arguments the family
does not model are counted, not guessed.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from metalport.checks.host.backend import UnmodelledCall
from metalport.checks.host.elementwise import OpmathScalar
from metalport.checks.cases.numerics import Numerics, draw
from metalport.torch_facts import find_opinfo, find_opinfos


class ExecConvention(Enum):
    """The exec_*_kernel convention a kernel file's registrations follow."""

    UNARY = "unary"
    UNARY_ALPHA = "unary-alpha"
    BINARY = "binary"
    BINARY_ALPHA = "binary-alpha"
    TERNARY = "ternary"
    UNARY_TWO_OUTPUTS = "unary-two-outputs"  # frexp: mantissa and exponent from one input
    TERNARY_ALPHA = "ternary-alpha"
    HALVES_BACKWARD = "halves-backward"  # Note [grad over halves] (port/write/halves.py): (a, b, grad) -> both grads

    @property
    def arity(self) -> int:
        return {"unary": 1, "unary-alpha": 1, "binary": 2, "binary-alpha": 2, "ternary": 3,
                "unary-two-outputs": 1, "ternary-alpha": 3, "halves-backward": 3}[self.value]

    @property
    def has_alpha(self) -> bool:
        return self in (ExecConvention.UNARY_ALPHA, ExecConvention.BINARY_ALPHA, ExecConvention.TERNARY_ALPHA)


@dataclass(frozen=True)
class Call:
    """One call of the op: the overload, its arguments and which of them are iterator operands."""

    func: Any  # torch._ops.OpOverload
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    slots: tuple[int | str, ...]  # positional index or keyword name of each operand, in order
    alpha: int | float | bool | tuple[float | None, ...] | None  # a tuple: the fields of a params struct

    def operands(self) -> tuple[torch.Tensor, ...]:
        """The operands as the host sees them; Python numbers become 0-dim CPU scalars. A call with
        no operand slots (a launch spec's) has every tensor argument, a tensor list's included."""
        if not self.slots:
            values = [*self.args, *self.kwargs.values()]
            return tuple(t for v in values for t in (v if isinstance(v, (list, tuple)) else (v,))
                         if isinstance(t, torch.Tensor))
        return tuple(_as_tensor(self._get(s)) for s in self.slots)

    def _get(self, slot: int | str) -> Any:
        return self.args[slot] if isinstance(slot, int) else self.kwargs[slot]

    def with_operands(self, values: Sequence[Any]) -> Call:
        """The same call with its operands replaced."""
        args, kwargs = list(self.args), dict(self.kwargs)
        for slot, v in zip(self.slots, values):
            if isinstance(slot, int):
                args[slot] = v
            else:
                kwargs[slot] = v
        return Call(self.func, tuple(args), kwargs, self.slots, self.alpha)

    def run(self) -> torch.Tensor:
        """The CPU reference result."""
        return self.func(*self.args, **self.kwargs)

    def describe(self) -> str:
        """`atan2(float32[5, 1], 2.5)`: the overload and operand dtypes/shapes, no values; a slotless
        call shows every argument (`mode(float32[3, 5], 1, keepdim=True)`)."""
        if self.slots:
            parts = [_shown(v) if isinstance(v, torch.Tensor) else type(v).__name__ for v in map(self._get, self.slots)]
            parts += [] if self.alpha is None else [f"alpha={self.alpha!r}"]
        else:
            parts = [*map(_shown, self.args), *(f"{k}={_shown(v)}" for k, v in self.kwargs.items())]
        return f"{self.func.name().removeprefix('aten::')}({', '.join(parts)})"


def _shown(value: Any) -> str:
    """A tensor as dtype[shape], a tensor list as [dtype[shape], ...], anything else as repr."""
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


def _as_tensor(v: Any) -> torch.Tensor:
    if isinstance(v, torch.Tensor):
        return v
    for kind, dtype in ((bool, torch.bool), (int, torch.int64), (float, torch.float64), (complex, torch.complex128)):
        if isinstance(v, kind):
            return torch.tensor(v, dtype=dtype)
    raise UnmodelledCall(f"operand of type {type(v).__name__}")


class HalvesOp:
    """Note [halves]: an op whose iterator runs over the two halves of its one tensor along `dim`
    (glu: its meta function builds a binary iterator over them), as the host model sees it: a
    binary call on the halves. Calling it joins them and runs the op, so the reference is torch's."""

    def __init__(self, op: Any, dim: int) -> None:
        self.op, self.dim = op, dim

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.op(torch.cat([a, b], self.dim), self.dim)

    def name(self) -> str:
        return self.op.name()


def _halves(func: Any, args: Sequence[Any], kwargs: dict[str, Any], family: ExecConvention) -> Call | None:
    """The call as a binary call on the halves of its one tensor along `dim` (Note [halves]), for a
    binary kernel and a schema of one tensor and an int `dim`; None otherwise."""
    schema = func._schema.arguments
    tensors = [a for a in schema if str(a.type) == "Tensor"]
    dims = [i for i, a in enumerate(schema) if a.name == "dim" and str(a.type) == "int"]
    if family is not ExecConvention.BINARY or len(tensors) != 1 or not dims or not args or \
            not isinstance(args[0], torch.Tensor) or args[0].dim() == 0:
        return None
    x, at = args[0], dims[0]
    dim = int(kwargs.get("dim", args[at] if at < len(args) else schema[at].default_value)) % x.dim()
    if x.shape[dim] % 2:
        raise UnmodelledCall(f"{func.name()} over an odd dimension (size {x.shape[dim]}) has no halves")
    a, b = x.chunk(2, dim)
    return Call(HalvesOp(func, dim), (a, b), {}, (0, 1), None)


class HalvesGradOp:
    """Note [grad over halves] (port/write/halves.py): a backward over the halves of its input along `dim`
    (glu_backward) as its kernel sees it: a call on the halves `a`, `b` and the gradient `grad` of
    their shape. Calling it joins the halves and runs the op (`grad` at schema position `grad_at`,
    the joined tensor at `full_at`), so the reference is torch's, of the joined shape."""

    def __init__(self, op: Any, dim: int, grad_at: int, full_at: int) -> None:
        self.op, self.dim, self.grad_at, self.full_at = op, dim, grad_at, full_at

    def __call__(self, a: torch.Tensor, b: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        args: list[Any] = [None, None, self.dim]
        args[self.grad_at], args[self.full_at] = grad, torch.cat([a, b], self.dim)
        return self.op(*args)

    def name(self) -> str:
        return self.op.name()


def _halves_grad(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Call:
    """A recorded call of a backward over halves as its kernel sees it (`HalvesGradOp`); UnmodelledCall
    when it has no such shape: two tensors and an int `dim`, one tensor twice the other's size along it."""
    schema = func._schema.arguments
    values = [args[i] if i < len(args) else kwargs.get(a.name, a.default_value) for i, a in enumerate(schema)]
    tensors = [i for i, a in enumerate(schema) if str(a.type) == "Tensor"]
    dims = [i for i, a in enumerate(schema) if a.name == "dim" and str(a.type) == "int"]
    if len(schema) != 3 or len(tensors) != 2 or len(dims) != 1 or \
            not all(isinstance(values[i], torch.Tensor) and values[i].dim() > 0 for i in tensors):
        raise UnmodelledCall(f"{func.name()} is no call on the halves of one tensor")
    first, second = (values[i] for i in tensors)
    dim = int(values[dims[0]]) % first.dim()
    if first.dim() != second.dim() or (first.shape[dim] != 2 * second.shape[dim]
                                       and second.shape[dim] != 2 * first.shape[dim]):
        raise UnmodelledCall(f"{func.name()}'s tensors are not a tensor and a gradient of half its size along {dim}")
    full_at, grad_at = (tensors[0], tensors[1]) if first.shape[dim] == 2 * second.shape[dim] else \
        (tensors[1], tensors[0])
    a, b = values[full_at].chunk(2, dim)
    return Call(HalvesGradOp(func, dim, grad_at, full_at), (a, b, values[grad_at]), {}, (0, 1, 2), None)


class IteratorView:
    """Note [iterator operands] (checks/contract/hostcode.py): the op as a host iterator sees it, reading the
    tensors `reads` (by schema name) and writing the op's return `output`. Calling it runs torch's op
    with every other tensor argument filled as autograd fills it (`fills`: name -> the forward op and
    the index of its return of that name, from derivatives.yaml: log_sigmoid_backward's `buffer` is
    log_sigmoid_forward's), so the reference is torch's on inputs the port's kernel cannot see."""

    def __init__(self, op: Any, reads: tuple[str, ...], output: int, fills: dict[str, tuple[Any, int]]) -> None:
        self.op, self.reads, self.output, self.fills = op, reads, output, fills

    def __call__(self, *operands: torch.Tensor) -> torch.Tensor:
        values = dict(zip(self.reads, operands))
        args = []
        for a in self.op._schema.arguments:
            if a.name in values:
                args.append(values[a.name])
            elif a.name in self.fills:
                forward, index = self.fills[a.name]
                args.append(forward(*(values[f.name] for f in forward._schema.arguments))[index])
            else:
                break
        out = self.op(*args)
        return out[self.output] if isinstance(out, tuple) else out

    def name(self) -> str:
        return self.op.name()

    def describe(self) -> str:
        """One line for the report: what is judged, what is not, and where unread inputs come from."""
        returns = [r.name or f"result{i}" for i, r in enumerate(self.op._schema.returns)]
        kept = [n for i, n in enumerate(returns) if i != self.output]
        fills = [f"{n} from {f.name().removeprefix('aten::')}'s return {i}" for n, (f, i) in self.fills.items()]
        return (f"judged as the host iterator sees {self.name().removeprefix('aten::')}: reads "
                f"{', '.join(self.reads)}, writes {returns[self.output]}"
                + (f"; not judged: {', '.join(kept)} (returned as given)" if kept else "")
                + (f"; CPU reference fed {', '.join(fills)} (derivatives.yaml)" if fills else ""))

    def bind(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Call:
        """The recorded call as a call of the view; UnmodelledCall when it passes another argument."""
        if func is not self.op:
            raise UnmodelledCall(f"{func.name()} is not the overload the host iterator serves")
        schema = func._schema.arguments
        values = {a.name: args[i] if i < len(args) else kwargs.get(a.name, a.default_value)
                  for i, a in enumerate(schema)}
        for a in schema:
            if a.name not in self.reads and a.name not in self.fills and (
                    isinstance(values[a.name], torch.Tensor) or values[a.name] != a.default_value):
                raise UnmodelledCall(f"{func.name()} argument {a.name} is not an operand of the host iterator")
        operands = tuple(values[n] for n in self.reads)
        return Call(self, operands, {}, tuple(range(len(operands))), None)


def iterator_view(func: Any, outputs: tuple[str, ...], inputs: tuple[str, ...]) -> IteratorView | None:
    """The view of `func` (an OpOverload) a host iterator writing `outputs` from `inputs` makes (Note
    [iterator operands]), or None when it is the op itself (every tensor read, one result) or cannot
    be made: not one output, a read name the schema lacks, or an unread tensor no forward fills."""
    schema = func._schema
    tensors = [a.name for a in schema.arguments if str(a.type) == "Tensor"]
    returns = [r.name for r in schema.returns]
    if len(outputs) != 1 or any(n not in tensors for n in inputs):
        return None
    if set(inputs) == set(tensors) and len(returns) == 1:
        return None
    output = returns.index(outputs[0]) if outputs[0] in returns else 0
    fills = {n: _filled_by(func, n) for n in tensors if n not in inputs}
    if None in fills.values():
        return None
    return IteratorView(func, tuple(n for n in tensors if n in inputs), output, fills)


def _filled_by(func: Any, name: str) -> tuple[Any, int] | None:
    """(forward overload, return index) of the forward whose return `name` autograd passes to `func`
    as its argument `name` (torchgen's derivatives.yaml), or None."""
    from torchgen.model import FunctionSchema

    base = func.name().removeprefix("aten::").split(".")[0]
    for entry in _derivatives():
        if not any(f"{base}(" in str(v) and name in str(v) for k, v in entry.items() if k != "name"):
            continue
        schema = FunctionSchema.parse(str(entry.get("name", "")))
        names = [r.name for r in schema.returns]
        if name in names:
            forward = getattr(torch.ops.aten, str(schema.name.name))
            overload = getattr(forward, schema.name.overload_name or "default")
            return overload, names.index(name)
    return None


@functools.cache
def _derivatives() -> list[dict[str, Any]]:
    """The entries of torchgen's packaged derivatives.yaml (autograd's formulas), in the file's order."""
    import torchgen
    import yaml

    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "autograd", "derivatives.yaml")
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def selector_values(call: Call, selectors: frozenset[str]) -> dict[str, Any]:
    """The values the call gives the arguments named in `selectors` (Note [argument-selected
    kernels] in `hostcode`): None for one left at its default; nothing asked, nothing read (a call on
    halves, Note [halves], has no schema of its own)."""
    if not selectors:
        return {}
    return {a.name: call.kwargs[a.name] if a.name in call.kwargs else
            call.args[i] if i < len(call.args) and not a.kwarg_only else a.default_value
            for i, a in enumerate(call.func._schema.arguments) if a.name in selectors}


def bind(func: Any, args: Sequence[Any], kwargs: dict[str, Any], family: ExecConvention,
         selectors: frozenset[str] = frozenset(), view: IteratorView | None = None,
         unset: dict[str, float] | None = None) -> Call:
    """Map one recorded call onto `family`'s operands and alpha; UnmodelledCall if it does not fit.
    Arguments named in `selectors` pick the host's kernel (the caller reads them, `selector_values`);
    a `view` binds the call as the host's own iterator sees it (Note [iterator operands]). An
    optional float in `unset` is a Scalar the stub gets, its value there when the call leaves it
    unset (Note [unset optionals at the stub] in `hostcode`): a params field like any Scalar."""
    if view is not None:
        call = view.bind(func, args, kwargs)
        if len(call.slots) != family.arity or family.has_alpha:
            raise UnmodelledCall(f"{func.name()}'s host iterator reads {len(call.slots)} tensors, a "
                                 f"{family.value} kernel takes {family.arity}")
        return call
    if family is ExecConvention.HALVES_BACKWARD:
        return _halves_grad(func, args, kwargs)
    halves = _halves(func, args, kwargs, family)
    if halves is not None:
        return halves
    values: dict[str, Any] = {}
    schema = func._schema.arguments
    for i, a in enumerate(schema):
        if i < len(args) and not a.kwarg_only:
            values[a.name] = (i, args[i])
        elif a.name in kwargs:
            values[a.name] = (a.name, kwargs[a.name])
    operands: list[int | str] = []
    alpha: Any = None
    for a in schema:
        if a.name in selectors:
            continue
        kind, present = str(a.type), a.name in values
        slot, given = values.get(a.name, (None, None))
        if kind == "Tensor" or (kind == "number" and len(operands) < family.arity and not a.kwarg_only
                                and not (family.has_alpha and len(operands) == family.arity)):
            if not present:
                raise UnmodelledCall(f"{func.name()} without its {a.name} operand")
            operands.append(slot)
        elif kind in ("number", "int") and family.has_alpha and alpha is None and (
                kind == "number" or family is ExecConvention.UNARY_ALPHA):
            alpha = given if present else a.default_value
        elif kind == "number" and family in (ExecConvention.UNARY_ALPHA, ExecConvention.BINARY_ALPHA) \
                and alpha is not None:
            # Note [params route] (port/plan/params.py): a second scalar (softplus's threshold) makes the
            # alpha a params struct of every scalar, in order, each at opmath float.
            first = alpha if isinstance(alpha, tuple) else (OpmathScalar(alpha),)
            alpha = (*first, OpmathScalar(given if present else a.default_value))
        elif kind == "Optional[float]" and unset and a.name in unset and family in (ExecConvention.UNARY_ALPHA,
                                                                               ExecConvention.BINARY_ALPHA):
            first = () if alpha is None else alpha if isinstance(alpha, tuple) else (OpmathScalar(alpha),)
            alpha = (*first, OpmathScalar(unset[a.name] if given is None else given))
        elif kind == "Optional[float]" and family is ExecConvention.UNARY_ALPHA \
                and (alpha is None or isinstance(alpha, tuple)):
            # A params struct (nan_to_num's NanToNumParams): the optional floats, None where defaulted.
            alpha = (*(alpha or ()), given)
        elif present and not (a.has_default_value() and given == a.default_value):
            raise UnmodelledCall(f"{func.name()} argument {a.name}: {kind}")
        if kind.startswith("Tensor") and kind != "Tensor" and given is not None:
            raise UnmodelledCall(f"{func.name()} argument {a.name}: {kind}")
    if len(operands) != family.arity:
        raise UnmodelledCall(f"{func.name()} has {len(operands)} operands, a {family.value} kernel takes "
                             f"{family.arity}")
    if family.has_alpha and alpha is None:
        raise UnmodelledCall(f"{func.name()} has no scalar for the alpha argument")
    if isinstance(alpha, torch.Tensor):
        raise UnmodelledCall(f"{func.name()} passes a tensor as its alpha")
    return Call(func, tuple(args), dict(kwargs), tuple(operands), alpha)


class _Recorder(TorchDispatchMode):
    def __init__(self, packet: Any) -> None:
        super().__init__()
        self.packet = packet
        self.calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func.overloadpacket is self.packet and not func._schema.is_mutable:
            self.calls.append((func, tuple(args), dict(kwargs)))
        return func(*args, **kwargs)


def opinfo_calls(info: Any, packet: Any, dtype: torch.dtype) -> list[tuple[Any, tuple, dict]]:
    """Every call of `packet` made by `info`'s CPU samples at `dtype` (functional overloads only)."""
    if dtype not in info.supported_dtypes("cpu"):
        return []
    rec = _Recorder(packet)
    samples = list(info.sample_inputs("cpu", dtype))
    with rec:
        for s in samples:
            try:
                info.op(s.input, *s.args, **s.kwargs)
            except (RuntimeError, ValueError, TypeError):
                continue
    return rec.calls


def _forwards_of(base: str) -> list[str]:
    """The forward ops whose derivative formula in torchgen's derivatives.yaml calls `base` (glu for
    glu_backward), in the file's order."""
    found = []
    for entry in _derivatives():
        calls = [str(v) for k, v in entry.items() if k not in ("name", "dispatch")]
        if any(re.search(rf"(?<![\w.]){re.escape(base)}\(", c) for c in calls):
            name = str(entry.get("name", "")).split("(")[0].split(".")[0]
            if name and name not in found:
                found.append(name)
    return found


def autograd_calls(base: str, packet: Any, dtype: torch.dtype) -> list[tuple[Any, tuple, dict]]:
    """Every call of `packet` autograd makes computing the gradients of the CPU samples of the
    OpInfos of the forwards whose derivative calls `base` (glu_backward: nn.functional.glu's
    samples, backward through them): the calls a backward without an OpInfo of its own serves."""
    if not dtype.is_floating_point:
        return []
    out: list[tuple[Any, tuple, dict]] = []
    for forward in _forwards_of(base):
        for info in find_opinfos(forward):
            if dtype not in info.supported_dtypes("cpu") or not info.supports_autograd:
                continue
            rec = _Recorder(packet)
            for s in info.sample_inputs("cpu", dtype, requires_grad=True):
                try:
                    result = info.op(s.input, *s.args, **s.kwargs)
                    if not isinstance(result, torch.Tensor) or not result.requires_grad:
                        continue
                    with rec:
                        torch.autograd.grad(result, s.input, torch.randn_like(result), allow_unused=True)
                except (RuntimeError, ValueError, TypeError):
                    continue
            out += [(f, tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args), kw)
                    for f, args, kw in rec.calls]
    return out


def schema_template(func: Any, family: ExecConvention, dtype: torch.dtype, gen: torch.Generator,
                    view: IteratorView | None = None, unset: dict[str, float] | None = None) -> Call | None:
    """A call built from the schema alone (for ops without an OpInfo): random tensor operands."""
    args: list[Any] = []
    for a in func._schema.arguments:
        if a.kwarg_only:
            break
        if str(a.type) == "Tensor":
            args.append(draw((4, 5), dtype, gen, Numerics(func.name(), family.arity == 1), len(args)))
        elif a.has_default_value():
            break
        elif str(a.type) == "number":
            args.append(0.5 if dtype.is_floating_point else 2)
        else:
            return None
    try:
        return bind(func, args, {}, family, view=view, unset=unset)
    except UnmodelledCall:
        return None


__all__ = ["Call", "ExecConvention", "HalvesOp", "IteratorView", "autograd_calls", "bind", "find_opinfo",
           "find_opinfos", "iterator_view", "opinfo_calls", "schema_template", "selector_values"]
