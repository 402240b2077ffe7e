"""The emulated conformance check of a port (`test_output_match` without a Mac), for every launch
kind; `check_port_conformance` takes the plan and runs the launch its kind says.

For each dtype row the kernel files register, every OpInfo sample (recorded at the ATen level on
CPU), random draws and held-out cases (`cases`) run through torch on CPU (the reference) and
through the kernel as the MPS host would launch it: an elementwise port's functors through the
modelled `exec_*_kernel` host (`host.elementwise`, one batch a row; the reference guarded where it
can crash), a launch spec's kernel as the spec's host launches it (`host.spec`; reduction, window,
scan and tensor-list kinds, torch's refusals checked, Note [refused calls] in `judge`). What a kind
brings is its rows, their cases and each case's launch (`_ElementwiseRows`, `_SpecRows`); the one
row loop (`_judge_rows`) runs them for both: outputs are poisoned before each launch, every case is
judged by the one judgement (`judge.judge_outputs`, Note [the oracle]) and counted
per kind in one tally (`DtypeRun`); skipped calls make the verdict partial.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import hashlib
import math
import os
import re
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import torch

from metalport.checks.host.backend import KernelFile, KernelSet, UnmodelledCall, compile_files, pick_backend
from metalport.checks.judge.explain import Explanation
from metalport.checks.host.families import classify, classify_two_outputs
from metalport.checks.judge.guard import Crashed, Refused
from metalport.checks.contract.hostcode import find_host_code
from metalport.checks.cases.case import Case, build_cases
from metalport.checks.cases.elementwise import ElementwiseCases
from metalport.checks.cases.spec import SpecCases, spec_opinfo
from metalport.checks.host.elementwise import MissingKernel, metal_type_name
from metalport.checks.judge.outputs import (ANY_OCCURRENCE, TRUTH_NOTE, any_occurrence, judge_outputs, mask_unset,
                                            meta_refuses, refusal_problem, spec_truth, unset_filled)
from metalport.checks.judge.neighbours import probe_calls, undefined_by_neighbours
from metalport.checks.judge.oracle import AMBIGUOUS, conditioning, correctly_rounded, reach, truth_calls
from metalport.checks.report import (KINDS, NO_HOST_MODEL, ConformanceReport, DtypeVerdict, Tally, first_few,
                                     judged_report)
from metalport.checks.host.runner import (CRASHED, REJECTED, CaseResult, Prepared, case_result, dispatch, judge_case,
                                          prepare_case, references)
from metalport.checks.cases.samples import (Call, ExecConvention, IteratorView, find_opinfo, iterator_view,
                                            selector_values)
from metalport.checks.host.spec import HostCheckFailed, bind_call, plan_launch, run_launch
from metalport.checks.judge.tolerances import largest_error, tolerance_for
from metalport.checkout.layout import KERNELS_DIR as LAYOUT_KERNELS_DIR
from metalport.errors import EmulateError, SpecError, UnknownOpError, UsageError
from metalport.failure import Failure
from metalport.port import LaunchSpec, load_spec, METAL_DTYPES, PortPlan
from metalport.metal_types import METAL_TYPES

KERNELS_DIR = Path(LAYOUT_KERNELS_DIR)
_MAX_FAILURES = 5
# Metal spellings `--dtypes` accepts besides torch's names (`double` is torch's own). half2 and the
# barebones unsigned types are not among them: those are asked for by their torch names.
_DTYPE_ALIASES = {t.name: t.torch_name for t in METAL_TYPES if t.name != "half2" and not t.barebones}


class ConformanceSession:
    """Compiled kernel files kept loaded across `run_conformance` calls (one worker per library).

    A file is reused while its bytes are unchanged; `close()` (or leaving the `with` block) stops
    the workers. Without a session each call loads and stops its own. At most `MAX_LOADED`
    libraries stay loaded (the least recently used is stopped first): each holds a sandboxed
    worker, and the sandbox's process limit is shared by all of them.
    """

    MAX_LOADED = 8

    def __init__(self) -> None:
        self._loaded: OrderedDict[tuple[str, str, tuple[tuple[str, str], ...], tuple[str, ...] | None],
                                  KernelSet] = OrderedDict()

    def kernels(self, files: Sequence[Path], checkout_root: Path, backend: str,
                names: Sequence[str] | None = None) -> KernelSet:
        """The KernelSet for `files`, compiled (or reloaded from the shader cache) on first use;
        `names`: host-name patterns to instantiate (None: all)."""
        digest = tuple((str(p), hashlib.sha256(p.read_bytes()).hexdigest()) for p in files if p.is_file())
        key = (backend, str(checkout_root), digest, None if names is None else tuple(names))
        if key in self._loaded:
            self._loaded.move_to_end(key)
            return self._loaded[key]
        while len(self._loaded) >= self.MAX_LOADED:
            self._loaded.popitem(last=False)[1].close()
        self._loaded[key] = compile_files(files, checkout_root, backend, names)
        return self._loaded[key]

    def close(self) -> None:
        """Stop every loaded library's worker."""
        for kernels in self._loaded.values():
            kernels.close()
        self._loaded.clear()

    def __enter__(self) -> ConformanceSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def resolve_op(op: str) -> tuple[str, Any]:
    """(`atan2`, torch.ops.aten.atan2) for `aten::atan2[.overload]`; UnknownOpError with close names."""
    base = op.removeprefix("aten::").split(".")[0]
    if base and hasattr(torch.ops.aten, base):
        return base, getattr(torch.ops.aten, base)
    names = sorted({s.name.removeprefix("aten::") for s in torch._C._jit_get_all_schemas()
                    if s.name.startswith("aten::")})
    close = difflib.get_close_matches(base, names, n=3)
    hint = f"did you mean {', '.join('aten::' + c for c in close)}?" if close else "check the op name"
    raise UnknownOpError(f"unknown op aten::{base}", hint=hint)


# Note [functors behind a legacy host]: some ops' kernel files register a Metal functor while the
# MPS host still runs an MPSGraph kernel (ceil and trunc: REGISTER_UNARY_OP(ceil, ...) beside
# REGISTER_MPS_UNARY_STUB(ceil, ceil)). The functor is what a migration's host would launch, so it
# is judged as exec_*_kernel launches it, the report's reason saying so; without a functor such an
# op is not judged (no-host-model, Note [not judged] in report).


def registering_files(checkout_root: Path, base: str) -> list[Path]:
    """Every `.metal` under the checkout's kernels directory that registers `base`'s functor."""
    return _kernel_files(checkout_root, rf"\bREGISTER_\w*\(\s*{re.escape(base)}\s*[,)]")


def _kernel_files(checkout_root: Path, pattern: str) -> list[Path]:
    """Every `.metal` under the checkout's kernels directory with a match of `pattern`."""
    found = re.compile(pattern)
    return [p for p in sorted((checkout_root / KERNELS_DIR).glob("*.metal"))
            if found.search(p.read_text(encoding="utf-8", errors="replace"))]


def _view(packet: Any, iterator: tuple[tuple[str, ...], tuple[str, ...]] | None) -> IteratorView | None:
    """The view of the op's functional overload its host iterator makes (Note [iterator operands]), or None."""
    if iterator is None:
        return None
    functional = [getattr(packet, o) for o in packet.overloads() if not getattr(packet, o)._schema.is_mutable]
    return iterator_view(functional[0], *iterator) if functional else None


def _tensor_outputs(packet: Any) -> int:
    """How many tensors the op's functional overloads return (the most over its overloads)."""
    counts = [sum(1 for r in getattr(packet, o)._schema.returns if str(r.type) == "Tensor")
              for o in packet.overloads() if not getattr(packet, o)._schema.is_mutable]
    return max(counts, default=1)


def parse_dtypes(names: Sequence[str]) -> list[torch.dtype]:
    """torch dtypes for names like `float32`, `half`, `bfloat16`, `int`; UsageError on unknown ones."""
    out = []
    for raw in names:
        name = _DTYPE_ALIASES.get(raw.strip(), raw.strip())
        dt = getattr(torch, name, None)
        if not isinstance(dt, torch.dtype):
            raise UsageError(f"unknown dtype {raw!r}", hint="use names like float32, half, bfloat16, int32, bool")
        out.append(dt)
    return out


def _register_line(path: Path, base: str, metal_type: str) -> int | None:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if re.search(rf"\bREGISTER_\w*\(\s*{re.escape(base)}\s*,", line)]
    typed = [n for n in hits if re.search(rf"\b{metal_type}\b", lines[n - 1])]
    return (typed or hits or [None])[0]


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


class DtypeRun:
    """Accumulates one dtype's case results into a DtypeVerdict (`name`: the dtype's, or a row's
    like `float16->float32`)."""

    def __init__(self, dtype: torch.dtype | str, where: tuple[str, int | None]) -> None:
        self.dtype, self.where = dtype, where
        self.name = str(dtype).removeprefix("torch.")
        self.counts = {kind: [0, 0, 0] for kind in KINDS}  # samples, passed, out of scope
        self.skipped = self.rejected = self.held_failed = 0
        self.worst: tuple[float, str] | None = None
        self.worst_ulps: list[tuple[float, str] | None] = [None, None]  # vs the truth, vs CPU; where
        self.rel_used = 0.0
        self.failures: list[Failure] = []
        self.out_of_scope: list[str] = []
        self.held_inputs: list[str] = []
        self.unmodelled: list[str] = []
        self.crashed: list[str] = []  # generated cases whose CPU reference crashed or hung (dropped)
        self.opinfo_unjudged: list[str] = []  # OpInfo calls the host model does not cover (Note [not judged])
        self.explanations: list[Explanation] = []  # failing elements of regular cases (`--explain`)
        self.held_explanations: list[Explanation] = []  # of held-out cases: shown only with --show-held-out

    def add(self, result: CaseResult, case: Case, accepted: str | None = None) -> None:
        """Count one case; a divergence is out of scope when the case or `accepted` names the OpInfo
        skip/xfail that keeps PyTorch's own device tests off this value set."""
        accepted = case.accepted or accepted
        if result.skipped is not None:
            if result.skipped.startswith(REJECTED):
                self.rejected += 1  # a generated input torch itself refuses: no case, no host-model gap
                return
            if result.skipped.startswith(CRASHED) and case.kind != "opinfo":
                # torch CPU has no answer (it trapped, or looped past its time bound): dropped and
                # counted as a refused input is, no host-model gap (an OpInfo sample stays a skip)
                self.crashed.append(result.skipped)
                return
            self.skipped += 1
            self.unmodelled.append(result.skipped)
            if case.kind == "opinfo" and not result.skipped.startswith(CRASHED):
                self.opinfo_unjudged.append(result.skipped)
            return
        described = f"{case.label}: {case.describe()}"
        self.note_error(case.kind, result.error, described)
        self.rel_used = max(self.rel_used, result.rel_used)
        if result.ulps is not None:
            for k, (u, where) in enumerate(zip(result.ulps, self.worst_ulps)):
                if where is None or u > where[0]:
                    self.worst_ulps[k] = (u, described)
        held = (f"{result.message}; inputs: "
                f"{[t.tolist() if t.numel() <= 64 else 'large' for t in case.operands()]}")
        if not result.ok and accepted is None and result.explanation is not None:
            shown = dataclasses.replace(result.explanation, case=described)
            (self.held_explanations if case.kind == "held-out" else self.explanations).append(shown)
        if result.ok and result.ambiguous is not None and accepted is None:  # Note [the oracle]: not a pass
            if case.kind == "held-out":  # its input for a human only, as a failing held-out case's
                self.held_inputs.append(f"{described}: {result.ambiguous}")
            shown = result.ambiguous.split("; at ")[0] if case.kind == "held-out" else result.ambiguous
            accepted, result = AMBIGUOUS, dataclasses.replace(result, ok=False, message=shown)
        self.record(case.kind, described, None if result.ok else result.message or "differs",
                    None if accepted is None else f"out of scope: {accepted}", held)

    def note_error(self, kind: str, error: float, described: str) -> None:
        """Keep the largest error of OpInfo and random cases (held-out inputs are never shown)."""
        if kind != "held-out" and (self.worst is None or error > self.worst[0]):
            self.worst = (error, described)

    def record(self, kind: str, described: str, problem: str | None, accepted: str | None = None,
               held_detail: str | None = None) -> None:
        """Count one judged case of `kind` (`described`: its label and call): a pass when `problem` is
        None, else out of scope when `accepted` (the decorator) is given, else a held-out failure (its detail
        kept apart) or a regular failure (the first few kept)."""
        counts = self.counts[kind]
        counts[0] += 1
        if problem is None:
            counts[1] += 1
        elif accepted is not None:
            counts[2] += 1
            self.out_of_scope.append(f"{self.name} {described}: {_count_only(problem)}; {accepted}")
        elif kind == "held-out":
            self.held_failed += 1
            self.held_inputs.append(f"{described}: {held_detail or problem}")
        elif len(self.failures) < _MAX_FAILURES:
            self.failures.append(Failure("conformance", self.where[0], self.where[1], None,
                                         f"{self.name} {described}: {problem}"))

    def verdict(self) -> DtypeVerdict:
        failures = list(self.failures)
        if self.opinfo_unjudged and not self.counts["opinfo"][0]:  # Note [not judged]: opinfo 0/N fails
            failures.insert(0, Failure("conformance", self.where[0], self.where[1], None,
                                       f"{self.name}: 0 of {len(self.opinfo_unjudged)} OpInfo samples judged: the "
                                       f"op's own samples pass what the port's host does not implement "
                                       f"({first_few(self.opinfo_unjudged, 2)})"))
        if self.held_failed:
            failures.append(Failure("held-out", self.where[0], self.where[1], None,
                                    f"{self.held_failed} of {self.counts['held-out'][0]} held-out cases fail for "
                                    f"{self.name} (inputs withheld; `--show-held-out` prints them)"))
        worst = self.worst
        return DtypeVerdict(self.name, {k: Tally(*v) for k, v in self.counts.items()},
                            None if worst is None else worst[0], None if worst is None else worst[1],
                            tuple(failures), tuple(self.out_of_scope), tuple(self.held_inputs), self.skipped,
                            tuple(self.worst_ulps), self.rel_used, len(self.opinfo_unjudged),
                            tuple(self.explanations[:_MAX_FAILURES]), tuple(self.held_explanations[:_MAX_FAILURES]))


def _truths(cases: Sequence[Case], staged: Sequence[Prepared | CaseResult]
            ) -> dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]]:
    """(truth, conditioning, reach) per floating case: the op in float64/complex128 on the upcast
    inputs, sum |x df/dx| from its perturbed evaluations (Note [the oracle]) and its values at the
    neighbouring inputs (Note [a jump between neighbours]); NaN where a NaN operand's value changes
    with the element before it (Note [a value its neighbours wrote] in `neighbours`)."""
    wanted = [k for k, item in enumerate(staged) if isinstance(item, Prepared)
              and (item.expected.is_floating_point() or item.expected.is_complex())]
    groups = [truth_calls(cases[k].call) for k in wanted]
    probes = [probe_calls(cases[k].call, staged[k].expected) for k in wanted]
    outcomes = iter(references([c for g, p in zip(groups, probes) for c in (*g, *(p.calls if p else ()))]))
    out = {}
    for k, group, probe in zip(wanted, groups, probes):
        results = [next(outcomes) for _ in group]
        probed = [next(outcomes) for _ in (probe.calls if probe else ())]
        truth = results[0]
        if isinstance(truth, torch.Tensor) and truth.shape == staged[k].expected.shape:
            perturbed = [r if isinstance(r, torch.Tensor) else None for r in results[1:]]
            # no floating operand, nothing perturbed: the conditioning is not measured (no relative bound)
            eps = torch.finfo(staged[k].expected.dtype.to_real()).eps
            cond, reached = conditioning(truth, perturbed, eps) if perturbed else None, reach(truth, perturbed)
            if probe is not None:
                moved = undefined_by_neighbours(probe, staged[k].expected, truth, probed).reshape(truth.shape)
                if bool(moved.any()):
                    truth = truth.masked_fill(moved, complex(math.nan, math.nan) if truth.is_complex() else math.nan)
            out[k] = (truth, cond, reached)
    return out


def _count_only(message: str | None) -> str:
    """The mismatch message without element values (an out-of-scope line may describe a held-out case)."""
    return (message or "differs").split("; at [")[0].split("; kernel ")[0]


def run_conformance(checkout_root: Path | None, target: str | LaunchSpec, *, dtypes: Sequence[str] | None = None,
                    include_held_out: bool = True, backend: str = "auto", seed: int | None = None,
                    kernel_files: Sequence[Path] | None = None, session: ConformanceSession | None = None,
                    library: Any = None, include_large: bool = True) -> ConformanceReport:
    """Compare `target`'s Metal kernels with torch on CPU (see the module docstring): an op (`aten::atan2`)
    whose functors the modelled `exec_*_kernel` host launches, or a launch spec whose kernel is
    launched as the spec says. The one driver of conformance: a kind's rows, then the one row loop.

    `dtypes`: only these rows (dtype names; a spec's row names). `kernel_files`: the op's kernel
    files (default: those under the checkout registering it). `session`: compiled kernels kept
    loaded across calls (the caller's stays open). `library`: an already compiled emulated
    ShaderLibrary holding a spec's kernel (tests). `include_large`: run a spec's cases marked
    `large` (gigabytes past 32-bit indexing).

    UnknownOpError for an unknown op; UsageError when no kernel file registers it, a dtype is not
    registered or a spec's kernel file is missing; compile errors propagate as CompileError.
    """
    seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
    held = ConformanceSession() if session is None else contextlib.nullcontext(session)  # the caller's stays open
    with held as active, warnings.catch_warnings():
        # torch warns on every complex32 tensor made; MPS runs complex32, so conformance checks it.
        warnings.filterwarnings("ignore", "ComplexHalf support is experimental", UserWarning)
        match target:
            case LaunchSpec():
                rows: _RowKind | ConformanceReport = _spec_rows(
                    checkout_root, target, active, library, backend, dtypes, include_held_out, seed, include_large)
            case str():
                if library is not None:
                    raise UsageError("a compiled library is taken for a launch spec only",
                                     hint="pass kernel_files for an op's functors")
                rows = _elementwise_rows(Path(checkout_root or "."), target, active, backend, kernel_files, dtypes,
                                         include_held_out, seed)
        if isinstance(rows, ConformanceReport):
            return rows
        return rows.report(_judge_rows(rows), seed)


def _elementwise_rows(checkout_root: Path, op: str, session: ConformanceSession, backend: str,
                      kernel_files: Sequence[Path] | None, dtypes: Sequence[str] | None, include_held_out: bool,
                      seed: int) -> _ElementwiseRows | ConformanceReport:
    """The rows of `op`'s functors as its host launches them, or the report of an op no host model covers."""
    base, packet = resolve_op(op)
    name = f"aten::{base}"
    chosen = pick_backend(backend)

    def unjudged(why: str) -> ConformanceReport:
        return ConformanceReport(name, chosen, "no-host-model", (), f"{why}; {NO_HOST_MODEL}")

    outputs = _tensor_outputs(packet)
    if outputs > 2:
        return unjudged(f"{name} writes {outputs} outputs (a kernel with several output buffers)")
    host = find_host_code(checkout_root, base)
    view = _view(packet, host.iterator)
    if view is not None:  # Note [iterator operands]: judged as the host's iterator sees the op
        outputs = 1
    legacy = None
    if host.graph and registering_files(checkout_root, base):  # Note [functors behind a legacy host]
        legacy = (f"{host.unmodelled}; its Metal functor {base} judged as a port's exec_*_kernel host would "
                  f"launch it (what runs on MPS today is the MPSGraph kernel)")
        host = dataclasses.replace(host, kernel=base, unmodelled=None)
    if host.unmodelled is not None or host.kernel is None:
        return unjudged(str(host.unmodelled))
    kernel = host.kernel
    files = [Path(p) for p in kernel_files] if kernel_files else registering_files(checkout_root, kernel)
    if not files and outputs == 2:  # two-output kernels have macros of their own (REGISTER_FREXP_OP)
        files = _kernel_files(checkout_root, rf"\b{re.escape(kernel)}_(?:dense|strided)\b")
    if not files and _kernel_files(checkout_root, rf"\b{re.escape(kernel)}\b"):  # named, by no known macro
        return unjudged(f"{kernel}'s kernels are declared without a REGISTER_*_OP({kernel}, ...) macro the host "
                        f"model knows")
    if not files:
        raise UsageError(f"no kernel file under {KERNELS_DIR} registers {kernel}",
                         hint=f"add REGISTER_*_OP({kernel}, ...) to a .metal file there, or pass kernel files")
    # Only the op's kernels are instantiated: every host name the host model asks for is
    # `<kernel>_<flavour>_<types>` (host.elementwise).
    kernels = session.kernels(files, checkout_root, chosen,
                              tuple(dict.fromkeys(f"{k}_*" for k in (kernel, *(m[2] for m in host.modes)))))
    found = classify(kernels.names, kernel) if outputs == 1 else None
    if outputs == 2 and classify_two_outputs(kernels.names, kernel):
        found = ExecConvention.UNARY_TWO_OUTPUTS, classify_two_outputs(kernels.names, kernel)
    if found is None and outputs == 2:
        return unjudged(f"{name} writes 2 outputs and {kernel}'s kernels are no `{kernel}_dense_<T>` / "
                        f"`{kernel}_strided_<T>` pair")
    if found is None:
        return unjudged(f"{kernel}'s kernels follow no modelled exec_*_kernel convention")
    family, registered = found
    # add_sub_lerp_template: a call whose alpha is not 1 runs `<kernel>_alpha` (BINARY_ALPHA) when the
    # library registers it; alpha 1 runs the plain kernel.
    variant = classify(kernels.names, f"{kernel}_alpha") if family is ExecConvention.BINARY else None
    alpha_kernel = f"{kernel}_alpha" if variant is not None and variant[0] is ExecConvention.BINARY_ALPHA else None
    wanted = registered
    if dtypes:
        wanted = parse_dtypes(dtypes)
        missing = [str(d).removeprefix("torch.") for d in wanted if d not in registered]
        if missing:
            have = ", ".join(str(d).removeprefix("torch.") for d in registered)
            raise UsageError(f"{kernel}'s kernels register no {', '.join(missing)}", hint=f"registered: {have}")
    selectors = frozenset(arg for arg, _, _ in host.modes)  # Note [argument-selected kernels] in hostcode
    binding = ExecConvention.BINARY_ALPHA if alpha_kernel else family
    built = {dtype: build_cases(ElementwiseCases(binding, base, packet, dtype, case_generator(seed, dtype), selectors,
                                                 view, host.unset), include_held_out) for dtype in wanted}
    # The CPU kernel may pass the stub a negated scalar (sub_out: add_stub(iter, -alpha)); the
    # registered kernel then sees it negated, as on MPS.
    negate = any(a.replace(" ", "") == "-alpha" for a in host.stub_args)
    said = (legacy, view.describe() if view is not None else None)  # Note [iterator operands]: what is judged, said
    return _ElementwiseRows(kernels, name, base, files, checkout_root, (family, kernel, alpha_kernel), host.modes,
                            selectors, negate, built, said)


class _RowKind(Protocol):
    """What one launch kind brings to the row loop (`_judge_rows`): its dtype rows, each row's tally
    and cases, their CPU references, and each case's result as the kind's host launches the kernel
    (None: the call is no case of this row)."""

    def judging_order(self) -> Sequence[Any]: ...

    def draw(self, row: Any) -> tuple[DtypeRun, list[Case]]: ...

    def references(self, row: Any, cases: list[Case]) -> list[Any]: ...

    def results(self, row: Any, cases: list[Case], outcomes: list[Any]) -> Iterable[CaseResult | None]: ...

    def report(self, runs: dict[Any, DtypeRun], seed: int) -> ConformanceReport: ...


def _judge_rows(kind: _RowKind) -> dict[Any, DtypeRun]:
    """The one row loop of conformance, for every launch kind: each dtype row's cases run through
    torch on CPU and through the kernel as the kind's host launches it, every result counted in the
    row's tally by the one `DtypeRun.add`. The tallies by row, in the order they were judged."""
    runs = {}
    for row in kind.judging_order():
        run, cases = kind.draw(row)
        for case, result in zip(cases, kind.results(row, cases, kind.references(row, cases)), strict=True):
            if result is not None:
                run.add(result, case)
        runs[row] = run
    return runs


class _ElementwiseRows:
    """An elementwise port's rows (one per registered dtype): its functors launched through the
    modelled `exec_*_kernel` host. Every row's cases are drawn first, so that their CPU references
    run in one guarded child for all dtypes, not one each."""

    def __init__(self, kernels: KernelSet, name: str, base: str, files: list[Path], checkout_root: Path,
                 route: tuple[ExecConvention, str, str | None], modes: tuple[tuple[str, str | None, str], ...],
                 selectors: frozenset[str], negate_alpha: bool,
                 built: dict[torch.dtype, tuple[list[Case], list[str]]], said: tuple[str | None, ...]) -> None:
        self.kernels, self.name, self.base, self.files, self.root = kernels, name, base, files, checkout_root
        self.kernel, self.route, self.modes, self.selectors, self.negate_alpha = route[1], route, modes, selectors, negate_alpha
        self.built, self.rows, self.info, self.said = built, list(built), find_opinfo(base), said
        answers = iter(references([c.call for cases, _ in built.values() for c in cases]))
        self.answers = {dtype: [next(answers) for _ in cases] for dtype, (cases, _) in built.items()}
        self.basic: dict[torch.dtype, bool] = {}  # Note [held-out accuracy]: the op behaves as a basic operation

    def judging_order(self) -> list[torch.dtype]:
        # float32 first: a half or bfloat16 row takes its answer, as CPU computes them in float32 and rounds
        return sorted(self.rows, key=lambda dtype: dtype != torch.float32)

    def draw(self, dtype: torch.dtype) -> tuple[DtypeRun, list[Case]]:
        cases, skipped = self.built[dtype]
        metal = metal_type_name(dtype)
        where = next((f for f in self.files if _register_line(f, self.kernel, metal)), self.files[0])
        run = DtypeRun(dtype, (_rel(where, self.root), _register_line(where, self.kernel, metal)))
        run.skipped += len(skipped)
        run.unmodelled += skipped
        run.opinfo_unjudged += skipped
        return run, cases

    def references(self, dtype: torch.dtype, cases: list[Case]) -> list[Any]:
        return self.answers[dtype]

    def results(self, dtype: torch.dtype, cases: list[Case], outcomes: list[Any]) -> list[CaseResult]:
        staged = [_staged(self.kernels, case, outcome,
                          _selected_route(self.kernels, case.call, self.modes, self.selectors, self.route),
                          self.negate_alpha) for case, outcome in zip(cases, outcomes)]
        ready = [p for p in staged if isinstance(p, Prepared)]
        errors = dict(zip(map(id, ready), dispatch(self.kernels, ready)))
        truths = _truths(cases, staged)
        self.basic[dtype] = self.basic.get(torch.float32, True) if dtype in (torch.float16, torch.bfloat16) else \
            correctly_rounded([staged[k].expected for k in truths], [t for t, _, _ in truths.values()])
        results: list[CaseResult] = []
        for k, (case, item) in enumerate(zip(cases, staged)):
            if isinstance(item, Prepared):
                tol = tolerance_for(self.base, item.expected.dtype, self.info)
                order = case.call.args[0] if case.call.args and type(case.call.args[0]) is int else None
                item = judge_case(item, errors[id(item)], tol, truths.get(k), case.operands(), self.base, order,
                                  case.kind == "held-out" and not self.basic[dtype])
            results.append(item)
        return results


    def report(self, runs: dict[torch.dtype, DtypeRun], seed: int) -> ConformanceReport:
        """Verdicts in the registration's order; calls skipped, cases dropped and inputs rejected said,
        after what the row kind says of itself (a legacy host, the iterator's view)."""
        unmodelled = [u for run in runs.values() for u in (*run.unmodelled, *run.crashed)]
        crashed = [u for u in unmodelled if u.startswith(CRASHED)]
        unmodelled = [u for u in unmodelled if not u.startswith(CRASHED)]
        rejected = sum(run.rejected for run in runs.values())
        lines = [f"{len(unmodelled)} calls skipped, {NO_HOST_MODEL}: {first_few(unmodelled)}" if unmodelled else None,
                 f"{len(crashed)} cases dropped: {crashed[0]}" if crashed else None,
                 f"{rejected} generated inputs dropped ({REJECTED})" if rejected else None]
        reason = "; ".join(r for r in lines if r) or None
        report = judged_report(self.name, self.kernels.backend, tuple(runs[dtype].verdict() for dtype in self.built),
                               reason, seed, none_judged=reason or f"no sample reached a modelled host convention; "
                                                                   f"{NO_HOST_MODEL}")
        legacy, view = self.said
        if view is not None:
            report = dataclasses.replace(report, reason="; ".join(r for r in (report.reason, view) if r))
        if legacy is not None:
            report = dataclasses.replace(report, reason=f"{legacy}; {report.reason}" if report.reason else legacy)
        return report

def _selected_route(kernels: KernelSet, call: Call, modes: tuple[tuple[str, str | None, str], ...],
                    selectors: frozenset[str], route: tuple[ExecConvention, str, str | None]
                    ) -> tuple[ExecConvention, str, str | None]:
    """The (family, kernel, alpha kernel) the host runs for `call`: the op's own unless the call
    sets a selector argument, then the kernel its value picks (Note [argument-selected kernels])."""
    values = selector_values(call, selectors) if selectors else {}
    if not values:
        return route
    chosen = next((k for arg, value, k in modes if values.get(arg, object()) == value), None)
    if chosen is None or chosen == route[1]:
        return route
    found = classify(kernels.names, chosen)
    return (found[0] if found is not None else route[0]), chosen, None


def _staged(kernels: KernelSet, case: Case, outcome: Any, route: tuple[ExecConvention, str, str | None],
            negate_alpha: bool) -> Prepared | CaseResult:
    """`case` ready to launch as the host would (`route`: family, kernel, alpha kernel), or its result
    without a launch: alpha 0 (the host copies self), a call the host model does not cover (skipped),
    a kernel the host would ask for that no file defines (a failure)."""
    family, kernel, alpha_kernel = route
    if alpha_kernel is not None and isinstance(outcome, torch.Tensor) and _is_zero(case.call.alpha):
        return _host_copy(case.call, outcome)  # alpha 0: output.copy_(self), no kernel
    call = case.call if not negate_alpha or case.call.alpha is None else \
        dataclasses.replace(case.call, alpha=-case.call.alpha)
    try:
        return prepare_case(kernels, *_route(family, kernel, alpha_kernel, call), case.force, outcome)
    except UnmodelledCall as err:
        return CaseResult(True, 0.0, skipped=str(err))
    except MissingKernel as err:
        return CaseResult(False, float("inf"), f"the host would ask for kernel {err.kernel}, which no kernel file "
                          f"defines (MPS: 'Failed to create function state object')")


def _route(family: ExecConvention, kernel: str, alpha_kernel: str | None,
           call: Call) -> tuple[ExecConvention, str, Call]:
    """(family, kernel, call) the host runs: with an alpha variant, alpha 1 goes to the plain kernel
    and any other alpha (but 0, see `_host_copy`) to `<kernel>_alpha`."""
    if alpha_kernel is None:
        return family, kernel, call
    if call.alpha is None or (not isinstance(call.alpha, complex) and call.alpha == 1):
        return family, kernel, dataclasses.replace(call, alpha=None)
    return ExecConvention.BINARY_ALPHA, alpha_kernel, call


def _is_zero(alpha: object) -> bool:
    return alpha is not None and not isinstance(alpha, complex) and alpha == 0


def _host_copy(call: Call, expected: torch.Tensor) -> Prepared:
    """add_sub_lerp_template with alpha 0: the host copies self into the output (no kernel runs)."""
    output = torch.full_like(expected, float("nan") if expected.is_floating_point() or expected.is_complex() else 0)
    output.copy_(torch.broadcast_to(call.operands()[0], expected.shape))
    return Prepared(None, output, expected)


_DTYPE_SALT = {torch.float32: 1, torch.float16: 2, torch.bfloat16: 3, torch.int32: 4, torch.int64: 5,
               torch.int16: 6, torch.int8: 7, torch.uint8: 8, torch.bool: 9, torch.complex64: 10}


def case_generator(seed: int, dtype: torch.dtype) -> torch.Generator:
    """The generator of random and held-out values for `dtype` under `seed`."""
    return torch.Generator().manual_seed(seed + _DTYPE_SALT.get(dtype, 0))


def _row_name(spec: LaunchSpec, types: tuple[str, ...]) -> str:
    first = METAL_DTYPES[types[0]]
    outs = [METAL_DTYPES[t] for o, t in zip(spec.outputs, types[len(spec.inputs):]) if o.dtype.startswith("arg:")]
    differs = [o for o in outs if o != first]
    if differs:
        return f"{first}->{differs[0]}"
    if sum(t[0] == types[0] for t in spec.dtypes) > 1:  # rows told apart by a later input (ctc's targets)
        return ",".join(METAL_DTYPES[t] for t in types[:len(spec.inputs)])
    return first


def _spec_rows(checkout_root: Path | None, spec: LaunchSpec, session: ConformanceSession, library: Any,
               backend: str, dtypes: Sequence[str] | None, include_held_out: bool, seed: int,
               include_large: bool) -> _SpecRows:
    """The rows of the spec's instantiations (those whose row name is in `dtypes`), its kernel from
    `library` or compiled from the checkout for `backend`, the emulator instantiating only the spec's."""
    if library is not None:
        kernels = KernelSet("emulated", [KernelFile(Path(spec.kernel_file), library)])
    else:
        path = Path(checkout_root or ".") / spec.kernel_file
        if not path.is_file():
            raise UsageError(f"kernel file {spec.kernel_file} does not exist", hint="apply the port first")
        kernels = session.kernels([path], Path(checkout_root or "."), pick_backend(backend), (f"{spec.kernel_name}_*",))
    names = [_row_name(spec, t) for t in spec.dtypes]
    unknown = sorted(set(dtypes or ()) - set(names))
    if unknown:
        raise UsageError(f"spec {spec.op} has no dtype row {unknown[0]}", hint=f"rows: {', '.join(names)}")
    rows = [(name, t) for name, t in zip(names, spec.dtypes) if dtypes is None or name in dtypes]
    missing = [h for h in (spec.host_name(t) for _, t in rows) if h not in kernels.names]
    if missing:
        raise SpecError(f"spec {spec.op}: dtypes: the kernel file defines no kernel {missing[0]!r}",
                        location=spec.kernel_file, hint="instantiate every dtypes row")
    return _SpecRows(spec, kernels, rows, include_held_out, seed, include_large)


class _SpecRows:
    """A launch spec's rows (one per instantiation): its kernel launched as the spec's host launches
    it. Each row is drawn, referenced and judged before the next (a row's large cases are never
    held beside another's), with torch's unset outputs filled where the spec compares only what CPU
    sets (Note [unset outputs])."""

    def __init__(self, spec: LaunchSpec, kernels: KernelSet, rows: list[tuple[str, tuple[str, ...]]],
                 include_held_out: bool, seed: int, include_large: bool) -> None:
        self.spec, self.kernels, self.include_held_out, self.include_large = spec, kernels, include_held_out, include_large
        self.seed, self.names, self.types = seed, [name for name, _ in rows], [types for _, types in rows]
        self.rows = list(range(len(rows)))  # a row is its index: its seed is seed + index
        self.partial = any(o.compare == "cpu-set" for o in spec.outputs)
        self.notes: dict[int, list[str]] = {row: [] for row in self.rows}

    def judging_order(self) -> list[int]:
        return self.rows

    def draw(self, row: int) -> tuple[DtypeRun, list[Case]]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = SpecCases(self.spec, self.types[row], torch.Generator().manual_seed(self.seed + row),
                               self.include_large)
            cases, left_out = build_cases(source, self.include_held_out)
        if left_out:
            self.notes[row].append(f"{self.names[row]}: {len(left_out)} OpInfo calls of other overloads left out")
        return DtypeRun(self.names[row], (self.spec.kernel_file, None)), cases

    def references(self, row: int, cases: list[Case]) -> list[Any]:
        with warnings.catch_warnings(), unset_filled(self.partial):
            warnings.simplefilter("ignore")
            return references([c.call for c in cases])  # guarded where a call can trap

    def results(self, row: int, cases: list[Case], outcomes: list[Any]) -> list[CaseResult | None]:
        results, unset_total = [], 0
        for case, outcome in zip(cases, outcomes):
            result, unset = _judge_spec_case(self.spec, self.kernels, case, outcome,
                                             self.spec.host_name(self.types[row]), self.notes[row], self.names[row])
            unset_total += unset
            results.append(result)
        if unset_total:
            self.notes[row].append(f"{self.names[row]}: {unset_total} output elements torch's CPU kernel leaves unset not "
                                   f"compared (Note [unset outputs])")
        return results


    def report(self, runs: dict[int, DtypeRun], seed: int) -> ConformanceReport:
        notes = [note for row in self.rows for note in self.notes[row]]
        return judged_report(f"aten::{self.spec.op}", self.kernels.backend,
                             tuple(runs[row].verdict() for row in self.rows), first_few(notes) if notes else None,
                             seed, none_judged="no case reached the kernel")

def _judged(problem: str | None, error: float = 0.0) -> CaseResult:
    return CaseResult(problem is None, error, problem)


def _judge_spec_case(spec: LaunchSpec, kernels: KernelSet, case: Case, outcome: Any, host_name: str,
                     notes: list[str], row: str) -> tuple[CaseResult | None, int]:
    """(the result of one call of a spec-launched kernel, or None when the call is no case of this
    row; how many output elements torch left unset went uncompared). Refusals follow Note [refused
    calls]; a host that cannot launch the call skips it (noted)."""
    partial = any(o.compare == "cpu-set" for o in spec.outputs)
    if isinstance(outcome, Crashed):
        notes.append(f"{row} {case.label}: {CRASHED} ({outcome.how})")
        return CaseResult(True, 0.0, skipped=f"{CRASHED} ({outcome.how})"), 0
    refused = outcome.message if isinstance(outcome, Refused) else None
    want = None if refused is not None else outcome
    try:
        launch = plan_launch(spec, bind_call(case.call.func, case.call.args, case.call.kwargs))
        if launch.host_name != host_name:
            return None, 0  # the call selects another instantiation (counted in that row)
        got = run_launch(spec, kernels, launch, index_limit=case.index_limit)
    except HostCheckFailed as err:
        if refused is None or refused == str(err) or not meta_refuses(spec, case.call):
            return _judged(refusal_problem(refused, str(err))), 0
        return None, 0  # a meta function refusing first leaves the host's check unreached
    except UnmodelledCall as err:
        if refused is not None:
            return None, 0  # torch and the MPS host both refuse it: no case
        notes.append(f"{row} {case.label}: {err}")
        return CaseResult(True, 0.0, skipped=str(err)), 0
    except (SpecError, EmulateError) as err:
        return (_judged(err.message) if refused is None else None), 0
    if refused is not None:  # no case when the structured meta function refuses it before the MPS host
        return (None if meta_refuses(spec, case.call) else _judged(
            f"torch refuses the call ({refused}), the host computes a result: add a `checks:` entry to the spec")), 0
    unset = 0
    if partial:
        got, unset = mask_unset(spec, got, want)
    wanted = (want,) if isinstance(want, torch.Tensor) else tuple(want)
    tols = [tolerance_for(spec.op, w.dtype, spec_opinfo(spec)) for w in wanted]  # as test_mps judges the op
    judged = judge_outputs(got, wanted, tols, launch.host_name,
                           truths=lambda: spec_truth(case.call))
    error = max((largest_error(g, w, finite=True) for g, w in zip(got, wanted)
                 if w.is_floating_point() or w.is_complex()), default=0.0)
    if judged.by_truth:
        notes.append(f"{row} {case.kind}: {TRUTH_NOTE}")
    if judged.problem is not None and not judged.holes and spec.cases.get("index_ties") == "any-occurrence" \
            and launch.inputs:
        rows = launch.inputs[0].reshape(launch.derived["num_slices"], max(launch.derived["reduce_size"], 1))
        if any_occurrence(got, wanted, rows):
            # a right answer, not an excuse: an index the op leaves unspecified naming an equal element
            notes.append(f"{row} {case.kind}: differs from torch's CPU and is right: {ANY_OCCURRENCE}")
            return _judged(None, error), unset
    truths = (spec_truth(case.call) or ()) if judged.problem is not None else ()
    floating = wanted[0].is_floating_point() or wanted[0].is_complex()
    return case_result(judged, error, got, wanted, truths, case.call.operands(), with_ulps=floating), unset


def check_port_conformance(root: Path, plan: PortPlan, *, held_out: bool,
                           backend: str = "emulated") -> ConformanceReport:
    """The conformance report of `plan`'s kernels in the checkout at `root`, launched as the plan's
    launch kind says (Note [one port model]): a launch spec's kernel as the spec's host launches it,
    an elementwise port's functors through the modelled `exec_*_kernel` host. `held_out`: run the
    held-out cases too (the gate). CompileError and usage errors propagate."""
    target = load_spec(plan.launch or {}) if plan.launch_kind.by_spec else plan.op
    return run_conformance(Path(root), target, include_held_out=held_out, backend=backend)


def op_conformance(root: Path, op: str, **options: Any) -> ConformanceReport:
    """The conformance report of `op`'s kernels in the checkout at `root`, launched as its port
    launches them (`launch_in_tree`, the planner's word). `options`: dtypes, include_held_out,
    backend, seed."""
    from metalport.port import launch_in_tree

    kind, spec = launch_in_tree(Path(root), op)
    if kind.by_spec and spec is None:
        raise SpecError(f"{op}: a {kind.value} launch without its launch spec", hint="plan the port again")
    return run_conformance(Path(root), spec if kind.by_spec else op, **options)


__all__ = ["ConformanceReport", "ConformanceSession", "DtypeVerdict", "case_generator", "check_port_conformance",
           "op_conformance", "registering_files", "resolve_op", "run_conformance"]
