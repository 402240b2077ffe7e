"""`scan_backlog`: classify every op of a checkout's registry by its MPS support."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from pathlib import Path

from metalport.backlog.model import BacklogItem, Family, Status
from metalport.checkout.layout import Checkout
from metalport.checkout.sources import Sources
from metalport.checkout.cpu_kernels import cpu_kernel_index
from metalport.port import (Classification, facts_context, FactsContext, Kind, Porter, porter_for, PorterVerdict,
                            read_op, recipe_ops, tensor_outputs)
from metalport.registry.index import load_registry
from metalport.registry.model import Op, Registry


def _classify(op: Op, context: FactsContext, recipes: frozenset[str],
              cpu_index: dict[str, tuple[Path, str]]) -> BacklogItem | None:
    facts = read_op(op, context)
    if facts is None:
        return None  # only other backends (sparse, quantized, ...): outside the MPS backlog
    route, kind = facts.route, facts.kind
    return BacklogItem(
        op=op.name, status=facts.status, family=facts.family, stub=route.stub if route else None,
        mps_impl=facts.mps_impl, xfail=facts.xfail, rows=len(op.entries), ease=0,
        stub_registered=facts.stub_registered, mps_kernels=facts.mps_kernels, location=facts.location,
        stubs=route.stubs if route else (), route=route.describe() if route else None,
        stub_assumed=route.assumed if route else None,
        kind=kind, porter=_ALREADY if facts.status is Status.SHARED else _porter(
            op, kind, porter_for(kind, op.name in recipes,
                                 _declined(context.checkout, context.sources, op.name, kind, recipes, cpu_index,
                                           facts.family, tuple(op.entries)))),
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
        from metalport.port import foreach_recipe

        return foreach_recipe(checkout, sources, op)[1]
    if kind.kind is not Kind.POINTWISE_STUB or kind.stub is None:
        return None
    from metalport.port import translate_stub
    from metalport.port import operand_mismatch

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
    return (facts_context(checkout, registry, sources), recipe_ops(), cpu_kernel_index(checkout.root))


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
