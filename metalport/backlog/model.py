"""Backlog records: where each op's MPS support stands."""

from __future__ import annotations

from dataclasses import dataclass

from metalport.checkout.sources import XfailEntry
from metalport.port import Classification, Family, Kind, PorterVerdict, Status

__all__ = ["BacklogItem", "Family", "Status"]


@dataclass(frozen=True)
class BacklogItem:
    """One op of the backlog.

    `stub` is the dispatch stub its CPU kernel calls first (None if none is known) and `stubs`
    every stub it calls; `route` says how that was found (`sub_out calls add_stub (with -alpha)
    (aten/src/ATen/native/BinaryOps.cpp:445)`) and `stub_assumed` is True when it was guessed from
    DECLARE_DISPATCH names rather than read from the kernel's body. `mps_impl` is the `file:line`
    of its MPS implementation or registration when present; `stub_registered` (every stub of the
    route registered for MPS) is None when the tree has no `.mm` sources to tell (a wheel
    workspace); `rows` counts registry entries; `ease` is a 1-based rank, lower is easier (None
    for an op that is no port candidate: it is not work). `kind` is how its port is made
    (`metalport.port.tree.kinds`) and `porter` who can make it (`recipe`, `llm`, or `none` with the
    reason).
    """

    op: str
    status: Status
    family: Family
    stub: str | None
    mps_impl: str | None
    xfail: tuple[XfailEntry, ...]
    rows: int
    ease: int | None
    stub_registered: bool | None
    mps_kernels: tuple[str, ...]
    location: str
    stubs: tuple[str, ...] = ()
    route: str | None = None
    stub_assumed: bool | None = None
    kind: Classification | None = None
    porter: PorterVerdict | None = None

    @property
    def candidate(self) -> bool:
        """False for an op that is no port candidate (its kind says why)."""
        return self.kind is None or self.kind.kind is not Kind.NOT_A_CANDIDATE

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict; enums become their values."""
        return {
            "op": self.op, "status": self.status.value, "family": self.family.value, "stub": self.stub,
            "mps_impl": self.mps_impl,
            "xfail": [{"list": x.list_name, "key": x.op, "dtypes": list(x.dtypes) if x.dtypes is not None else None,
                       "line": x.where.line} for x in self.xfail],
            "rows": self.rows, "ease": self.ease, "stub_registered": self.stub_registered,
            "mps_kernels": list(self.mps_kernels), "location": self.location,
            "stubs": list(self.stubs), "route": self.route, "stub_assumed": self.stub_assumed,
            "kind": self.kind.kind.value if self.kind else None, "kind_reason": self.kind.reason if self.kind else None,
            "porter": self.porter.porter.value if self.porter else None,
            "porter_reason": self.porter.reason if self.porter else None,
        }
