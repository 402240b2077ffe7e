"""`run_conformance`: an emulated `test_output_match` for one pointwise op's Metal kernels.

For each dtype the op's kernel files register, every OpInfo sample (recorded at the ATen level on
CPU), fresh random draws and, separately, held-out edge cases run through torch on CPU (the
reference) and through the kernel as the modelled MPS host would dispatch it (`hostmodel`).
Outputs are poisoned first; results are compared with test_mps-style tolerances.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from metalport.checks.backend import KernelSet, compile_files, pick_backend
from metalport.checks.families import classify
from metalport.checks.hostcode import find_host_code
from metalport.checks.hostmodel import MissingKernel, UnmodelledCall
from metalport.checks.report import NO_HOST_MODEL, ConformanceReport, DtypeVerdict
from metalport.checks.runner import REJECTED, CaseResult, Prepared, dispatch, judge, prepare_case
from metalport.checks.samples import (Call, Family, bind, find_opinfo, held_out_operands, opinfo_calls,
                                      random_operands, random_tensor, schema_template)
from metalport.checkout.layout import KERNELS_DIR as LAYOUT_KERNELS_DIR
from metalport.errors import UnknownOpError, UsageError
from metalport.failure import Failure

KERNELS_DIR = Path(LAYOUT_KERNELS_DIR)
RANDOM_CASES = 4
_MAX_FAILURES = 5
_DTYPE_ALIASES = {"half": "float16", "float": "float32", "bfloat": "bfloat16", "int": "int32", "long": "int64",
                  "short": "int16", "char": "int8", "uchar": "uint8", "float2": "complex64", "double": "float64"}


class ConformanceSession:
    """Compiled kernel files kept loaded across `run_conformance` calls (one worker per library).

    A file is reused while its bytes are unchanged; `close()` (or leaving the `with` block) stops
    the workers. Without a session each call loads and stops its own.
    """

    def __init__(self) -> None:
        self._loaded: dict[tuple[str, str, tuple[tuple[str, str], ...]], KernelSet] = {}

    def kernels(self, files: Sequence[Path], checkout_root: Path, backend: str) -> KernelSet:
        """The KernelSet for `files`, compiled (or reloaded from the shader cache) on first use."""
        digest = tuple((str(p), hashlib.sha256(p.read_bytes()).hexdigest()) for p in files if p.is_file())
        key = (backend, str(checkout_root), digest)
        if key not in self._loaded:
            self._loaded[key] = compile_files(files, checkout_root, backend)
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


def registering_files(checkout_root: Path, base: str) -> list[Path]:
    """Every `.metal` under the checkout's kernels directory that registers `base`'s functor."""
    pattern = re.compile(rf"\bREGISTER_\w*\(\s*{re.escape(base)}\s*[,)]")
    kernels = checkout_root / KERNELS_DIR
    return [p for p in sorted(kernels.glob("*.metal"))
            if pattern.search(p.read_text(encoding="utf-8", errors="replace"))]


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


class _DtypeRun:
    """Accumulates one dtype's case results into a DtypeVerdict."""

    def __init__(self, dtype: torch.dtype, where: tuple[str, int | None]) -> None:
        self.dtype, self.where = dtype, where
        self.samples = self.passed = self.held = self.held_passed = self.skipped = self.rejected = 0
        self.worst: tuple[float, str] | None = None
        self.failures: list[Failure] = []
        self.held_inputs: list[str] = []
        self.unmodelled: list[str] = []

    def add(self, result: CaseResult, label: str, call: Call, held_out: bool) -> None:
        if result.skipped is not None:
            if result.skipped.startswith(REJECTED):
                self.rejected += 1  # a generated input torch itself refuses: no case, no host-model gap
                return
            self.skipped += 1
            self.unmodelled.append(result.skipped)
            return
        if held_out:
            self.held += 1
            self.held_passed += result.ok
            if not result.ok:
                self.held_inputs.append(f"{label}: {call.describe()}: {result.message}; inputs: "
                                        f"{[t.tolist() if t.numel() <= 64 else 'large' for t in call.operands()]}")
            return
        self.samples += 1
        self.passed += result.ok
        if self.worst is None or result.error > self.worst[0]:
            self.worst = (result.error, f"{label}: {call.describe()}")
        if not result.ok and len(self.failures) < _MAX_FAILURES:
            self.failures.append(Failure("conformance", self.where[0], self.where[1], None,
                                         f"{str(self.dtype).removeprefix('torch.')} {label}: {call.describe()}: "
                                         f"{result.message}"))

    def verdict(self) -> DtypeVerdict:
        failures = list(self.failures)
        if self.held_passed < self.held:
            failures.append(Failure("held-out", self.where[0], self.where[1], None,
                                    f"{self.held - self.held_passed} of {self.held} held-out cases fail for "
                                    f"{str(self.dtype).removeprefix('torch.')} (inputs withheld)"))
        worst = self.worst
        return DtypeVerdict(str(self.dtype).removeprefix("torch."), self.samples, self.passed,
                            None if worst is None else worst[0], None if worst is None else worst[1],
                            tuple(failures), self.held, self.held_passed, tuple(self.held_inputs), self.skipped)


Case = tuple[str, Call, bool, str | None]  # label, call, held out, forced dense flavour


def build_cases(family: Family, base: str, packet: Any, dtype: torch.dtype, gen: torch.Generator,
                held_out: bool) -> tuple[list[Case], list[str]]:
    """The cases for one dtype (OpInfo, random, then held-out) and why recorded calls were skipped."""
    info = find_opinfo(base)
    skipped: list[str] = []
    cases: list[Case] = []
    template: Call | None = None
    if info is not None:
        for k, (func, args, kwargs) in enumerate(opinfo_calls(info, packet, dtype)):
            try:
                call = bind(func, args, kwargs, family)
            except UnmodelledCall as err:
                skipped.append(str(err))
                continue
            cases.append((f"opinfo sample {k}", call, False, None))
            if template is None and all(isinstance(t, torch.Tensor) and t.dim() > 0 for t in call.operands()):
                template = call
        template = template or next((c for _, c, _, _ in cases), None)
    if template is None:
        overload = getattr(packet, "default", None) or getattr(packet, packet.overloads()[0])
        template = schema_template(overload, family, dtype, gen)
    if template is None:
        return cases, skipped
    tensor_slots = [i for i, s in enumerate(template.slots) if isinstance(template._get(s), torch.Tensor)]
    ops = template.operands()
    for label, values, force in random_operands([ops[i] for i in tensor_slots], gen, RANDOM_CASES):
        cases.append((label, _substitute(template, tensor_slots, values), False, force))
    mixed = _scalar_partner(dtype)
    if len(tensor_slots) >= 2 and mixed is not None and ops[tensor_slots[-1]].dtype == dtype:
        values = [random_tensor((6, 5), ops[i].dtype, gen) for i in tensor_slots[:-1]]
        values.append(random_tensor((), mixed, gen))
        call = _substitute(template, tensor_slots, values)
        if _same_output_dtype(call, template):  # only where torch's promotion keeps the output dtype
            cases.append((f"random 0-dim {str(mixed).removeprefix('torch.')} operand", call, False, None))
    if held_out:
        for label, values, force in held_out_operands([ops[i].dtype for i in tensor_slots], gen):
            cases.append((f"held-out {label}", _substitute(template, tensor_slots, values), True, force))
    return cases, skipped


def _same_output_dtype(call: Call, template: Call) -> bool:
    try:
        out, ref = call.run(), template.run()
    except (RuntimeError, ValueError, TypeError):
        return False
    return isinstance(out, torch.Tensor) and isinstance(ref, torch.Tensor) and out.dtype == ref.dtype


def _scalar_partner(dtype: torch.dtype) -> torch.dtype | None:
    """A 0-dim operand dtype that keeps `dtype` as the result but makes the host cast (or promote)."""
    if dtype == torch.bool or dtype.is_complex:
        return None
    if dtype.is_floating_point:
        return torch.int64 if dtype == torch.float32 else torch.float32
    return torch.int32 if dtype == torch.int64 else torch.int64


def _substitute(template: Call, slots: list[int], values: Sequence[torch.Tensor]) -> Call:
    current = [template._get(s) for s in template.slots]
    for i, v in zip(slots, values):
        current[i] = v
    return template.with_operands(current)


def run_conformance(checkout_root: Path, op: str, *, kernel_files: Sequence[Path] | None = None,
                    dtypes: Sequence[str] | None = None, include_held_out: bool = True,
                    backend: str = "auto", seed: int | None = None,
                    session: ConformanceSession | None = None) -> ConformanceReport:
    """Compare the op's Metal kernels with torch on CPU; see the module docstring.

    UnknownOpError for an unknown op, UsageError when no kernel file registers it or a dtype is
    not registered; compile errors propagate as CompileError.
    """
    checkout_root = Path(checkout_root)
    base, packet = resolve_op(op)
    name = f"aten::{base}"
    chosen = pick_backend(backend)
    host = find_host_code(checkout_root, base)
    if host.unmodelled is not None or host.kernel is None:
        return ConformanceReport(name, chosen, "no-host-model", (), f"{host.unmodelled}; {NO_HOST_MODEL}")
    kernel = host.kernel
    files = [Path(p) for p in kernel_files] if kernel_files else registering_files(checkout_root, kernel)
    if not files:
        raise UsageError(f"no kernel file under {KERNELS_DIR} registers {kernel}",
                         hint=f"add REGISTER_*_OP({kernel}, ...) to a .metal file there, or pass kernel files")
    with ConformanceSession() if session is None else _borrowed(session) as active, warnings.catch_warnings():
        # torch warns on every complex32 tensor made; MPS runs complex32, so conformance checks it.
        warnings.filterwarnings("ignore", "ComplexHalf support is experimental", UserWarning)
        kernels = active.kernels(files, checkout_root, chosen)
        return _run(kernels, name, base, kernel, packet, files, checkout_root, chosen, dtypes, include_held_out,
                    seed)


@contextlib.contextmanager
def _borrowed(session: ConformanceSession) -> Iterator[ConformanceSession]:
    """The caller's session, left open."""
    yield session


def _run(kernels: KernelSet, name: str, base: str, kernel: str, packet: Any, files: list[Path],
         checkout_root: Path, chosen: str, dtypes: Sequence[str] | None, include_held_out: bool,
         seed: int | None) -> ConformanceReport:
    found = classify(kernels.names, kernel)
    if found is None:
        return ConformanceReport(name, chosen, "no-host-model", (),
                                 f"{kernel}'s kernels follow no modelled exec_*_kernel convention; {NO_HOST_MODEL}")
    family, registered = found
    wanted = registered
    if dtypes:
        wanted = parse_dtypes(dtypes)
        missing = [str(d).removeprefix("torch.") for d in wanted if d not in registered]
        if missing:
            have = ", ".join(str(d).removeprefix("torch.") for d in registered)
            raise UsageError(f"{kernel}'s kernels register no {', '.join(missing)}", hint=f"registered: {have}")
    seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
    verdicts = []
    unmodelled: list[str] = []
    rejected = 0
    for dtype in wanted:
        gen = case_generator(seed, dtype)
        metal = {v: k for k, v in _metal_names().items()}[dtype]
        where_file = next((f for f in files if _register_line(f, kernel, metal)), files[0])
        run = _DtypeRun(dtype, (_rel(where_file, checkout_root), _register_line(where_file, kernel, metal)))
        cases, skipped = build_cases(family, base, packet, dtype, gen, include_held_out)
        run.skipped += len(skipped)
        run.unmodelled += skipped
        staged: list[Prepared | CaseResult] = []
        for _, call, _, force in cases:
            try:
                staged.append(prepare_case(kernels, family, kernel, call, force))
            except MissingKernel as err:
                staged.append(CaseResult(False, float("inf"), f"the host would ask for kernel {err.kernel}, which "
                                         f"no kernel file defines (MPS: 'Failed to create function state object')"))
        ready = [p for p in staged if isinstance(p, Prepared)]
        errors = dict(zip(map(id, ready), dispatch(kernels, ready)))
        for (label, call, held, _), item in zip(cases, staged):
            result = judge(base, item, errors[id(item)]) if isinstance(item, Prepared) else item
            run.add(result, label, call, held)
        unmodelled += run.unmodelled
        rejected += run.rejected
        verdicts.append(run.verdict())
    return _report(name, chosen, tuple(verdicts), unmodelled, rejected, seed)


_DTYPE_SALT = {torch.float32: 1, torch.float16: 2, torch.bfloat16: 3, torch.int32: 4, torch.int64: 5,
               torch.int16: 6, torch.int8: 7, torch.uint8: 8, torch.bool: 9, torch.complex64: 10}


def case_generator(seed: int, dtype: torch.dtype) -> torch.Generator:
    """The generator of random and held-out values for `dtype` under `seed`."""
    return torch.Generator().manual_seed(seed + _DTYPE_SALT.get(dtype, 0))


def _metal_names() -> dict[str, torch.dtype]:
    from metalport.checks.hostmodel import METAL_DTYPES

    return METAL_DTYPES


def _report(name: str, backend: str, verdicts: tuple[DtypeVerdict, ...], unmodelled: list[str], rejected: int,
            seed: int) -> ConformanceReport:
    counted = sum(d.samples + d.held_out_samples for d in verdicts)
    reason = None
    if unmodelled:
        kinds = sorted(set(unmodelled))
        reason = (f"{len(unmodelled)} calls skipped, {NO_HOST_MODEL}: " + "; ".join(kinds[:3])
                  + (f" (+{len(kinds) - 3} more)" if len(kinds) > 3 else ""))
    if rejected:
        dropped = f"{rejected} generated inputs dropped ({REJECTED})"
        reason = f"{reason}; {dropped}" if reason else dropped
    if counted == 0:
        return ConformanceReport(name, backend, "no-host-model", verdicts,
                                 reason or f"no sample reached a modelled host convention; {NO_HOST_MODEL}", seed)
    status = "pass" if all(d.ok for d in verdicts) else "fail"
    return ConformanceReport(name, backend, status, verdicts, reason, seed)


__all__ = ["ConformanceReport", "ConformanceSession", "DtypeVerdict", "build_cases", "case_generator",
           "registering_files", "resolve_op", "run_conformance"]
