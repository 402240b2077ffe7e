"""One judgement of a launched case's outputs, for every launch kind (elementwise host or spec launch).

Each output, in order: its dtype and shape must be torch's; no element may still hold the poison
(`poison`) where torch's result does not (looked for always: the oracle accepts a NaN wherever the
truth is NaN, so a poisoned NaN could otherwise pass where torch's CPU result is a number); its
values must meet the one rule (Note [the oracle] in `oracle`) against torch's CPU result and the
float64 truth. The first problem found is the case's. Integer, bool and index outputs have no truth:
CPU's result judges them at the caller's tolerance (zero on both launch paths: exactly).

Below it, the rules a launch spec's cases add: their tolerance and truth (Note [spec truth]), an
index output naming any equal element of a slice (Note [repeated mode index]), outputs torch leaves
partly unset (Note [unset outputs]) and calls torch refuses (Note [refused calls]).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from metalport.checks.judge.oracle import Verdict, acceptable, describe, describe_ambiguous, upcast
from metalport.checks.host.poison import unwritten
from metalport.checks.judge.tolerances import Tolerance
from metalport.port import LaunchSpec

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
    # the part of the standard the failing element broke (oracle.EXACT, SIGNED_ZERO, SPECIAL_IEEE,
    # SPECIAL_ANNEX_G, TOLERANCE, RELATIVE; "dtype/shape", "unwritten"); None when nothing failed
    rule: str | None = None
    # when nothing failed but some element is ambiguous (the references disagree, the standard leaves
    # it open): one line with its input and why; neither a pass nor a fail (Note [the oracle])
    ambiguous: str | None = None


def _name(dtype: torch.dtype, shape: Sequence[int]) -> str:
    return f"{str(dtype).removeprefix('torch.')}{list(shape)}"


def judge_outputs(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor], tols: Sequence[Tolerance],
                  kernel: str, *, truths: Truths = (), conds: Sequence[torch.Tensor | None] = (),
                  refine: Refine | None = None, operands: Sequence[torch.Tensor] = (),
                  named: bool = True, reached: torch.Tensor | None = None, held_out: bool = False) -> Judgement:
    """Judge the kernel's outputs `got` against torch's CPU results `want` at `tols` (one per output).

    `conds`: the conditioning of each output's truth (Note [the oracle]); a function as `truths` is
    for outputs without it (no relative bound applies, so an output CPU's result accepts is right
    and the truth is computed only for the others). `refine` improves output 0's truth; `operands`
    show output 0's failing input. `named`: a problem of output 0 is prefixed `output 0: ` too.
    `reached`: output 0's values at the neighbouring inputs (Note [a jump between neighbours] in `oracle`);
    `held_out`: inputs no PyTorch test feeds (Note [held-out accuracy] in `oracle`).
    """
    verdicts: list[Verdict] = []
    lazy = callable(truths)
    pending = truths if lazy else None
    known: Sequence[torch.Tensor | None] = () if lazy else truths  # type: ignore[assignment]
    by_truth = False
    ambiguous: str | None = None
    for n, (g, w, tol) in enumerate(zip(got, want, tols)):
        prefix = f"output {n}: " if named or n else ""
        if g.dtype != w.dtype or tuple(g.shape) != tuple(w.shape):
            return Judgement(f"{prefix}{_name(g.dtype, g.shape)}, torch gives {_name(w.dtype, w.shape)}",
                             tuple(verdicts), holes=1, rule="dtype/shape")
        holes = unwritten(g, w)
        if holes:
            return Judgement(f"{prefix}{holes} of {g.numel()} output elements never written by {kernel}",
                             tuple(verdicts), holes=holes, rule="unwritten")
        floating = w.is_floating_point() or w.is_complex()
        truth, cond = None, conds[n] if n < len(conds) else None
        shown = operands if n == 0 else ()
        verdict = acceptable(g, w, None, tol) if lazy or not floating else None
        if floating and (verdict is None or bool(verdict.bad.any()) or not _identical(g, w)):
            if pending is not None:
                known, pending = pending() or (), None
            truth = known[n] if n < len(known) else None
            if truth is not None and tuple(truth.shape) == tuple(w.shape):
                cpu_alone = verdict
                near = reached if n == 0 else None
                verdict = acceptable(g, w, truth, tol, cond, shown, near, held_out)
                if bool(verdict.bad.any()) and refine is not None and n == 0:
                    finer = refine(truth, verdict.bad)
                    if finer is not None:
                        truth, verdict = finer, acceptable(g, w, finer, tol, cond, shown, near, held_out)
                by_truth = by_truth or (lazy and cpu_alone is not None and bool(cpu_alone.bad.any())
                                        and not bool(verdict.bad.any()))
            else:
                truth = None
        if verdict is None:  # a floating output with no truth to judge it by: CPU's result alone
            verdict = acceptable(g, w, None, tol)
        verdicts.append(verdict)
        if bool(verdict.bad.any()):
            return Judgement(f"{prefix}{describe(g, w, truth, verdict, shown)}; "
                             f"kernel {kernel}", tuple(verdicts), rule=verdict.rule)
        if ambiguous is None and verdict.unclear is not None:
            ambiguous = f"{prefix}{describe_ambiguous(g, w, truth, verdict, shown)}; kernel {kernel}"
    return Judgement(None, tuple(verdicts), by_truth, ambiguous=ambiguous)


def _identical(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Bit for bit the same values (NaN where NaN, zero signs alike): no truth can change the verdict."""
    if got.is_complex():
        return _identical(torch.view_as_real(got), torch.view_as_real(want))
    same = (got == want) | (torch.isnan(got) & torch.isnan(want))
    return bool((same & (torch.signbit(got) == torch.signbit(want))).all())


# Rules of a launch spec's cases (reduction, window, scan, tensor-list kinds).

# Note [repeated mode index]: which occurrence of a repeated value an index output names is
# unspecified: torch's CPU kernel reports the position its std::sort leaves last, which is the
# last occurrence only while the sort is a (stable) insertion sort, and libc++ (macOS) and
# libstdc++ sort differently. A spec with `cases: {index_ties: any-occurrence}` has a differing
# index accepted (a pass, noted in the report) when it names an element equal to the reported value.
ANY_OCCURRENCE = "the index of a repeated value is unspecified (torch's CPU sort is not stable); the kernel's names an equal element"


def any_occurrence(got: Sequence[torch.Tensor], want: tuple[torch.Tensor, ...], rows: torch.Tensor) -> bool:
    """Values equal torch's, and each index output points into its slice at an element equal to the value."""
    values = got[0].reshape(-1)
    if not torch.equal(got[0], want[0]) or rows.numel() == 0:
        return False
    for g in got[1:]:
        if g.dtype != torch.int64:
            continue
        idx = g.reshape(-1)
        if bool(((idx < 0) | (idx >= rows.shape[1])).any()):
            return False
        picked = rows.gather(1, idx.unsqueeze(1)).squeeze(1)
        if not bool((picked == values).all()):
            return False
    return True


# Note [spec truth]: a floating or complex output of a launch-spec kernel is judged by the one rule
# (Note [the oracle] in `checks.judge.oracle`): within tolerance of torch's CPU result, or of the op
# computed by torch in float64/complex128 on the upcast inputs (rounded to the output dtype where it
# overflows). Some CPU kernels accumulate half/bfloat16 in the element type (adaptive pooling sums a
# window in bfloat16) and drift further from the exact result than a kernel accumulating in float:
# such a kernel is right by the truth's side. The conditioning of a reduction is not measured, so
# no relative bound applies here. Index and integer outputs are exact.
TRUTH_NOTE = "differs from torch's CPU result and matches the op computed in float64 (Note [spec truth])"


def spec_truth(call: Any) -> tuple[torch.Tensor, ...] | None:
    """The op computed by torch in float64/complex128 on the call's upcast inputs, or None when torch
    refuses that call."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            precise = call.func(*map(upcast, call.args), **{k: upcast(v) for k, v in call.kwargs.items()})
    except (RuntimeError, ValueError, TypeError, IndexError):
        return None
    return (precise,) if isinstance(precise, torch.Tensor) else tuple(precise)


# Note [unset outputs]: some CPU kernels leave parts of an output unset (`_ctc_loss` allocates
# log_alpha with at::empty and writes each sequence's alphas only up to its own lengths; its CUDA
# kernel writes -inf there, and test_nn compares only the loss and its gradient). An output marked
# `compare: cpu-set` is compared only where torch's CPU kernel set it: the reference is computed
# with torch's deterministic mode filling uninitialised memory with NaN
# (`torch.utils.deterministic.fill_uninitialized_memory`), and the NaN elements of such an output
# are left out of the comparison and counted in the report's notes (what the kernel writes there
# is its own choice, as torch's is; ours writes -inf as CUDA's does). Every other element and
# output is compared whole.
@contextlib.contextmanager
def unset_filled(active: bool) -> Iterator[None]:
    """torch's deterministic mode with uninitialised memory filled (NaN for floats), when `active`."""
    if not active:
        yield
        return
    mode, warn_only = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill


def mask_unset(spec: LaunchSpec, got: Sequence[torch.Tensor], want: Any) -> tuple[tuple[torch.Tensor, ...], int]:
    """(the kernel's outputs with every element torch left unset in a `compare: cpu-set` output set
    to NaN as torch's, how many elements that left out) (Note [unset outputs])."""
    wanted = (want,) if isinstance(want, torch.Tensor) else tuple(want)
    out, left = [], 0
    for o, g, w in zip(spec.outputs, got, wanted):
        if o.compare == "cpu-set" and w.is_floating_point() and g.shape == w.shape and g.dtype == w.dtype:
            unset = torch.isnan(w)
            left += int(unset.sum())
            g = g.masked_fill(unset, float("nan"))
        out.append(g)
    return tuple(out), left


# Note [refused calls]: a call torch's CPU kernel refuses must be refused by the port's host too,
# with torch's message (the spec's `checks:`, Note [spec checks] in port.spec); a port computing a
# result for it would hand users a silently wrong answer. Calls the MPS host refuses for its own
# reasons (an unregistered dtype, a dim out of range) are no case, as before.
def refusal_problem(refused: str | None, message: str) -> str | None:
    """None when the host's refusal `message` matches torch's (`refused`), else a one-line reason."""
    if refused is None:
        return f"the host refuses the call ({message}), torch computes it"
    if refused != message:
        return f"torch refuses the call with {refused!r}, the host with {message!r}"
    return None


def meta_refuses(spec: LaunchSpec, call: Any) -> bool:
    """Whether a structured op's meta function (which runs before the MPS host as before CPU's)
    refuses the call: then the port refuses it without a check of its own (with the meta
    function's words, which may differ from the CPU kernel's: argmin's meta says "argmax")."""
    if not _structured(spec.op, spec.overload):
        return False

    def meta(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
            return [meta(v) for v in value]
        return value

    try:
        call.func(*map(meta, call.args), **{k: meta(v) for k, v in call.kwargs.items()})
    except (RuntimeError, IndexError, ValueError):
        return True
    return False


@functools.cache
def _structured(op: str, overload: str) -> bool:
    """Whether the op's entry is structured (or delegates to a structured entry) in the wheel's
    native_functions.yaml: its meta function is shared by every backend."""
    from metalport.checkout.workspace import _wheel_paths
    from metalport.registry.index import load_registry

    registry = load_registry(_wheel_paths()[0] / "native_functions.yaml")
    full = f"{op}.{overload}" if overload else op
    entry = next((e for e in registry.entries if e.full_name == full), None)
    return entry is not None and bool(entry.structured_delegate or entry.structured)


__all__ = ["ANY_OCCURRENCE", "TRUTH_NOTE", "Judgement", "Refine", "Truths", "any_occurrence", "judge_outputs", "mask_unset",
           "meta_refuses", "refusal_problem", "spec_truth", "unset_filled"]
