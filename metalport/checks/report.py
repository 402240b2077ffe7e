"""The conformance verdict: per dtype, OpInfo samples, random and held-out cases counted apart.

Held-out inputs live only in `DtypeVerdict.held_out_inputs`; `summary_for_model()` and the default
`to_dict()` never read that field (the repair loop sees counts only). A divergence PyTorch accepts
is out of scope: counted and shown with the decorator that declares it, never a pass and never a
failure (Note [accepted divergences] in `numerics`). Any call skipped or case dropped makes the
verdict "partial", never "pass".

Note [not judged]
"partial" (some calls skipped) and "no-host-model" (no case reached a modelled host) are not
judged: the emulated host cannot say whether the kernel is right, so they are neither a pass nor a
fail. `metalport conformance` exits EXIT_NOT_JUDGED (3) for them, never the fail status (1), and a
run's test verdict shows "not judged" with the reason. One exception is a fail, not "not judged":
a dtype whose OpInfo has samples of which none was judged (every one passes an argument the port's
host does not model, a softplus port that ignores `beta` and `threshold`): "opinfo 0/N" is never a
pass, and neither is it unknown, since the op's own test cases exercise what the port lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from metalport.checks.judge.explain import Explanation
from metalport.failure import Failure

STATUSES = ("pass", "partial", "fail", "no-host-model")
NOT_JUDGED = ("partial", "no-host-model")  # Note [not judged]
EXIT_PASS, EXIT_FAIL, EXIT_NOT_JUDGED = 0, 1, 3
NO_HOST_MODEL = "no emulated host model; verify on macOS"
KINDS = ("opinfo", "random", "held-out")


@dataclass(frozen=True)
class Tally:
    """Cases of one kind: how many ran, passed, and were out of scope.

    A case is out of scope only where the op's OpInfo skips or xfails that value set's
    reference-numerics test on a non-CPU device: PyTorch itself does not judge the device there.
    It is counted and shown with that decorator, and is neither a pass nor a failure; every other
    case must pass (Note [the oracle] in `checks.judge.oracle`)."""

    samples: int = 0
    passed: int = 0
    out_of_scope: int = 0

    @property
    def ok(self) -> bool:
        return self.passed + self.out_of_scope == self.samples

    def to_dict(self) -> dict[str, int]:
        return {"samples": self.samples, "passed": self.passed, "out_of_scope": self.out_of_scope}


@dataclass(frozen=True)
class DtypeVerdict:
    """One dtype's result: OpInfo samples, random and held-out cases counted apart, skips and warnings."""

    dtype: str
    tallies: dict[str, Tally]
    worst_error: float | None
    worst_sample: str | None
    failures: tuple[Failure, ...]
    out_of_scope_cases: tuple[str, ...] = ()  # one line each, with the OpInfo decorator; no held-out values
    held_out_inputs: tuple[str, ...] = field(default=(), repr=False)  # failing held-out cases, verbatim
    skipped: int = 0  # recorded calls the host model does not cover, cases whose reference crashed
    # worst error in ulps of the dtype over every judged case, (vs the truth, vs CPU), each with where
    # (case label and call, no values); None for integer and bool outputs
    worst_ulps: tuple[tuple[float, str] | None, ...] = (None, None)
    rel_used: float = 0.0  # worst relative error over the oracle's relative bound where it applies
    opinfo_unjudged: int = 0  # OpInfo calls of this dtype the host model does not cover (Note [not judged])
    explanations: tuple[Explanation, ...] = ()  # first failing element of failing regular cases (--explain)
    held_out_explanations: tuple[Explanation, ...] = field(default=(), repr=False)  # of held-out ones: withheld

    def tally(self, kind: str) -> Tally:
        return self.tallies.get(kind, Tally())

    @property
    def samples(self) -> int:
        """OpInfo samples and random cases (the regular cases)."""
        return self.tally("opinfo").samples + self.tally("random").samples

    @property
    def passed(self) -> int:
        return self.tally("opinfo").passed + self.tally("random").passed

    @property
    def held_out_samples(self) -> int:
        return self.tally("held-out").samples

    @property
    def held_out_passed(self) -> int:
        return self.tally("held-out").passed

    @property
    def no_opinfo_judged(self) -> bool:
        """The op's OpInfo has samples at this dtype and none was judged (Note [not judged]): a fail."""
        return self.opinfo_unjudged > 0 and self.tally("opinfo").samples == 0

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tallies.values()) and not self.no_opinfo_judged

    def to_dict(self, *, include_held_out_inputs: bool = False) -> dict[str, Any]:
        """JSON-ready; the held-out inputs only on request."""
        out: dict[str, Any] = {
            "dtype": self.dtype, "samples": self.samples, "passed": self.passed,
            "worst_error": self.worst_error, "worst_sample": self.worst_sample,
            "failures": [f.to_dict() for f in self.failures],
            "held_out_samples": self.held_out_samples, "held_out_passed": self.held_out_passed,
            "skipped": self.skipped, "out_of_scope_cases": list(self.out_of_scope_cases),
            "worst_ulps_vs_truth": None if self.worst_ulps[0] is None else list(self.worst_ulps[0]),
            "worst_ulps_vs_cpu": None if self.worst_ulps[1] is None else list(self.worst_ulps[1]),
            "relative_bound_used": self.rel_used, "opinfo_unjudged": self.opinfo_unjudged,
            **{kind.replace("-", "_"): self.tally(kind).to_dict() for kind in KINDS},
        }
        out["explanations"] = [e.to_dict() for e in self.explanations]
        if include_held_out_inputs:
            out["held_out_inputs"] = list(self.held_out_inputs)
            out["held_out_explanations"] = [e.to_dict() for e in self.held_out_explanations]
        return out


def counts_text(dtypes: list[dict[str, Any]]) -> str:
    """`opinfo 88/88, random 12/12, held-out 38/40 (2 out of scope), 3 skipped` summed over dtype dicts.

    Dicts recorded before the kinds were counted apart read `60/60 samples`."""
    skipped = sum(int(d.get("skipped", 0)) for d in dtypes)
    if not any("opinfo" in d for d in dtypes):
        passed, samples = (sum(int(d.get(k, 0)) for d in dtypes) for k in ("passed", "samples"))
        return f"{passed}/{samples} samples" + (f", {skipped} skipped" if skipped else "")
    parts = []
    for kind in KINDS:
        tallies = [d.get(kind.replace("-", "_")) or {} for d in dtypes]
        samples, passed = (sum(int(t.get(k, 0)) for t in tallies) for k in ("samples", "passed"))
        # records written before the rename call out-of-scope cases "warned"
        scoped = sum(int(t.get("out_of_scope", t.get("warned", 0))) for t in tallies)
        if kind == "held-out" and not samples:
            continue
        parts.append(f"{kind} {passed}/{samples}" + (f" ({scoped} out of scope)" if scoped else ""))
    return ", ".join(parts + [f"{skipped} skipped"])


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
        """True only for a pass (a partial verdict or a missing host model is not a pass)."""
        return self.status == "pass"

    @property
    def judged(self) -> bool:
        """False for a verdict the emulated host could not reach (Note [not judged])."""
        return self.status not in NOT_JUDGED

    def exit_code(self) -> int:
        """0 pass, 1 fail, 3 not judged (Note [not judged])."""
        return EXIT_PASS if self.ok() else EXIT_NOT_JUDGED if not self.judged else EXIT_FAIL

    @property
    def cases(self) -> int:
        """The cases judged over every dtype: OpInfo samples, random draws and held-out cases."""
        return sum(d.samples + d.held_out_samples for d in self.dtypes)

    @property
    def skipped(self) -> int:
        """Calls and cases left unchecked, over all dtypes."""
        return sum(d.skipped for d in self.dtypes)

    @property
    def out_of_scope_cases(self) -> tuple[str, ...]:
        """Cases out of scope by an OpInfo skip/xfail on a non-CPU device, over all dtypes."""
        return tuple(w for d in self.dtypes for w in d.out_of_scope_cases)

    def to_dict(self, *, include_held_out_inputs: bool = False) -> dict[str, Any]:
        """JSON-ready report; held-out inputs are left out unless asked for."""
        return {
            "op": self.op, "backend": self.backend, "status": self.status, "reason": self.reason,
            "seed": self.seed, "skipped": self.skipped, "out_of_scope": len(self.out_of_scope_cases),
            "dtypes": [d.to_dict(include_held_out_inputs=include_held_out_inputs) for d in self.dtypes],
        }

    def summary_for_model(self) -> str:
        """Counts, worst errors and regular failures, for the repair loop; never held-out inputs."""
        lines = [f"conformance {self.op} ({self.backend}): {self.status}"]
        if self.reason:
            lines.append(f"note: {self.reason}")
        for d in self.dtypes:
            worst = "" if d.worst_error is None else f"; worst error {d.worst_error:.3g} ({d.worst_sample})"
            lines.append(f"{d.dtype}: {counts_text([d.to_dict()])}{worst}")
            for f in d.failures[:4]:
                lines.append(f"  - {f}")
        return "\n".join(lines)


def first_few(reasons: Sequence[str], most: int = 3) -> str:
    """The distinct `reasons`, sorted, the first `most` joined by `; ` and `(+N more)` for the rest."""
    distinct = sorted(set(reasons))
    return "; ".join(distinct[:most]) + (f" (+{len(distinct) - most} more)" if len(distinct) > most else "")


def judged_report(op: str, backend: str, verdicts: tuple[DtypeVerdict, ...], reason: str | None, seed: int,
                  *, none_judged: str) -> ConformanceReport:
    """The report of every launch kind's judged dtypes: fail when one fails, else partial when a call
    was skipped, else pass; no-host-model (`none_judged` its reason) when no case was judged."""
    if not sum(d.samples + d.held_out_samples for d in verdicts):
        return ConformanceReport(op, backend, "no-host-model", verdicts, none_judged, seed)
    status = "fail" if not all(d.ok for d in verdicts) else "partial" if any(d.skipped for d in verdicts) else "pass"
    return ConformanceReport(op, backend, status, verdicts, reason, seed)

