"""`scan_backlog`: classify every op of a checkout's registry by its MPS support."""

from __future__ import annotations

import re
from dataclasses import replace
from types import SimpleNamespace
from pathlib import Path

from metalport.backlog.model import BacklogItem, Family, Status
from metalport.checkout.layout import Checkout
from metalport.checkout.routing import StubRoute
from metalport.checkout.sources import ImplKind, Sources, StubDecl, XfailEntry, scan_sources
from metalport.checkout.cpu_kernels import cpu_kernel_index
from metalport.port.kinds import (Classification, Kind, Porter, PorterVerdict, classify, entry_comments, porter_for,
                                  schema_arguments, tensor_outputs)
from metalport.port.spec_recipes import recipe_ops
from metalport.registry.index import load_registry
from metalport.registry.model import Op, Registry

_COMPOSITE = {"CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional",
              "CompositeImplicitAutogradNestedTensor"}
_HOST = {"CPU", "CUDA"}
_TENSOR_ARG = re.compile(r"^Tensor\??(?:\([a-z]\))?\s")
_XFAIL_PREFIXES = ("nn.functional.", "_refs.", "ops.aten.")


def _family(op: Op) -> Family:
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


def _classify(op: Op, sources: Sources, xfails: dict[str, list[XfailEntry]], has_sources: bool,
              checkout: Checkout, registry: Registry, comments: dict[str, str],
              recipes: frozenset[str], stubs: dict[str, StubDecl],
              cpu_index: dict[str, tuple[Path, str]]) -> BacklogItem | None:
    mps_lines = [(e, d) for e in op.entries for d in e.dispatch if "MPS" in d.keys]
    host_kernels = [d.kernel for e in op.entries for d in e.dispatch if _HOST & set(d.keys)]
    specific = sorted({d.kernel for _, d in mps_lines if not _HOST & set(d.keys) and d.kernel not in host_kernels})
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
        return None  # only other backends (sparse, quantized, ...): outside the MPS backlog
    kind = classify(op, route, stubs.get(route.stub) if route else None, comments=comments)
    registered = None
    if has_sources and route and status in (Status.SHARED, Status.MPS_GRAPH_STUB):
        registered = all(sources.registration(s) is not None for s in route.stubs)
    return BacklogItem(
        op=op.name, status=status, family=_family(op), stub=route.stub if route else None, mps_impl=mps_impl,
        xfail=tuple(xfails.get(op.name, ())), rows=len(op.entries), ease=0, stub_registered=registered,
        mps_kernels=tuple(sorted({d.kernel for _, d in mps_lines})),
        location=f"{checkout.rel(Path(op.entries[0].span.file))}:{op.entries[0].span.start}",
        stubs=route.stubs if route else (), route=route.describe() if route else None,
        stub_assumed=route.assumed if route else None,
        kind=kind, porter=_ALREADY if status is Status.SHARED else _porter(
            op, kind, porter_for(kind, op.name in recipes,
                                 _declined(checkout, sources, op.name, kind, recipes, cpu_index, _family(op),
                                           tuple(op.entries)))),
    )


def _porter(op: Op, kind: Classification, verdict: PorterVerdict) -> PorterVerdict:
    """Who can port `op`: a pointwise op writing several tensors per element (frexp) has no functor a
    model could write (the planner refuses it), so nobody here: it is ported by hand."""
    many = next((outs for e in op.entries if len(outs := tensor_outputs(e.func)) > 1), None)
    if verdict.porter is Porter.LLM and kind.kind is Kind.POINTWISE_STUB and many:
        return PorterVerdict(Porter.NONE, f"writes {len(many)} tensors ({', '.join(many)}) per element; a functor "
                                          "returns one: port it by hand")
    return verdict


def _declined(checkout: Checkout, sources: Sources, op: str, kind: Classification, recipes: frozenset[str],
              cpu_index: dict[str, tuple[Path, str]], family: Family | None = None,
              entries: tuple | None = None) -> str | None:
    """Why the translate porter does not take a pointwise-stub or multi-tensor op the tables lack
    (None: it does); None for any other op (the porter is not asked)."""
    if op in recipes or not kind.candidate:
        return None
    if kind.kind is Kind.MULTI_TENSOR:
        from metalport.port.translate.foreach import foreach_recipe

        return foreach_recipe(checkout, sources, op)[1]
    if kind.kind is not Kind.POINTWISE_STUB or kind.stub is None:
        return None
    from metalport.port.translate import translate_stub
    from metalport.port.shape import operand_mismatch

    found = translate_stub(checkout.root, kind.stub, op, cpu_index)
    if not found.ok or entries is None:
        return found.declined
    # what operand_mismatch reads of a Resolution (resolving here would classify the op again)
    return operand_mismatch(SimpleNamespace(op=op, family=family, entries=entries), found.arity)


_ALREADY = PorterVerdict(Porter.NONE, "already native: MPS runs the kernel CPU and CUDA share")
_WORK_ORDER = {Status.MISSING: 0, Status.MPS_GRAPH: 0, Status.MPS_GRAPH_STUB: 0, Status.MPS_UNKNOWN: 1}


def _ease_key(item: BacklogItem) -> tuple[int, int, int, int, str]:
    """Port candidates first (those recipes or a model can port before those only a person can), then by family (pointwise with a declared stub first), then by rows;
    ops that are no candidates last (they are not ranked)."""
    pointwise = item.family in (Family.UNARY, Family.BINARY, Family.TERNARY)
    score = 0 if pointwise and item.stub else 1 if pointwise else 2 if item.family is Family.REDUCTION else 3
    return (not item.candidate, _by_hand(item), _WORK_ORDER.get(item.status, 2), score, item.rows, item.op)


def _scan_context(checkout: Checkout, registry: Registry, sources: Sources | None = None) -> tuple:
    """What classifying any op of `registry` needs from the checkout (its sources read once)."""
    sources = sources if sources is not None else scan_sources(checkout)
    stubs = {s.name: s for s in reversed(sources.stubs)}  # the first declaration wins, as `Sources.stub`
    return (sources, _xfail_index(sources), any(checkout.mps_operations.glob("*.mm")), checkout, registry,
            entry_comments(registry), recipe_ops(), stubs, cpu_kernel_index(checkout.root))


def scan_backlog(checkout: Checkout, registry: Registry | None = None) -> list[BacklogItem]:
    """Every op with a backend kernel (plus composites), ranked by ease; one registry parse."""
    registry = registry if registry is not None else load_registry(checkout.native_functions)
    context = _scan_context(checkout, registry)
    items = [item for op in registry.ops.values() if (item := _classify(op, *context)) is not None]
    items.sort(key=_ease_key)
    return [replace(item, ease=rank if item.candidate and not _by_hand(item) else None)
            for rank, item in enumerate(items, start=1)]


def _by_hand(item: BacklogItem) -> bool:
    """A candidate no porter of metalport takes (only a person can port it): not ranked."""
    return item.status is not Status.SHARED and item.porter is not None and item.porter.porter is Porter.NONE


def backlog_item(checkout: Checkout, registry: Registry, op: str, *,
                 sources: Sources | None = None) -> BacklogItem | None:
    """The backlog item of the registry's op `op` as `scan_backlog` classifies it, without its rank
    (`ease` None: ranking needs every op); None when the op has no backend kernel to port.
    `sources`: the checkout's `scan_sources`, when the caller has it."""
    found = registry.ops.get(op)
    item = _classify(found, *_scan_context(checkout, registry, sources)) if found is not None else None
    return replace(item, ease=None) if item is not None else None
