"""The op's host code in the checkout's `.mm` files: which kernel name it passes to which helper.

The op's stub route (`checkout.routing`: the stub its CPU kernel really calls, `sub` ->
`add_stub`, `special_chebyshev_polynomial_t` -> `chebyshev_polynomial_t_stub`) leads to the stub's
MPS registration (macro-made ones too, `REGISTER_UNARY_TI_DISPATCH(exp)`) and so to the registered
function; the first `exec_unary_kernel` / `exec_binary_kernel` / `exec_ternary_kernel` call in its
body gives the kernel name. A registered function that calls none of them follows no modelled
convention. A tree without a registry assumes `<op>_stub`.

Note [argument-selected kernels]
Some CPU kernels pick the stub by the value of a string argument: `div_out_mode` calls
`div_true_stub` when `rounding_mode` has no value, `div_trunc_stub` when it is "trunc" and
`div_floor_stub` when it is "floor". Each condition of that shape (`*arg == "value"`,
`!arg.has_value()`) in the routes of the op's CPU kernels, whose stub's MPS registration calls an
exec_*_kernel, gives `HostCode.modes` an (argument, value, kernel) row; conformance then launches
the kernel the host would for each call's value, instead of skipping every call that passes it.

Note [stubs named after the op]
A tree without the op's CPU `.cpp` (Lerp.cpp is not in every corpus) cannot say which stub the CPU
kernel calls, and `<op>_stub` is only a guess. When no stub of that name has an MPS registration but
exactly one stub named `<op>_...` does (`lerp_kernel_scalar_weight`, registered with a function
calling `exec_binary_kernel(iter, "lerp_alpha", weight)`), that registration is the op's host.

Note [iterator operands]: a host function that builds its own iterator
(`TensorIteratorConfig().add_output(output).add_input(self)`, Note [iterator bodies] in
port/plan/bodies.py) names the tensors the kernel reads and the one it writes; `HostCode.iterator`
carries them, so conformance judges the op as that iterator sees it (`samples.IteratorView`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from metalport.checkout.layout import Checkout
from metalport.checkout.sources import ImplKind, MpsFunction, Registration, scan_sources, Sources
from metalport.errors import MetalportError
from metalport.registry.index import load_registry
from metalport.registry.model import Op, Registry


@dataclass(frozen=True)
class HostCode:
    """What the checkout's host code says about an op: the kernel name, or why it is unmodelled."""

    kernel: str | None
    where: str | None
    unmodelled: str | None = None
    # What the op's CPU kernel passes the stub after the iterator, e.g. ("-alpha",) for sub_out ->
    # add_stub: the registered kernel then sees the negated scalar.
    stub_args: tuple[str, ...] = ()
    graph: bool = False  # the stub's MPS registration is an MPSGraph kernel (the legacy host)
    # (argument, value or None for "no value", kernel): Note [argument-selected kernels]
    modes: tuple[tuple[str, str | None, str], ...] = ()
    # (outputs, inputs) of the iterator the launching function builds (Note [iterator operands])
    iterator: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def selectors(self) -> frozenset[str]:
        """The arguments whose value picks the kernel."""
        return frozenset(arg for arg, _, _ in self.modes)

    @property
    def unset(self) -> dict[str, float]:
        """Note [unset optionals at the stub]: optional scalar argument -> the value the stub gets
        when the call leaves it unset, read from what the CPU kernel passes the stub."""
        return dict(u for a in self.stub_args if (u := unset_value(a)) is not None)


# Note [unset optionals at the stub]: a `float?` argument the CPU kernel turns into the stub's one
# Scalar (`logit_out`: `Scalar(eps ? eps.value() : -1.0)`; `eps.value_or(-1.0)`) reaches the kernel
# as that Scalar, its literal standing for "unset"; the host model fills the params field with it.
_LIT = r"(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)[fF]?"
_UNSET = (re.compile(rf"^(\w+)\s*(?:\.\s*has_value\s*\(\s*\))?\s*\?\s*(?:\*\s*(\w+)|(\w+)\s*\.\s*value\s*\(\s*\))"
                     rf"\s*:\s*{_LIT}$"),
          re.compile(rf"^(\w+)\s*\.\s*value_or\s*\(\s*{_LIT}\s*\)$"))


def unset_value(arg: str) -> tuple[str, float] | None:
    """(optional argument, value) when a stub argument reads `name ? name.value() : literal`,
    `name.value_or(literal)` (in a `Scalar(...)` or not), else None."""
    arg = re.sub(r"^\s*(?:c10::)?Scalar\s*\((.*)\)\s*$", r"\1", arg).strip()
    m = _UNSET[0].match(arg)
    if m is not None and (m.group(2) or m.group(3)) == m.group(1):
        return m.group(1), float(m.group(4))
    m = _UNSET[1].match(arg)
    return (m.group(1), float(m.group(2))) if m is not None else None


_EQUALS = re.compile(r'^\s*\*\s*(\w+)\s*==\s*"(\w+)"\s*$')
_NO_VALUE = re.compile(r"^\s*!\s*(\w+)\s*\.\s*has_value\s*\(\s*\)\s*$")


def registered_function(sources: Sources, reg: Registration) -> MpsFunction | None:
    """The function `reg` registers: its definition in the registration's file, else any `.mm` one."""
    name = reg.kernel.split("::")[-1]
    return next((f for f in sources.functions if f.name == name and f.where.file == reg.where.file), None) \
        or sources.function(name)


def _resolve(checkout: Checkout, base: str) -> tuple[Registry, Op] | None:
    """The checkout's registry and `base` in it; None when the tree cannot say."""
    if not checkout.native_functions.is_file():
        return None
    try:
        registry = load_registry(checkout.native_functions)
        return registry, registry.resolve(base)
    except MetalportError:
        return None


def _modes(op: Op | None, sources: Sources) -> tuple[tuple[str, str | None, str], ...]:
    """Note [argument-selected kernels]: the (argument, value, kernel) rows of `op`'s CPU kernels."""
    rows: list[tuple[str, str | None, str]] = []
    for entry in op.entries if op is not None else ():
        line = entry.kernel_for("CPU") or entry.kernel_for("CUDA")
        route = sources.route(line.kernel) if line is not None else None
        for call in route.calls if route is not None else ():
            equals, none = _EQUALS.match(call.condition or ""), _NO_VALUE.match(call.condition or "")
            if not (equals or none):
                continue
            reg = sources.registration(call.stub)
            fn = sources.function(reg.kernel.split("::")[-1]) if reg is not None else None
            if fn is None or not fn.calls:
                continue
            arg, value = (equals.group(1), equals.group(2)) if equals else (none.group(1), None)
            if (arg, value) not in [(a, v) for a, v, _ in rows]:
                rows.append((arg, value, fn.calls[0].kernel))
    return tuple(rows)


_ITERATOR = re.compile(r"TensorIteratorConfig\(\)((?:\s*\.\s*add_(?:output|input|const_input)\(\s*\w+\s*\))+)")
_OPERAND = re.compile(r"add_(output|input|const_input)\(\s*(\w+)\s*\)")


def _iterator(checkout: Checkout, rel: str, line: int) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(outputs, inputs) of the last iterator built in the 30 lines up to the launch at `rel:line`
    (Note [iterator operands]); None when there is none."""
    try:
        lines = (checkout.root / rel).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    window = "\n".join(lines[max(0, line - 30):line])
    built = list(_ITERATOR.finditer(window))
    if not built:
        return None
    parts = _OPERAND.findall(built[-1].group(1))
    return tuple(n for k, n in parts if k == "output"), tuple(n for k, n in parts if k != "output")


def find_host_code(checkout_root: Path, base: str) -> HostCode:
    """The kernel name `base`'s host code passes (default `base` when the checkout has no host code)."""
    checkout = Checkout(Path(checkout_root))
    if not any(checkout.mps_operations.glob("*.mm")):
        return HostCode(base, None)
    sources = scan_sources(checkout)
    registry, op = _resolve(checkout, base) or (None, None)
    # the stub the op's CPU kernel calls first, and what it passes that stub after the iterator
    route = sources.route_op(op, registry) if op is not None else None
    stub, args = (route.stub, route.calls[0].args) if route else (f"{base}_stub", ())
    reg = sources.registration(stub)
    if reg is None and stub == f"{base}_stub":  # Note [stubs named after the op]
        named = [r for r in sources.registrations if r.stub.startswith(f"{base}_") and
                 (fn := sources.function(r.kernel.split("::")[-1])) is not None and fn.calls]
        if len(named) == 1:
            stub, reg = named[0].stub, named[0]
    if reg is not None:
        name = reg.kernel.split("::")[-1]
        fn = registered_function(sources, reg)
        if fn is None:
            return HostCode(None, str(reg.where), f"{name}, registered for {stub}, is not defined in {reg.where.file}")
        if not fn.calls and fn.kind is ImplKind.GRAPH:
            return HostCode(None, str(fn.where), f"{stub} is registered with the MPSGraph kernel {name} ({fn.where})",
                            graph=True)
        if not fn.calls:
            return HostCode(None, str(fn.where), f"{name} ({fn.where}) calls no exec_unary/binary/ternary_kernel")
        return HostCode(fn.calls[0].kernel, str(fn.where), stub_args=args, modes=_modes(op, sources))
    for call in sources.kernel_calls:
        if call.kernel == base:
            return HostCode(base, str(call.where), iterator=_iterator(checkout, call.where.file, call.where.line))
    return HostCode(base, None)
