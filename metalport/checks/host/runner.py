"""One conformance case: reference on CPU, kernel through the host model, poisoned output compared."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from metalport.checks.host.backend import Buffer, Const, KernelSet, Launch, UnmodelledCall
from metalport.checks.judge.explain import Explanation, explain
from metalport.checks.judge.guard import Crashed, Outcome, Refused, needs_guard, refusal, run_guarded
from metalport.checks.host.elementwise import (MissingKernel, halves_input, metal_type_name, plan_binary,
                                               plan_binary_with_params, plan_halves_backward, plan_ternary,
                                               plan_ternary_alpha, result_dtype, plan_two_outputs, plan_unary)
from metalport.checks.judge.outputs import Judgement, judge_outputs
from metalport.checks.judge.precise import has_precise_truth, refine
from metalport.checks.host.iteration import build_iteration, flat_buffer
from metalport.checks.host.poison import poisoned
from metalport.checks.cases.samples import Call, ExecConvention, HalvesOp
from metalport.checks.judge.tolerances import Tolerance, largest_error

_NO_MPS_DTYPES = (torch.float64, torch.complex128)
_METAL_NAMED = (torch.float32, torch.float16, torch.bfloat16)  # the dtypes a halves kernel registers
REJECTED = "torch CPU rejects the inputs"
CRASHED = "the CPU reference crashed"


@dataclass(frozen=True)
class CaseResult:
    """`ok` and the worst error of one case; `skipped` names why the host model does not cover it."""

    ok: bool
    error: float
    message: str | None = None
    skipped: str | None = None
    ulps: tuple[float, float] | None = None  # worst (vs the truth, vs CPU) of a floating output
    rel_used: float = 0.0  # worst relative error over the oracle's relative bound (Verdict.rel_used)
    explanation: Explanation | None = None  # the first failing element (`metalport conformance --explain`)
    rule: str | None = None  # the part of the standard a failing case broke (judge.Judgement.rule)
    ambiguous: str | None = None  # a passing case's ambiguous element, with its input (Judgement.ambiguous)


def _common(call: Call, out_dtype: torch.dtype) -> torch.dtype:
    values = [call._get(s) for s in call.slots]
    if len(values) > 2 and all(isinstance(v, torch.Tensor) for v in values):
        common = result_dtype(*values)  # a 0-dim operand promotes only across categories
    else:
        common = values[0].dtype if len(values) == 1 else torch.result_type(values[0], values[1])
        for v in values[2:]:
            common = torch.promote_types(common, v.dtype if isinstance(v, torch.Tensor) else common)
    if (out_dtype.is_floating_point or out_dtype.is_complex) and not (common.is_floating_point or common.is_complex):
        return out_dtype
    return common


def plan(kernels: KernelSet, family: ExecConvention, name: str, call: Call, expected: torch.Tensor, force: str | None,
         second: torch.dtype | None = None) -> tuple[Launch | None, torch.Tensor, torch.Tensor | None]:
    """The launch the host would make (None for an empty iterator), the poisoned output view and,
    for a two-output kernel, the second output (of dtype `second`), laid out like the first."""
    operands = call.operands()
    # Note [grad over halves] (port/write/halves.py): no iterator of equal shapes
    if family is ExecConvention.HALVES_BACKWARD:
        dense = _plan_halves_backward_dense(name, kernels.names, *operands, call.func.dim, expected.dtype)
        launch, out = dense or plan_halves_backward(name, kernels.names, *operands, call.func.dim, expected.dtype)
        _check_buffers(kernels, launch)
        return launch, out, None
    if family is ExecConvention.BINARY and isinstance(call.func, HalvesOp) and \
            f"{name}_dense_{metal_type_name(operands[0].dtype)}" in kernels.names:
        launch, out = _plan_halves_forward(name, kernels.names, *operands, call.func.dim, expected.dtype, force)
        _check_buffers(kernels, launch)
        return launch, out, None
    it = build_iteration(operands, expected.dtype, poisoned)
    out = it.output
    other = None
    if second is not None:  # same element layout over a buffer of its own dtype
        n = max(out.untyped_storage().nbytes() // out.element_size(), 1)
        other = poisoned(n, second).as_strided(out.shape, out.stride(), out.storage_offset())
    if it.geometry.numel == 0:
        return None, out, other
    names = kernels.names
    if family is ExecConvention.UNARY_TWO_OUTPUTS:
        if other is None:
            raise UnmodelledCall(f"{call.func.name()} returns one tensor, its kernel writes two")
        launch = plan_two_outputs(name, names, it, other, operands[0])
    elif family in (ExecConvention.UNARY, ExecConvention.UNARY_ALPHA):
        launch = plan_unary(name, names, it, operands[0], alpha=call.alpha,
                            alpha_type=_common(call, expected.dtype) if call.alpha is not None else None,
                            force=force)
    elif family is ExecConvention.BINARY_ALPHA and isinstance(call.alpha, tuple):  # Note [params route]
        launch = plan_binary_with_params(name, names, it, operands[0], operands[1], call.alpha)
    elif family in (ExecConvention.BINARY, ExecConvention.BINARY_ALPHA):
        launch = plan_binary(name, names, it, operands[0], operands[1], common=_common(call, expected.dtype),
                             alpha=call.alpha, force=force)
    elif family is ExecConvention.TERNARY_ALPHA:
        launch = plan_ternary_alpha(name, names, it, *operands, common=_common(call, expected.dtype),
                                    alpha=call.alpha)
    else:
        launch = plan_ternary(name, names, it, *operands)
    _check_buffers(kernels, launch)
    return launch, out, other


def _joined(a: torch.Tensor, b: torch.Tensor, dim: int) -> torch.Tensor:
    """The one tensor whose halves along `dim` are `a` and `b`: their own storage when `b` sits right
    after `a` along `dim` in it (a sample's `x.chunk(2, dim)`), else `halves_input`'s layout of them."""
    if a.dim() and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and a.stride() == b.stride() \
            and b.storage_offset() == a.storage_offset() + a.stride(dim) * a.shape[dim]:
        shape = list(a.shape)
        shape[dim] *= 2
        return a.as_strided(shape, a.stride(), a.storage_offset())
    return halves_input(a, b, dim)


def _plan_halves_forward(name: str, names: Any, a: torch.Tensor, b: torch.Tensor, dim: int,
                         out_dtype: torch.dtype, force: str | None) -> tuple[Launch | None, torch.Tensor]:
    """(the launch, the poisoned output) of a function of the two halves of its input as the port's out
    function makes it (Note [halves forward], port/write/halves.py): the output as the structured op
    allocates it (the binary iterator over the halves); a contiguous input and output one 2D launch of
    `<name>_dense_<T>(output, input, run)` over (run, rows), any other layout exec_binary_kernel over
    the two narrowed halves of the input. UnmodelledCall when the halves' dtypes differ."""
    if a.dtype != b.dtype or a.dtype != out_dtype:
        raise UnmodelledCall(f"{name} over halves of {a.dtype} and {b.dtype} (the input is one tensor)")
    full = _joined(a, b, dim)
    half = full.shape[dim] // 2
    first, second = full.narrow(dim, 0, half), full.narrow(dim, half, half)
    it = build_iteration((first, second), out_dtype, poisoned)
    out = it.output
    if it.geometry.numel == 0:
        return None, out
    if not (full.is_contiguous() and out.is_contiguous()):
        return plan_binary(name, names, it, first, second, common=out_dtype, force=force), out
    kernel = f"{name}_dense_{metal_type_name(full.dtype)}"
    if kernel not in names:
        raise MissingKernel(kernel)
    run = half * full.stride(dim)
    args = (Buffer(0), Buffer(1), Const("long", (run,)))
    return Launch(kernel, args, (run, full.numel() // (2 * run)), (out, full)), out


def _plan_halves_backward_dense(name: str, names: Any, a: torch.Tensor, b: torch.Tensor, grad: torch.Tensor,
                                dim: int, out_dtype: torch.dtype) -> tuple[Launch, torch.Tensor] | None:
    """The contiguous path of a backward over halves (Note [grad over halves], port/write/halves.py), or None
    for the strided one: when the op registers `<name>_dense_<T>` and the input (the tensor whose halves
    are `a`, `b`) and the gradient are contiguous, grad_input is allocated contiguous and one 2D launch
    `(grad_input, input, grad_output, run)` over (run, rows) fills it."""
    full = _joined(a, b, dim)
    kernel = f"{name}_dense_{metal_type_name(full.dtype)}" if full.dtype in _METAL_NAMED else None
    if kernel is None or kernel not in names or len({full.dtype, grad.dtype, out_dtype}) > 1 or grad.numel() == 0 \
            or tuple(grad.shape) != tuple(a.shape) or not (full.is_contiguous() and grad.is_contiguous()):
        return None
    out = poisoned(full.numel(), out_dtype).view(full.shape)
    run = (full.shape[dim] // 2) * full.stride(dim)
    args = (Buffer(0), Buffer(1), Buffer(2), Const("long", (run,)))
    return Launch(kernel, args, (run, full.numel() // (2 * run)), (out, full, grad)), out


def _check_buffers(kernels: KernelSet, launch: Launch | None) -> None:
    """UnmodelledCall when the kernel declares another number of buffers than the host passes."""
    declared = kernels.arg_count(launch.kernel) if launch is not None else None
    if declared is not None and declared != len(launch.args):
        raise UnmodelledCall(f"kernel {launch.kernel} declares {declared} buffers, the modelled host passes "
                             f"{len(launch.args)}")


@dataclass
class Prepared:
    """A case ready to dispatch: the launch (None when the iterator is empty), its output, the reference."""

    launch: Launch | None
    output: torch.Tensor
    expected: torch.Tensor
    extra: tuple[tuple[torch.Tensor, torch.Tensor], ...] = ()  # (output, reference) of further outputs


_FLUSHED = (torch.float32, torch.bfloat16, torch.complex64)


def flush_subnormals_(call: Call) -> None:
    """Set float32/bfloat16 (and complex64 part) subnormal operand values to zero, in place.

    Apple GPUs read and write float32 subnormals as zero (the emulator does the same, see
    mshim_runtime.cpp: Note [float32 subnormals]; bfloat computes in float), so the reference
    runs on the inputs the kernel really sees.  Half subnormals are kept, as the GPU keeps them.
    """
    for t in call.operands():
        if t.dtype not in _FLUSHED or t.numel() == 0:
            continue
        region = flat_buffer(t)  # a broadcast operand cannot be written through its own view
        parts = torch.view_as_real(region) if t.is_complex() else region
        tiny = torch.finfo(parts.dtype).tiny
        parts.masked_fill_((parts != 0) & (parts.abs() < tiny), 0.0)


def prepare_case(kernels: KernelSet, family: ExecConvention, name: str, call: Call, force: str | None,
                 expected: Outcome) -> Prepared | CaseResult:
    """The modelled launch for a case whose CPU reference is `expected`, or a CaseResult when it cannot run.

    MissingKernel propagates (the caller words it as a host failure).
    """
    if isinstance(expected, Refused):
        return CaseResult(True, 0.0, skipped=f"{REJECTED} ({expected.kind})")
    if isinstance(expected, Crashed):
        return CaseResult(True, 0.0, skipped=f"{CRASHED} ({expected.how})")
    rest: tuple[torch.Tensor, ...] = ()
    if family is ExecConvention.UNARY_TWO_OUTPUTS and isinstance(expected, tuple) and len(expected) == 2 \
            and all(isinstance(t, torch.Tensor) for t in expected):
        expected, rest = expected[0], tuple(expected[1:])
    if not isinstance(expected, torch.Tensor):
        return CaseResult(True, 0.0, skipped=f"{call.func.name()} returns no single tensor")
    if expected.dtype in _NO_MPS_DTYPES or any(t.dtype in _NO_MPS_DTYPES and t.dim() > 0 for t in call.operands()):
        return CaseResult(True, 0.0, skipped="float64 operands (MPS has no float64)")
    try:
        launch, output, second = plan(kernels, family, name, call, expected, force,
                                      rest[0].dtype if rest else None)
    except UnmodelledCall as err:
        return CaseResult(True, 0.0, skipped=str(err))
    return Prepared(launch, output, expected, () if second is None else ((second, rest[0]),))


_IN_CHILD_ELEMENTS = 1 << 22  # operand elements up to which a batch of references runs in a child


def references(calls: Sequence[Call]) -> list[Outcome]:
    """The CPU reference of each call (of any launch kind), on the inputs the GPU sees (subnormals
    flushed, in place). They run guarded in a forked child (see `guard`), so a crash or an endless
    loop is an outcome; only a batch too large to send back through a pipe runs in-process, with its
    calls that can trap still guarded."""
    for c in calls:
        flush_subnormals_(c)
    if sum(t.numel() for c in calls for t in c.operands()) <= _IN_CHILD_ELEMENTS:
        return run_guarded([c.run for c in calls])
    risky = [i for i, c in enumerate(calls) if needs_guard(c.operands())]
    out: list[Outcome] = [None] * len(calls)
    for i, result in zip(risky, run_guarded([calls[i].run for i in risky])):
        out[i] = result
    for i, c in enumerate(calls):
        if i not in risky:
            try:
                out[i] = c.run()
            except (RuntimeError, ValueError, TypeError, IndexError) as err:
                out[i] = refusal(err)
    return out


def judge_case(prepared: Prepared, failure: str | None, tol: Tolerance,
               truth: tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None] | None,
               operands: Sequence[torch.Tensor] = (), op: str | None = None, order: Any = None,
               held_out: bool = False) -> CaseResult:
    """Judge one dispatched case (`failure`: the dispatch error, if any) by the one judgement of
    outputs (`judge.judge_outputs`, Note [the oracle]): the output against CPU and the float64 truth
    (`truth`: (value, conditioning, reach), None for integer and bool outputs), refined by mpmath where
    `op` has a precise truth (Note [precise truth]; `order`: polygamma's integer first argument);
    further outputs (frexp's exponent) against CPU, exactly when they are integers. `held_out`: the
    case feeds inputs no PyTorch test does (Note [held-out accuracy] in `oracle`)."""
    kernel = prepared.launch.kernel if prepared.launch else "(no launch)"
    if failure is not None:
        return CaseResult(False, float("inf"), f"kernel {kernel} failed: {failure}")
    got = (prepared.output, *(more for more, _ in prepared.extra))
    want = (prepared.expected, *(reference for _, reference in prepared.extra))
    tols = (tol, *(tol if r.is_floating_point() or r.is_complex() else Tolerance(0.0, 0.0) for r in want[1:]))
    value, cond, reached = truth if truth is not None else (None, None, None)
    finer = (lambda t, bad: refine(op, operands, order, t, bad)) \
        if op is not None and value is not None and has_precise_truth(op) else None
    laid = _per_output_element(operands, prepared.expected)
    judged = judge_outputs(got, want, tols, kernel, truths=(value,), conds=(cond,), reached=reached, refine=finer,
                           operands=laid, named=False, held_out=held_out)
    error = float("inf") if judged.holes else largest_error(prepared.output, prepared.expected)
    return case_result(judged, error, got, want, (value,), laid, with_ulps=value is not None)


def case_result(judged: Judgement, error: float, got: Sequence[torch.Tensor], want: Sequence[torch.Tensor],
                truths: Sequence[torch.Tensor | None], operands: Sequence[torch.Tensor] = (),
                with_ulps: bool = True) -> CaseResult:
    """The CaseResult of one judged launch, of any launch kind (`error`: its largest error vs CPU):
    a pass keeps its ambiguous element (Note [the oracle]: counted apart, never a pass), a failure
    its first failing element and the rule it broke. `with_ulps`: output 0 is floating, so its worst
    ulps count where it was judged against a truth."""
    first = judged.verdicts[0] if judged.verdicts else None
    ulps = None if not with_ulps or first is None or math.isnan(first.ulps_truth) else (first.ulps_truth,
                                                                                        first.ulps_cpu)
    rel_used = first.rel_used if first is not None else 0.0
    if judged.problem is None:
        return CaseResult(True, error, ulps=ulps, rel_used=rel_used, ambiguous=judged.ambiguous)
    return CaseResult(False, error or (first.ulps_truth if first is not None else float("inf")), judged.problem,
                      ulps=ulps, rel_used=rel_used, explanation=explained(judged, got, want, truths, operands),
                      rule=judged.rule)


def _per_output_element(operands: Sequence[torch.Tensor], out: torch.Tensor) -> Sequence[torch.Tensor]:
    """`operands` laid over the output element by element: a case over halves (Note [grad over halves],
    port/write/halves.py) has operands of half the output along one dim, and both halves of the output at a
    position come from the operands there, so each is repeated along that dim (a failure then names
    its inputs); any other case's operands as they are."""
    out_shape = tuple(out.shape)
    ops = [o for o in operands if isinstance(o, torch.Tensor)]
    if not ops or any(o.dim() != len(out_shape) for o in ops):
        return operands
    halved = [d for d in range(len(out_shape)) if out_shape[d] and all(out_shape[d] == 2 * o.shape[d] for o in ops)]
    if len(halved) != 1 or any(tuple(o.shape) != tuple(s // 2 if d == halved[0] else s for d, s in enumerate(out_shape))
                               for o in ops):
        return operands
    return tuple(torch.cat([o, o], halved[0]) for o in ops)


def explained(judged: Judgement, got: Sequence[torch.Tensor], want: Sequence[torch.Tensor],
              truths: Sequence[torch.Tensor | None], operands: Sequence[torch.Tensor] = ()) -> Explanation | None:
    """The first failing element of the first failing output (`explain`), with the rule the judgement says it broke."""
    for n, verdict in enumerate(judged.verdicts):
        if bool(verdict.bad.any()) and n < len(got) and n < len(want):
            truth = truths[n] if n < len(truths) else None
            ok_truth = truth is not None and tuple(truth.shape) == tuple(want[n].shape)
            return explain("", got[n], want[n], truth if ok_truth else None, verdict.bad,
                           operands if n == 0 else (), judged.rule)
    return None


def dispatch(kernels: KernelSet, prepared: list[Prepared]) -> list[str | None]:
    """Run every launch (batched where the backend allows); one error message or None per case."""
    launches = [p.launch for p in prepared if p.launch is not None]
    errors = iter(kernels.run_many(launches))
    return [next(errors) if p.launch is not None else None for p in prepared]


__all__ = ["CRASHED", "REJECTED", "CaseResult", "case_result", "explained", "MissingKernel", "Prepared", "dispatch",
           "judge_case", "plan", "prepare_case", "references"]
