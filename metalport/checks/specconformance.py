"""`run_spec_conformance`: an emulated `test_output_match` for a spec-launched kernel.

For every instantiation the spec registers, the op's OpInfo samples (recorded at the ATen level),
random calls and held-out calls (slices crossing the threadgroup size, non-contiguous and empty
inputs, a forced 32-bit split) run through torch on CPU and through the kernel as the spec's host
launches it (`speclaunch`): outputs poisoned, guard bands checked, an output element the kernel
never wrote named as such. Outputs are judged by the judgement every launch kind shares
(`judge.judge_outputs`, Note [spec truth]): exactly for integer, bool and index outputs, at
test_mps-style tolerances or by the float64 truth for floating ones.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from metalport.checks.conformance import DtypeRun
from metalport.checks.judge import judge_outputs
from metalport.checks.oracle import upcast
from metalport.checks.report import ConformanceReport, first_few, judged_report
from metalport.checks.numerics import draw
from metalport.checks.speccases import explicit_calls
from metalport.checks.tolerances import Tolerance, largest_error
from metalport.checks.speclaunch import (INDEX_LIMIT, HostCheckFailed, UnlaunchableCall, bind_call, plan_launch,
                                         run_launch)
from metalport.errors import EmulateError, SpecError, UsageError
from metalport.port.spec import METAL_DTYPES, LaunchSpec

# (rtol, atol) for floating outputs: a reduction's summation order differs from CPU's; test_mps
# keeps fp16 reductions (sum, prod, var) at 1e-2 (FP16_LOW_PRECISION_LIST).
_TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (1.6e-2, 1e-2)}
_SHAPES = ((), (1,), (6,), (3, 7), (4, 1, 5), (2, 3, 4), (5, 0), (2, 3, 1, 2))
_HELD_OUT_LENGTHS = (1023, 1024, 1025, 2500)
_SPLIT_LIMIT = 4096  # the index limit held-out split cases use, so 32-bit chunking runs on small data


@dataclass(frozen=True)
class SpecCase:
    """One call of the op: kind (opinfo, random, held-out), a label, and how to launch it."""

    kind: str
    label: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    index_limit: int = INDEX_LIMIT

    def describe(self) -> str:
        parts = [_shown(a) for a in self.args]
        parts += [f"{k}={_shown(v)}" for k, v in self.kwargs.items()]
        return f"({', '.join(parts)})"


def _shown(value: Any) -> str:
    """A tensor as dtype[shape], a tensor list as [dtype[shape], ...], anything else as repr."""
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


def _func(spec: LaunchSpec) -> Any:
    packet = getattr(torch.ops.aten, spec.op, None)
    if packet is None:
        raise UsageError(f"unknown op aten::{spec.op}", hint="check the spec's op")
    return getattr(packet, spec.overload or "default")


def _dims_value(spec: LaunchSpec, func: Any, ndim: int, gen: torch.Generator) -> Any:
    """A random value for the reduced-dims argument: an int, or a list for int[] arguments."""
    kind = next(str(a.type) for a in func._schema.arguments if a.name == spec.reduce.dim)
    wrap = max(ndim, 1)
    if kind.startswith("int") and "[" not in kind and "List" not in kind:
        return int(torch.randint(-wrap, wrap, (1,), generator=gen))
    choice = int(torch.randint(0, 3, (1,), generator=gen))
    if choice == 0 or ndim == 0:
        return None if "Optional" in kind or "?" in kind else []
    count = 1 + int(torch.randint(0, ndim, (1,), generator=gen))
    return sorted(torch.randperm(ndim, generator=gen)[:count].tolist())


def _call(spec: LaunchSpec, func: Any, x: torch.Tensor, types: tuple[str, ...], gen: torch.Generator,
          k: int, *, dims: Any = "random", keepdim: bool | None = None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Arguments for one call: the input, reduced dims, keepdim, the spec's scalar choices, and the
    dtype argument when the instantiation's output differs from the input."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    scalars = dict(spec.cases.get("scalars", {}) or {})
    out_rules = {o.dtype.split(":")[1]: types[len(spec.inputs) + i]
                 for i, o in enumerate(spec.outputs) if o.dtype.startswith("arg:")}
    for a in func._schema.arguments:
        if a.name == spec.inputs[0].arg:
            value: Any = x
        elif a.name == spec.reduce.dim:
            value = _dims_value(spec, func, x.dim(), gen) if dims == "random" else dims
        elif a.name == spec.reduce.keepdim:
            value = bool(k % 2) if keepdim is None else keepdim
        elif a.name in scalars:
            options = scalars[a.name]
            value = options[k % len(options)]
            value = float(value) if isinstance(value, str) else value
        elif a.name in out_rules:
            want = getattr(torch, METAL_DTYPES[out_rules[a.name]])
            value = want if want != x.dtype else None
        elif a.has_default_value():
            continue
        else:
            raise UsageError(f"spec {spec.op}: conformance cannot make a value for argument {a.name!r}",
                             hint="give it in the spec's cases.scalars")
        if a.kwarg_only:
            if value is not None:
                kwargs[a.name] = value
        else:
            args.append(value)
    return tuple(args), kwargs


def build_spec_cases(spec: LaunchSpec, types: tuple[str, ...], gen: torch.Generator,
                     include_held_out: bool, include_large: bool = True) -> tuple[list[SpecCase], int]:
    """(cases, OpInfo calls left out) for one instantiation: OpInfo samples, random, held-out.

    A spec's own `cases.random` replace the drawn reductions; its `cases.held_out` are added to the
    reduction held-out cases, or replace them for a spec that reduces nothing (`speccases`)."""
    func = _func(spec)
    dtype = getattr(torch, METAL_DTYPES[types[0]])
    ties = bool(spec.cases.get("ties"))
    cases: list[SpecCase] = []
    left_out = 0
    if spec.opinfo:
        from metalport.checks.samples import opinfo_calls

        info = next((o for o in _opinfos() if o.name == spec.opinfo and not o.variant_test_name), None)
        if info is None:
            raise SpecError(f"spec {spec.op}: opinfo: no OpInfo named {spec.opinfo!r}")
        for n, (f, args, kwargs) in enumerate(opinfo_calls(info, func.overloadpacket, dtype)):
            if f is not func:
                left_out += 1  # another overload of the op: not what this host function serves
                continue
            cases.append(SpecCase("opinfo", f"OpInfo sample {n}", tuple(args), dict(kwargs)))
    for label, args, kwargs in explicit_calls(spec, func, types, "random", gen, include_large=include_large):
        cases.append(SpecCase("random", label, args, kwargs))
    for k, shape in enumerate(() if spec.cases.get("random") else _SHAPES * 2):
        x = draw(shape, dtype, gen, ties=ties and k % 2 == 0)
        args, kwargs = _call(spec, func, x, types, gen, k)
        cases.append(SpecCase("random", f"random case {k}", args, kwargs))
    if include_held_out:
        for label, args, kwargs in explicit_calls(spec, func, types, "held_out", gen, include_large=include_large):
            cases.append(SpecCase("held-out", label, args, kwargs))
    if include_held_out and spec.reduce.dim is not None:
        for k, length in enumerate(_HELD_OUT_LENGTHS):
            x = draw((3, length), dtype, gen, ties=ties)
            args, kwargs = _call(spec, func, x, types, gen, k, dims=_last_dim(spec, func), keepdim=bool(k % 2))
            cases.append(SpecCase("held-out", f"slice of {length}", args, kwargs))
        x = draw((40, 6), dtype, gen, ties=ties).t()
        args, kwargs = _call(spec, func, x, types, gen, 0, dims=_last_dim(spec, func), keepdim=True)
        cases.append(SpecCase("held-out", "transposed input", args, kwargs))
        x = draw((700, 9), dtype, gen, ties=ties)
        args, kwargs = _call(spec, func, x, types, gen, 1, dims=_last_dim(spec, func), keepdim=False)
        cases.append(SpecCase("held-out", "many slices, 32-bit split", args, kwargs, index_limit=_SPLIT_LIMIT))
        x = draw((0, 5), dtype, gen, ties=ties)
        args, kwargs = _call(spec, func, x, types, gen, 2, dims=_last_dim(spec, func), keepdim=True)
        cases.append(SpecCase("held-out", "empty input", args, kwargs))
    return cases, left_out


def _opinfos() -> list[Any]:
    """Every OpInfo, the foreach ones included."""
    from torch.testing._internal import common_methods_invocations as cmi

    return [*cmi.op_db, *(o for name in dir(cmi) if name.startswith("foreach_") and name.endswith("_op_db")
                          for o in getattr(cmi, name))]


def _last_dim(spec: LaunchSpec, func: Any) -> Any:
    kind = next(str(a.type) for a in func._schema.arguments if a.name == spec.reduce.dim)
    return -1 if "[" not in kind and "List" not in kind else [-1]


# Note [repeated mode index]: which occurrence of a repeated value an index output names is
# unspecified: torch's CPU kernel reports the position its std::sort leaves last, which is the
# last occurrence only while the sort is a (stable) insertion sort, and libc++ (macOS) and
# libstdc++ sort differently. A spec with `cases: {index_ties: any-occurrence}` has a differing
# index accepted (a pass, noted in the report) when it names an element equal to the reported value.
ANY_OCCURRENCE = "the index of a repeated value is unspecified (torch's CPU sort is not stable); the kernel's names an equal element"


def _any_occurrence(got: Sequence[torch.Tensor], want: tuple[torch.Tensor, ...], rows: torch.Tensor) -> bool:
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
# (Note [the oracle] in `checks.oracle`): within tolerance of torch's CPU result, or of the op
# computed by torch in float64/complex128 on the upcast inputs (rounded to the output dtype where it
# overflows). Some CPU kernels accumulate half/bfloat16 in the element type (adaptive pooling sums a
# window in bfloat16) and drift further from the exact result than a kernel accumulating in float:
# such a kernel is right by the truth's side. The conditioning of a reduction is not measured, so
# no relative bound applies here. Index and integer outputs are exact.
TRUTH_NOTE = "differs from torch's CPU result and matches the op computed in float64 (Note [spec truth])"


def _truth(func: Any, case: SpecCase) -> tuple[torch.Tensor, ...] | None:
    """The op computed by torch in float64/complex128 on the case's upcast inputs, or None when torch
    refuses that call."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            precise = func(*[upcast(a) for a in case.args], **{k: upcast(v) for k, v in case.kwargs.items()})
    except (RuntimeError, ValueError, TypeError, IndexError):
        return None
    return (precise,) if isinstance(precise, torch.Tensor) else tuple(precise)


def _tolerance(dtype: torch.dtype) -> Tolerance:
    """test_mps-style tolerance of a floating output (`_TOLERANCE`); integers, bools, indices exact."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return Tolerance(0.0, 0.0)
    rtol, atol = _TOLERANCE.get(dtype.to_real() if dtype.is_complex else dtype, (1e-5, 1e-5))
    return Tolerance(atol, rtol)


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
def _unset_filled(active: bool) -> Iterator[None]:
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


def _mask_unset(spec: LaunchSpec, got: Sequence[torch.Tensor], want: Any) -> tuple[tuple[torch.Tensor, ...], int]:
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
def _refusal_problem(refused: str | None, message: str) -> str | None:
    """None when the host's refusal `message` matches torch's (`refused`), else a one-line reason."""
    if refused is None:
        return f"the host refuses the call ({message}), torch computes it"
    if refused != message:
        return f"torch refuses the call with {refused!r}, the host with {message!r}"
    return None


def _meta_refuses(spec: LaunchSpec, func: Any, case: SpecCase) -> bool:
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
        func(*[meta(a) for a in case.args], **{k: meta(v) for k, v in case.kwargs.items()})
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


def _row_name(spec: LaunchSpec, types: tuple[str, ...]) -> str:
    first = METAL_DTYPES[types[0]]
    outs = [METAL_DTYPES[t] for o, t in zip(spec.outputs, types[len(spec.inputs):]) if o.dtype.startswith("arg:")]
    differs = [o for o in outs if o != first]
    if differs:
        return f"{first}->{differs[0]}"
    if sum(t[0] == types[0] for t in spec.dtypes) > 1:  # rows told apart by a later input (ctc's targets)
        return ",".join(METAL_DTYPES[t] for t in types[:len(spec.inputs)])
    return first


def run_spec_conformance(checkout_root: Path, spec: LaunchSpec, *, library: Any = None,
                         include_held_out: bool = True, seed: int | None = None,
                         dtypes: Sequence[str] | None = None, include_large: bool = True) -> ConformanceReport:
    """Judge the spec's kernel, launched as the spec says, against torch on CPU for every
    instantiation (or those whose row name is in `dtypes`).

    `library`: an already compiled ShaderLibrary (tests); else the spec's kernel file under
    `checkout_root` is compiled with only the spec's kernels. CompileError propagates.
    `include_large`: run the spec's cases marked `large` (gigabytes past 32-bit indexing).
    """
    own = library is None
    if own:
        from metalport.emulate import checkout_include_dirs, compile_file

        path = Path(checkout_root) / spec.kernel_file
        if not path.is_file():
            raise UsageError(f"kernel file {spec.kernel_file} does not exist", hint="apply the port first")
        library = compile_file(path, include_dirs=checkout_include_dirs(Path(checkout_root)),
                               filename=spec.kernel_file, kernels=(f"{spec.kernel_name}_*",))
    seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
    try:
        return _run(spec, library, include_held_out, seed, dtypes, include_large)
    finally:
        if own:
            library.close()


def _run(spec: LaunchSpec, library: Any, include_held_out: bool, seed: int,
         dtypes: Sequence[str] | None, include_large: bool = True) -> ConformanceReport:
    name = f"aten::{spec.op}"
    func = _func(spec)
    verdicts = []
    notes: list[str] = []
    rows = [t for t in spec.dtypes if dtypes is None or _row_name(spec, t) in dtypes]
    missing = [h for h in (spec.host_name(t) for t in rows) if h not in library.kernels]
    if missing:
        raise SpecError(f"spec {spec.op}: dtypes: the kernel file defines no kernel {missing[0]!r}",
                        location=spec.kernel_file, hint="instantiate every dtypes row")
    partial_outputs = any(o.compare == "cpu-set" for o in spec.outputs)
    for i, types in enumerate(rows):
        unset_total = 0
        gen = torch.Generator().manual_seed(seed + i)
        row = _row_name(spec, types)
        tallies = DtypeRun(row, (spec.kernel_file, None))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cases, left_out = build_spec_cases(spec, types, gen, include_held_out, include_large)
        if left_out:
            notes.append(f"{row}: {left_out} OpInfo calls of other overloads left out")
        for case in cases:
            refused = None  # torch's error, first line (Note [refused calls])
            with warnings.catch_warnings(), _unset_filled(partial_outputs):
                warnings.simplefilter("ignore")
                try:
                    want = func(*case.args, **case.kwargs)
                except (RuntimeError, IndexError, ValueError) as err:
                    refused = (str(err).strip().splitlines() or [type(err).__name__])[0]
            label = f"{case.label}: {case.describe()}"
            try:
                launch = plan_launch(spec, bind_call(func, case.args, case.kwargs))
                if launch.host_name != spec.host_name(types):
                    continue  # the call selects another instantiation (counted in that row)
                got = run_launch(spec, library, launch, index_limit=case.index_limit)
            except HostCheckFailed as err:
                if refused is None or refused == str(err) or not _meta_refuses(spec, func, case):
                    tallies.record(case.kind, label, _refusal_problem(refused, str(err)))
                continue  # (a meta function refusing first leaves the host's check unreached)
            except UnlaunchableCall as err:
                if refused is not None:
                    continue  # torch and the MPS host both refuse it: no case
                tallies.skipped += 1
                notes.append(f"{row} {case.label}: {err}")
                continue
            except (SpecError, EmulateError) as err:
                if refused is None:
                    tallies.record(case.kind, label, err.message)
                continue
            if refused is not None and _meta_refuses(spec, func, case):
                continue  # the structured meta function refuses it before the MPS host: no case
            if refused is not None:
                tallies.record(case.kind, label, f"torch refuses the call ({refused}), the host computes a result: "
                               f"add a `checks:` entry to the spec")
                continue
            if partial_outputs:
                got, unset = _mask_unset(spec, got, want)
                unset_total += unset
            wanted = (want,) if isinstance(want, torch.Tensor) else tuple(want)
            judged = judge_outputs(got, wanted, [_tolerance(w.dtype) for w in wanted], launch.host_name,
                                   truths=lambda: _truth(func, case))
            problem, by_truth = judged.problem, judged.by_truth
            error = max((largest_error(g, w, finite=True) for g, w in zip(got, wanted)
                         if w.is_floating_point() or w.is_complex()), default=0.0)
            tallies.note_error(case.kind, error, label)
            if judged.holes:  # never accepted as a divergence PyTorch allows
                tallies.record(case.kind, label, problem)
                continue
            accepted = None
            if problem is not None and spec.cases.get("index_ties") == "any-occurrence" and launch.inputs:
                rows = launch.inputs[0].reshape(launch.derived["num_slices"], max(launch.derived["reduce_size"], 1))
                accepted = ANY_OCCURRENCE if _any_occurrence(got, wanted, rows) else None
            if by_truth:
                notes.append(f"{row} {case.kind}: {TRUTH_NOTE}")
            if accepted is not None:
                # a right answer, not an excuse: an index the op leaves unspecified naming an equal element
                notes.append(f"{row} {case.kind}: differs from torch's CPU and is right: {accepted}")
                problem = None
            tallies.record(case.kind, label, problem)
        if unset_total:
            notes.append(f"{row}: {unset_total} output elements torch's CPU kernel leaves unset not compared "
                         f"(Note [unset outputs])")
        verdicts.append(tallies.verdict())
    return judged_report(name, "emulated", tuple(verdicts), first_few(notes) if notes else None, seed,
                         none_judged="no case reached the kernel")


__all__ = ["SpecCase", "build_spec_cases", "run_spec_conformance"]
