"""Random cases of one dtype judged together for isolated divergences (`runner.ISOLATED_SHARE`)."""

from __future__ import annotations

from metalport.checks.cases import Case
from metalport.checks.runner import ISOLATED_SHARE, CaseResult, Prepared
from metalport.checks.tolerances import Tolerance, mismatched

ISOLATED_POOLED = ("isolated finite divergences over the random cases of the dtype (at most 2% of their elements: "
                   "poles, cancellation near branch cuts) beyond the OpInfo samples, which are what test_mps gates")


class RandomPool:
    """The random cases of one dtype judged together for isolated divergences (ISOLATED_SHARE).

    A random case of OpInfo's shape has 20 elements, so one element near a pole (digamma's
    reflection just below 0) is 5% of it and the per-case rule turns on the seed's luck. Pooled,
    the finite divergences of all regular random cases (not the small-magnitude ones) are accepted
    when at most ISOLATED_SHARE of all their elements diverge; otherwise each fails as before."""

    def __init__(self) -> None:
        self.elements = self.diverged = 0
        self.held: list[tuple[CaseResult, Case]] = []

    def holds(self, case: Case, prepared: Prepared, result: CaseResult, accepted: str | None,
              tol: Tolerance) -> bool:
        """Count a random case; keep it back (True) when it is a finite divergence no rule accepts."""
        if case.kind != "random" or case.strict:
            return False
        self.elements += prepared.expected.numel()
        floating = prepared.expected.is_floating_point() or prepared.expected.is_complex()
        if result.ok or accepted is not None or not floating or result.error == float("inf") \
                or prepared.extra or prepared.output.shape != prepared.expected.shape:
            return False
        self.diverged += int(mismatched(prepared.output, prepared.expected, tol).sum())
        self.held.append((result, case))
        return True

    def settle(self) -> list[tuple[CaseResult, Case, str | None]]:
        """The kept-back cases with their acceptance: ISOLATED_POOLED when isolated over the pool,
        else None (each fails as before)."""
        accepted = ISOLATED_POOLED if self.diverged <= ISOLATED_SHARE * self.elements else None
        return [(result, case, accepted) for result, case in self.held]


__all__ = ["ISOLATED_POOLED", "RandomPool"]
