"""The conformance verdict: per-dtype counts, worst errors and failures, held-out kept apart.

Held-out inputs live only in `DtypeVerdict.held_out_inputs`; `summary_for_model()` and the default
`to_dict()` never read that field (the repair loop sees counts only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from metalport.failure import Failure

STATUSES = ("pass", "fail", "no-host-model")
NO_HOST_MODEL = "no emulated host model; verify on macOS"


@dataclass(frozen=True)
class DtypeVerdict:
    """One dtype's result: regular samples (OpInfo and random) and held-out cases, counted apart."""

    dtype: str
    samples: int
    passed: int
    worst_error: float | None
    worst_sample: str | None
    failures: tuple[Failure, ...]
    held_out_samples: int
    held_out_passed: int
    held_out_inputs: tuple[str, ...] = field(default=(), repr=False)  # failing held-out cases, verbatim
    skipped: int = 0  # recorded calls the host model does not cover

    @property
    def ok(self) -> bool:
        return self.passed == self.samples and self.held_out_passed == self.held_out_samples

    def to_dict(self, *, include_held_out_inputs: bool = False) -> dict[str, Any]:
        """JSON-ready; the held-out inputs only on request."""
        out: dict[str, Any] = {
            "dtype": self.dtype, "samples": self.samples, "passed": self.passed,
            "worst_error": self.worst_error, "worst_sample": self.worst_sample,
            "failures": [f.to_dict() for f in self.failures],
            "held_out_samples": self.held_out_samples, "held_out_passed": self.held_out_passed,
            "skipped": self.skipped,
        }
        if include_held_out_inputs:
            out["held_out_inputs"] = list(self.held_out_inputs)
        return out


@dataclass(frozen=True)
class ConformanceReport:
    """The verdict of `run_conformance` for one op on one backend."""

    op: str
    backend: str
    status: str
    dtypes: tuple[DtypeVerdict, ...]
    reason: str | None
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown conformance status {self.status!r}")
        if self.backend not in ("emulated", "mps"):
            raise ValueError(f"unknown backend {self.backend!r}")

    def ok(self) -> bool:
        """True only for a pass (a missing host model is not a pass)."""
        return self.status == "pass"

    def to_dict(self, *, include_held_out_inputs: bool = False) -> dict[str, Any]:
        """JSON-ready report; held-out inputs are left out unless asked for."""
        return {
            "op": self.op, "backend": self.backend, "status": self.status, "reason": self.reason,
            "seed": self.seed,
            "dtypes": [d.to_dict(include_held_out_inputs=include_held_out_inputs) for d in self.dtypes],
        }

    def summary_for_model(self) -> str:
        """Counts, worst errors and regular failures, for the repair loop; never held-out inputs."""
        lines = [f"conformance {self.op} ({self.backend}): {self.status}"]
        if self.reason:
            lines.append(f"note: {self.reason}")
        for d in self.dtypes:
            worst = "" if d.worst_error is None else f"; worst error {d.worst_error:.3g} ({d.worst_sample})"
            held = f"; held-out {d.held_out_passed}/{d.held_out_samples} pass" if d.held_out_samples else ""
            lines.append(f"{d.dtype}: {d.passed}/{d.samples} samples pass{worst}{held}")
            for f in d.failures[:4]:
                lines.append(f"  - {f}")
        return "\n".join(lines)
