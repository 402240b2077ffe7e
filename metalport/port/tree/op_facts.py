"""What the tree says of one op's MPS support, before anyone ranks or ports it: its status, family,
stub route, current MPS implementation, xfail entries and port kind.

The port (`resolve_op`) and the backlog (`scan_backlog`, which adds who can port an op and ranks
the ops) both read an op through `op_facts`, so the two never classify one op differently and the
port never reaches up into the backlog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from metalport.checkout.layout import Checkout
from metalport.checkout.routing import StubRoute
from metalport.checkout.sources import ImplKind, Sources, StubDecl, XfailEntry, scan_sources
from metalport.port.tree.kinds import Classification, classify, entry_comments, schema_arguments
from metalport.registry.model import Op, Registry


class Status(Enum):
    """Where an op's MPS support stands."""

    SHARED = "shared"
    MPS_METAL = "mps-metal"
    MPS_GRAPH = "mps-graph"
    MPS_GRAPH_STUB = "mps-graph-stub"  # the stub is registered for MPS, with an MPSGraph kernel
    MPS_UNKNOWN = "mps-unknown"
    MISSING = "missing"
    COMPOSITE = "composite"


class Family(Enum):
    """The kernel shape of an op."""

    UNARY = "unary-pointwise"
    BINARY = "binary-pointwise"
    TERNARY = "ternary-pointwise"
    REDUCTION = "reduction"
    OTHER = "other"


@dataclass(frozen=True)
class OpFacts:
    """One op as the tree has it. `route` is the stubs its CPU kernel calls (None if none is known);
    `mps_impl` the `file:line` of its MPS implementation or registration when present;
    `stub_registered` (every stub of the route registered for MPS) is None when the tree has no
    `.mm` sources to tell (a wheel workspace); `kind` how its port is made (`port.tree.kinds`)."""

    op: str
    status: Status
    family: Family
    route: StubRoute | None
    mps_impl: str | None
    xfail: tuple[XfailEntry, ...]
    mps_kernels: tuple[str, ...]
    location: str
    stub_registered: bool | None
    kind: Classification


_COMPOSITE = {"CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional",
              "CompositeImplicitAutogradNestedTensor"}
_HOST = {"CPU", "CUDA"}
_TENSOR_ARG = re.compile(r"^Tensor\??(?:\([a-z]\))?\s")
_XFAIL_PREFIXES = ("nn.functional.", "_refs.", "ops.aten.")


def op_family(op: Op) -> Family:
    """The kernel shape of `op` from its tags and the tensors its functional schema takes."""
    tags = {t for e in op.entries for t in e.tags}
    if "reduction" in tags:
        return Family.REDUCTION
    pointwise = "pointwise" in tags or any(e.structured_inherits == "TensorIteratorBase" for e in op.entries)
    if not pointwise:
        return Family.REDUCTION if any("bool keepdim" in e.func for e in op.entries) else Family.OTHER
    functional = [e for e in op.entries if "!)" not in e.func] or list(op.entries)
    count = max(sum(1 for a in schema_arguments(e.func) if _TENSOR_ARG.match(a) and "!" not in a.split()[0])
                for e in functional)
    return {1: Family.UNARY, 2: Family.BINARY, 3: Family.TERNARY}.get(count, Family.OTHER)


def _xfail_index(sources: Sources) -> dict[str, list[XfailEntry]]:
    index: dict[str, list[XfailEntry]] = {}
    for x in sources.xfails:
        key = x.op
        for prefix in _XFAIL_PREFIXES:
            key = key.removeprefix(prefix)
        index.setdefault(key.replace(".", "_"), []).append(x)
    return index


def _mps_status(specific: list[str], sources: Sources, route: StubRoute | None) -> tuple[Status, str | None]:
    """The status of an op whose rows name MPS-only kernels: by their `.mm` definitions, else (none
    defined) by the registration of the stub its CPU kernel calls."""
    found = [sources.function(k) for k in specific]
    kinds = {f.kind for f in found if f is not None}
    where = next((str(f.where) for f in found if f is not None), None)
    if ImplKind.GRAPH in kinds:
        return Status.MPS_GRAPH, where
    if None not in found and kinds == {ImplKind.METAL}:
        return Status.MPS_METAL, where
    registration = sources.registration(route.stub) if route and not any(found) else None
    if registration is not None and registration.kind is ImplKind.GRAPH:
        return Status.MPS_GRAPH_STUB, str(registration.where)
    return Status.MPS_UNKNOWN, where or (str(registration.where) if registration else None)


def _shared_status(sources: Sources, route: StubRoute | None) -> tuple[Status, str | None]:
    """A row `CPU, CUDA, MPS: x_out`: shared, unless the stub's MPS kernel is an MPSGraph one."""
    registration = sources.registration(route.stub) if route else None
    if registration is not None and registration.kind is ImplKind.GRAPH:
        return Status.MPS_GRAPH_STUB, str(registration.where)
    return Status.SHARED, str(registration.where) if registration else None


@dataclass(frozen=True)
class FactsContext:
    """What reading any op of `registry` needs from the checkout, read once (`facts_context`)."""

    checkout: Checkout
    registry: Registry
    sources: Sources
    xfails: dict[str, list[XfailEntry]]
    has_sources: bool
    comments: dict[str, str]
    stubs: dict[str, StubDecl]


def facts_context(checkout: Checkout, registry: Registry, sources: Sources | None = None) -> FactsContext:
    """The checkout's sources (scanned unless given), xfail index and stub declarations, read once."""
    sources = sources if sources is not None else scan_sources(checkout)
    stubs = {s.name: s for s in reversed(sources.stubs)}  # the first declaration wins, as `Sources.stub`
    return FactsContext(checkout, registry, sources, _xfail_index(sources),
                        any(checkout.mps_operations.glob("*.mm")), entry_comments(registry), stubs)


def read_op(op: Op, context: FactsContext) -> OpFacts | None:
    """The facts of the registry's `op`; None when it has only other backends' kernels (sparse,
    quantized, ...): outside the MPS backlog."""
    sources, registry = context.sources, context.registry
    mps_lines = [d for e in op.entries for d in e.dispatch if "MPS" in d.keys]
    host_kernels = [d.kernel for e in op.entries for d in e.dispatch if _HOST & set(d.keys)]
    specific = sorted({d.kernel for d in mps_lines if not _HOST & set(d.keys) and d.kernel not in host_kernels})
    route = sources.route_op(op, registry)
    mps_impl = None
    if mps_lines and specific:
        status, mps_impl = _mps_status(specific, sources, route)
    elif mps_lines:
        status, mps_impl = _shared_status(sources, route)
    elif host_kernels:
        status = Status.MISSING
    elif all(set(d.keys) <= _COMPOSITE for e in op.entries for d in e.dispatch):
        status = Status.COMPOSITE
    else:
        return None
    kind = classify(op, route, context.stubs.get(route.stub) if route else None, comments=context.comments)
    registered = None
    if context.has_sources and route and status in (Status.SHARED, Status.MPS_GRAPH_STUB):
        registered = all(sources.registration(s) is not None for s in route.stubs)
    return OpFacts(
        op=op.name, status=status, family=op_family(op), route=route, mps_impl=mps_impl,
        xfail=tuple(context.xfails.get(op.name, ())), mps_kernels=tuple(sorted({d.kernel for d in mps_lines})),
        location=f"{context.checkout.rel(Path(op.entries[0].span.file))}:{op.entries[0].span.start}",
        stub_registered=registered, kind=kind,
    )


def op_facts(checkout: Checkout, registry: Registry, op: str, *, sources: Sources | None = None) -> OpFacts | None:
    """`read_op` of the registry's op named `op` (None when the registry lacks it or it has no
    backend kernel to port). `sources`: the checkout's `scan_sources`, when the caller has it."""
    found = registry.ops.get(op)
    return read_op(found, facts_context(checkout, registry, sources)) if found is not None else None
