"""The emulated tier: compile the edited `.metal` files on the CPU, then run emulated conformance.

baseline = a type-check of the plan's kernel file as the base tree has it, before any edit (a
failure there is the base tree's, never the port's). build = `metalport.emulate.compile_file` on
every `.metal` the worktree changed (plus the plan's kernel file), instantiating only the op's
host names, against PyTorch's include path (the worktree root, `aten/src`, then the wheel);
compiler diagnostics become `Failure`s at the user's file and line. test =
`metalport.checks.conformance.check_port_conformance` (the plan's launch kind) on the emulated backend,
held-out cases included when asked (at the gate).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from metalport.port import PortPlan
from metalport.errors import CompileError, EmulateError, MetalportError
from metalport.failure import Failure

if TYPE_CHECKING:
    from metalport.checks.report import ConformanceReport



def _git_lines(root: Path, *argv: str) -> list[str]:
    try:
        proc = subprocess.run(["git", *argv], cwd=root, capture_output=True, text=True, timeout=60)
    except OSError:
        return []
    return proc.stdout.split() if proc.returncode == 0 else []


def edited_kernel_files(worktree_root: Path, plan: PortPlan) -> list[str]:
    """Relative paths of the `.metal` files to compile: changed in the worktree (tracked or new),
    plus the plan's kernel file when it exists."""
    changed = set(_git_lines(worktree_root, "diff", "--name-only", "HEAD"))
    changed |= set(_git_lines(worktree_root, "ls-files", "--others", "--exclude-standard"))
    if plan.kernel_file:
        changed.add(plan.kernel_file)
    return sorted(p for p in changed if p.endswith(".metal") and (worktree_root / p).is_file())


def include_dirs(worktree_root: Path) -> tuple[Path, ...]:
    """PyTorch's Metal include path: the worktree root, `<root>/aten/src`, then the wheel's `include`."""
    from metalport.emulate import checkout_include_dirs

    return checkout_include_dirs(worktree_root)


def _compile_failures(err: CompileError, rel: str) -> list[Failure]:
    from metalport.emulate.diagnostics import failures

    found = [f for f in failures(err) if f.kind != "compile-warning"]
    return found or [Failure("compile-error", rel, None, None, err.message)]


def op_kernels(plan: PortPlan) -> tuple[str, ...] | None:
    """Host-name patterns of the op's kernels (`<kernel>_*`: every flavour and dtype the
    registrations make), or None (every kernel) when the plan names no kernel."""
    return (f"{plan.kernel_name}_*",) if plan.kernel_name else None


def build(worktree_root: Path, plan: PortPlan) -> list[Failure]:
    """Compile each edited `.metal` file, instantiating only the op's kernels; return the compile
    errors as failures (`[]` = built).

    A plan without kernel files to compile is a failure too (nothing would be tested).
    """
    from metalport.emulate import compile_file

    root = Path(worktree_root).resolve()
    files = edited_kernel_files(root, plan)
    if not files:
        return [Failure("compile-error", plan.kernel_file, None, None,
                        f"no edited .metal file to compile for aten::{plan.op}")]
    dirs = include_dirs(root)
    out: list[Failure] = []
    for rel in files:
        try:
            compile_file(root / rel, include_dirs=dirs, filename=rel, kernels=op_kernels(plan)).close()
        except CompileError as err:
            out += _compile_failures(err, rel)
        except EmulateError as err:
            out.append(Failure("compile-error", rel, None, None, str(err)))
    return out


def baseline(worktree_root: Path, plan: PortPlan) -> list[Failure]:
    """Type-check the plan's kernel file as the untouched base tree has it, every host-named
    kernel instantiated; its compile errors (`[]` when it compiles or the port creates the file).

    Run before any edit: a failure here belongs to the base tree (or to the emulator), so the run
    stops (status base-broken) instead of sending upstream code to the repair loop."""
    from metalport.emulate import check_file

    root = Path(worktree_root).resolve()
    rel = plan.kernel_file
    if not rel or not (root / rel).is_file():
        return []
    try:
        check_file(root / rel, include_dirs=include_dirs(root), filename=rel)
    except CompileError as err:
        return _compile_failures(err, rel)
    except EmulateError as err:
        return [Failure("compile-error", rel, None, None, str(err))]
    return []


def _failed_report(plan: PortPlan, message: str, backend: str = "emulated") -> ConformanceReport:
    from metalport.checks.report import ConformanceReport

    return ConformanceReport(f"aten::{plan.op}", backend, "fail", (), message)


def conformance(worktree_root: Path, plan: PortPlan, *, held_out: bool,
                backend: str) -> tuple[ConformanceReport, list[Failure]]:
    """(`ConformanceReport`, failures) of `check_port_conformance` on `backend`; compile and usage errors
    become a failed report with their failures."""
    from metalport.checks.conformance import check_port_conformance

    root = Path(worktree_root).resolve()
    try:
        report = check_port_conformance(root, plan, held_out=held_out, backend=backend)
    except CompileError as err:
        rel = plan.kernel_file or "kernel"
        return _failed_report(plan, f"compile error: {err.message}", backend), _compile_failures(err, rel)
    except MetalportError as err:
        failure = Failure("conformance", plan.kernel_file, None, None, str(err))
        return _failed_report(plan, str(err), backend), [failure]
    failures = [f for verdict in report.dtypes for f in verdict.failures]
    return report, failures


def test(worktree_root: Path, plan: PortPlan, *, held_out: bool) -> tuple[ConformanceReport, list[Failure]]:
    """Emulated conformance of the op's kernels; held-out cases run when `held_out` (the gate)."""
    return conformance(worktree_root, plan, held_out=held_out, backend="emulated")


class EmulatedExecutor:
    """`Executor` of the emulated tier (the default off macOS)."""

    name = "emulated"

    def baseline(self, worktree_root: Path, plan: PortPlan) -> list[Failure]:
        """See `baseline`."""
        return baseline(worktree_root, plan)

    def build(self, worktree_root: Path, plan: PortPlan) -> list[Failure]:
        """See `build`."""
        return build(worktree_root, plan)

    def test(self, worktree_root: Path, plan: PortPlan, *,
             held_out: bool) -> tuple[ConformanceReport, list[Failure]]:
        """See `test`."""
        return test(worktree_root, plan, held_out=held_out)
