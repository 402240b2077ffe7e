"""`Failure`: the one structured failure every tier reports (compile, contract, build, test).

The repair loop (the graph's `diagnose` node, the LLM's fix prompt) reads only this shape, whether
the failure came from the Metal-on-CPU compiler, a contract check, ninja or `test_mps.py`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Failure:
    """One structured failure: `kind` (compile-error, compile-warning, build-step, link-error,
    test-failure, test-error, unexpected-success, contract, conformance, held-out, crash), where
    it is and the tool's message."""

    kind: str
    file: str | None
    line: int | None
    column: int | None
    message: str

    def to_dict(self) -> dict[str, object]:
        """The failure as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Failure:
        """Inverse of `to_dict`."""
        return cls(str(data["kind"]), data.get("file"), data.get("line"), data.get("column"),  # type: ignore[arg-type]
                   str(data["message"]))

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line, self.column) if p is not None)
        return f"{where}: {self.kind}: {self.message}" if where else f"{self.kind}: {self.message}"
