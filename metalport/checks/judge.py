"""One judgement of a launched case's outputs, for every launch kind (elementwise host or spec launch).

Each output, in order: its dtype and shape must be torch's; no element may still hold the poison
(`poison`) where torch's result does not (looked for always: the oracle accepts a NaN wherever the
truth is NaN, so a poisoned NaN could otherwise pass where torch's CPU result is a number); its
values must meet the one rule (Note [the oracle] in `oracle`) against torch's CPU result and the
float64 truth. The first problem found is the case's. Integer, bool and index outputs have no truth:
CPU's result judges them at the caller's tolerance (zero on both launch paths: exactly).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from metalport.checks.oracle import Verdict, acceptable, describe
from metalport.checks.poison import unwritten
from metalport.checks.tolerances import Tolerance

# Truth of every output: float64 values (None where there is none), or a function computing them
# (None when torch refuses), asked only where torch's CPU result alone does not accept an output.
Truths = Sequence[torch.Tensor | None] | Callable[[], Sequence[torch.Tensor] | None]
# A finer truth of output values (`refine(truth, bad)`, Note [precise truth] in `precise`), or None.
Refine = Callable[[torch.Tensor, torch.Tensor], torch.Tensor | None]


@dataclass(frozen=True)
class Judgement:
    """The verdict on a case's outputs: `problem` None when every output is right, else one line
    naming the output; `verdicts` per output judged by value (ulps, the relative margin); `by_truth`:
    some output is right only by the truth's side of the rule (asked lazily, see `judge_outputs`)."""

    problem: str | None
    verdicts: tuple[Verdict, ...]
    by_truth: bool = False
    holes: int = 0  # elements left unwritten (or 1 for an output of the wrong dtype or shape)


def _name(dtype: torch.dtype, shape: Sequence[int]) -> str:
    return f"{str(dtype).removeprefix('torch.')}{list(shape)}"


def judge_outputs(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor], tols: Sequence[Tolerance],
                  kernel: str, *, truths: Truths = (), conds: Sequence[torch.Tensor | None] = (),
                  refine: Refine | None = None, operands: Sequence[torch.Tensor] = (),
                  named: bool = True) -> Judgement:
    """Judge the kernel's outputs `got` against torch's CPU results `want` at `tols` (one per output).

    `conds`: the conditioning of each output's truth (Note [the oracle]); a function as `truths` is
    for outputs without it (no relative bound applies, so an output CPU's result accepts is right
    and the truth is computed only for the others). `refine` improves output 0's truth; `operands`
    show output 0's failing input. `named`: a problem of output 0 is prefixed `output 0: ` too.
    """
    verdicts: list[Verdict] = []
    lazy = callable(truths)
    pending = truths if lazy else None
    known: Sequence[torch.Tensor | None] = () if pending is not None else truths  # type: ignore[assignment]
    by_truth = False
    for n, (g, w, tol) in enumerate(zip(got, want, tols)):
        prefix = f"output {n}: " if named or n else ""
        if g.dtype != w.dtype or tuple(g.shape) != tuple(w.shape):
            return Judgement(f"{prefix}{_name(g.dtype, g.shape)}, torch gives {_name(w.dtype, w.shape)}",
                             tuple(verdicts), holes=1)
        holes = unwritten(g, w)
        if holes:
            return Judgement(f"{prefix}{holes} of {g.numel()} output elements never written by {kernel}",
                             tuple(verdicts), holes=holes)
        floating = w.is_floating_point() or w.is_complex()
        truth, cond = None, conds[n] if n < len(conds) else None
        verdict = acceptable(g, w, None, tol) if lazy or not floating else None
        if floating and (verdict is None or bool(verdict.bad.any())):
            if pending is not None:
                known, pending = pending() or (), None
            truth = known[n] if n < len(known) else None
            if truth is not None and tuple(truth.shape) == tuple(w.shape):
                verdict = acceptable(g, w, truth, tol, cond)
                if bool(verdict.bad.any()) and refine is not None and n == 0:
                    finer = refine(truth, verdict.bad)
                    if finer is not None:
                        truth, verdict = finer, acceptable(g, w, finer, tol, cond)
                by_truth = by_truth or (lazy and not bool(verdict.bad.any()))
            else:
                truth = None
        if verdict is None:  # a floating output with no truth to judge it by: CPU's result alone
            verdict = acceptable(g, w, None, tol)
        verdicts.append(verdict)
        if bool(verdict.bad.any()):
            return Judgement(f"{prefix}{describe(g, w, truth, verdict, operands if n == 0 else ())}; "
                             f"kernel {kernel}", tuple(verdicts))
    return Judgement(None, tuple(verdicts), by_truth)


__all__ = ["Judgement", "Refine", "Truths", "judge_outputs"]
