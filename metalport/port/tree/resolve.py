"""`resolve_op`: everything the tree says about one op before it is planned.

Its registry rows, backlog status and family, the stub route (which dispatch stubs its CPU kernel
calls, `checkout.routing`), the current MPS implementation (the `.mm` functions its `MPS: *_mps`
rows name, or the stub's registration) and its xfail/skip entries in common_mps.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from metalport.checkout.layout import Checkout
from metalport.checkout.routing import StubRoute
from metalport.checkout.sources import ImplKind, MpsFunction, Registration, Sources, XfailEntry, scan_sources
from metalport.errors import UnknownOpError
from metalport.port.tree.kinds import Classification
from metalport.port.tree.op_facts import Family, OpFacts, Status, op_facts
from metalport.port.tree.reuse import legacy_file_text
from metalport.registry.index import load_registry
from metalport.registry.model import DispatchLine, Entry, Registry

_HOST_KEYS = frozenset({"CPU", "CUDA"})


@dataclass(frozen=True)
class Resolution:
    """One op as the checkout has it. `legacy` are the `.mm` definitions of its MPS-only
    kernels (empty in a wheel workspace, which has no `.mm` sources)."""

    op: str
    entries: tuple[Entry, ...]
    status: Status
    family: Family
    stub: str | None
    mps_impl: str | None
    mps_kernels: tuple[str, ...]  # kernels of MPS-only dispatch lines (`heaviside_out_mps`)
    legacy: tuple[MpsFunction, ...]
    registration: Registration | None  # an existing REGISTER_DISPATCH of the stub
    xfails: tuple[XfailEntry, ...]
    registry: Registry
    sources: Sources
    route: StubRoute | None = None  # the stubs the op's CPU kernel calls (`sub_out` -> add_stub)
    kind: Classification | None = None  # how its port is made (`port.tree.kinds`)
    # MPS-only rows the port keeps, with why: (entry, kernel, reason), Note [kept rows]
    kept_rows: tuple[tuple[str, str, str], ...] = ()

    @property
    def registrations(self) -> tuple[Registration, ...]:
        """Every existing MPS registration of a stub the route calls (macro-made ones included)."""
        stubs = self.route.stubs if self.route else ((self.stub,) if self.stub else ())
        return tuple(r for s in stubs for r in self.sources.registrations_of(s))

    def to_dict(self) -> dict[str, object]:
        """A compact JSON-ready summary (no registry or source texts)."""
        return {
            "op": self.op, "status": self.status.value, "family": self.family.value, "stub": self.stub,
            "mps_impl": self.mps_impl, "mps_kernels": list(self.mps_kernels),
            "rows": [{"entry": e.full_name, "line": e.span.start, "dispatch": [str(d) for d in e.dispatch]}
                     for e in self.entries],
            "legacy": [{"name": f.name, "kind": f.kind.value, "where": str(f.where)} for f in self.legacy],
            "registration": str(self.registration.where) if self.registration else None,
            "route": self.route.describe() if self.route else None,
            "kind": self.kind.kind.value if self.kind else None, "kind_reason": self.kind.reason if self.kind else None,
            "stubs": list(self.route.stubs) if self.route else [],
            "xfails": [{"list": x.list_name, "key": x.op, "line": x.where.line,
                        "dtypes": list(x.dtypes) if x.dtypes is not None else None} for x in self.xfails],
        }

    @property
    def xfail_keys(self) -> tuple[str, ...]:
        """The distinct list keys naming the op, in file order."""
        return tuple(dict.fromkeys(x.op for x in self.xfails))


def mps_only_lines(entry: Entry) -> list[DispatchLine]:
    """The dispatch lines of `entry` that name MPS without CPU or CUDA (`MPS: x_mps`)."""
    return [d for d in entry.dispatch if "MPS" in d.keys and not _HOST_KEYS & set(d.keys)]


def host_line(entry: Entry) -> DispatchLine | None:
    """The CPU (else CUDA) dispatch line of `entry`: the kernel MPS would share."""
    return entry.kernel_for("CPU") or entry.kernel_for("CUDA")


# Note [kept rows]: an overload's `MPS: f_mps` row stays when `f_mps` is not MPSGraph code and
# reaches the op's own kernel again through the dispatcher (`pow_Scalar_out_mps` wraps the scalar
# base in a tensor and calls `at::pow_out`): after the port that call runs the ported kernel, and
# collapsing the row would send a double scalar through the shared iterator instead (upstream kept
# it when it migrated pow.Tensor_Tensor). Its function is not legacy code, so it is not removed.
def _redispatches(checkout: Checkout, fn: MpsFunction, op: str) -> bool:
    """Whether `fn`'s body calls `at::<op>` / `at::<op>_out` (it reaches the op's kernel again)."""
    from metalport.port.write.host import skip_to_close

    text = legacy_file_text(checkout.root, fn.where.file)  # "" when the file is gone: no call
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:fn.where.line - 1])
    brace = text.find("{", start)
    end = skip_to_close(text, brace) if brace >= 0 else -1
    body = text[brace:end] if end > brace else ""
    return re.search(rf"\bat::{re.escape(op)}(?:_out)?_?\(", body) is not None


def _kept_rows(checkout: Checkout, entries: tuple[Entry, ...], op: str,
               sources: Sources) -> tuple[tuple[str, str, str], ...]:
    """(entry, kernel, why) of the MPS-only rows a port of `op` keeps (Note [kept rows])."""
    kept = []
    for entry in entries:
        for d in mps_only_lines(entry):
            fn = sources.function(d.kernel)
            if fn is not None and fn.kind is not ImplKind.GRAPH and _redispatches(checkout, fn, op):
                kept.append((entry.full_name, d.kernel,
                             f"{entry.full_name} keeps `MPS: {d.kernel}` ({fn.where}): it is not MPSGraph code and "
                             f"calls at::{op} again, which reaches the ported kernel"))
    return tuple(kept)


def _overload_stub(entries: tuple[Entry, ...], sources: Sources) -> str | None:
    """The declared stub named after an overload (`pow.Tensor_Tensor_out` -> pow_tensor_tensor_stub)
    when the tree shows no CPU body to route: the ATen naming of a stub per overload."""
    declared = {d.name for d in sources.stubs}
    for entry in entries:
        overload = (entry.overload or "").removesuffix("_out").lower()
        name = f"{entry.name}_{overload}_stub" if overload and overload != "out" else None
        if name in declared and host_line(entry) is not None:
            return name
    return None


def _facts(checkout: Checkout, registry: Registry, op: str, sources: Sources) -> OpFacts:
    facts = op_facts(checkout, registry, op, sources=sources)
    if facts is not None:
        return facts
    raise UnknownOpError(f"aten::{op} has no CPU, CUDA or MPS kernel to port",
                         location=f"{checkout.rel(registry.path)}",
                         hint="run `metalport backlog` to list port candidates")


def resolve_op(checkout: Checkout, op: str, *, registry: Registry | None = None) -> Resolution:
    """Resolve `op` (`aten::heaviside`, `heaviside`, `heaviside.out`) in `checkout`.

    Raises UnknownOpError (with close names) for a name the registry does not hold.
    """
    registry = registry if registry is not None else load_registry(checkout.native_functions)
    found = registry.resolve(op)
    sources = scan_sources(checkout)
    item = _facts(checkout, registry, found.name, sources)
    kept = _kept_rows(checkout, found.entries, found.name, sources)
    specific = tuple(dict.fromkeys(d.kernel for e in found.entries for d in mps_only_lines(e)
                                   if d.kernel not in {k for _, k, _ in kept}))
    legacy = tuple(f for k in specific if (f := sources.function(k)) is not None)
    stub = (item.route.stub if item.route else None) or _overload_stub(found.entries, sources)
    registration = sources.registration(stub) if stub else None
    return Resolution(
        op=found.name, entries=found.entries, status=item.status, family=item.family, stub=stub,
        mps_impl=item.mps_impl, mps_kernels=specific, legacy=legacy, registration=registration,
        xfails=item.xfail, registry=registry, sources=sources, route=sources.route_op(found, registry),
        kind=item.kind, kept_rows=kept,
    )

