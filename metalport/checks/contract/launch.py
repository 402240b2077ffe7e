"""The part of the contract that depends on how the port's kernel is launched (Note [one port
model] in port/plan/launch.py), one function per launch kind, sharing what every kind checks.

Every kind: the registry passes torchgen and the op's rows route MPS where the launch says; a stub
the launch registers is declared and registered for MPS exactly once, natively. The elementwise
kind: every row collapsed onto the shared CPU/CUDA kernel, every stub of the CPU kernel's route
registered, none the route does not call, the host stub's kernel name registered for the planned
dtypes. A launch spec: its host function defined once under `operations/` as `hostgen` writes it
(whitespace aside), its kernel file defining the kernel and instantiating exactly its host names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from metalport.checkout.layout import KERNELS_DIR, OPERATIONS_DIR, Checkout
from metalport.checkout.sources import header_stubs, ImplKind, MpsFunction, Registration, Sources, scan_sources
from metalport.checks.contract.hostcode import registered_function
from metalport.errors import MetalportError, RegistryError
from metalport.failure import Failure
from metalport.port import (host_line, instantiates, LaunchSpec, load_spec, mps_only_lines, NATIVE_FUNCTIONS,
                            PortPlan, routed_entry, skip_to_close, write_host)
from metalport.registry.model import Op
from metalport.registry.validate import validate_registry

_BACKENDS = ("CPU", "CUDA")


def contract_failure(check: str, message: str, file: str | None = None, line: int | None = None) -> Failure:
    """One contract failure, tagged with the check that found it."""
    return Failure("contract", file, line, None, f"[{check}] {message}")


_fail = contract_failure


def launch_checks(worktree_root: Path, plan: PortPlan, added: dict[str, list[tuple[int, str]]]) -> list[Failure]:
    """The contract failures of the plan's launch kind (`added`: the lines the port added, per path)."""
    spec = load_spec(plan.launch or {}) if plan.launch_kind.by_spec else None
    op, failures = _registry_op(worktree_root, plan)
    if spec is not None:  # a launch spec (PENDING: no launch yet, checked as a stub port)
        return [*failures, *_spec_rows(op, spec), *_host_checks(worktree_root, spec, plan),
                *_kernel_checks(worktree_root, spec), *_spec_stub(worktree_root, spec)]
    if plan.bodies:  # Note [iterator bodies] (port/plan/bodies.py): rows kept, bodies rewritten
        return [*failures, *_bodies_checks(worktree_root, plan, op)]
    return [*failures, *_registry_checks(plan, op), *_stub_checks(worktree_root, plan, added)]


def _bodies_checks(worktree_root: Path, plan: PortPlan, op: Op | None) -> Iterator[Failure]:
    """An iterator-bodies port: every `MPS:` row of `op` (None: the registry failed) still names a
    function the tree defines, each rewritten function launches the planned kernel and runs no
    MPSGraph, and the kernel file registers that kernel for every planned dtype."""
    if op is None:
        return
    sources = scan_sources(Checkout(worktree_root))
    for entry in op.entries:
        for d in mps_only_lines(entry):
            if sources.function(d.kernel) is None:
                yield _fail("rows", f"{entry.full_name} dispatches MPS to {d.kernel}, which no .mm defines",
                            NATIVE_FUNCTIONS, d.line)
    for rel, function, _ in plan.bodies:
        fn = sources.function(function)
        if fn is None:
            yield _fail("bodies", f"{function} is no longer defined; its row still names it", rel)
        elif fn.kind is ImplKind.GRAPH or not any(c.kernel == plan.kernel_name for c in fn.calls):
            yield _fail("bodies", f"{function} does not launch {plan.kernel_name} through an exec_*_kernel call "
                        f"(or, for a backward over halves, its `{plan.kernel_name}_halves_{{}}` pipeline)",
                        fn.where.file, fn.where.line)
    kernel_file = worktree_root / (plan.kernel_file or "")
    text = kernel_file.read_text(encoding="utf-8") if plan.kernel_file and kernel_file.is_file() else ""
    for t in plan.dtypes:
        # `REGISTER_HALVES_BACKWARD_OP(op, T)` takes one type (Note [grad over halves], port/write/halves.py)
        if not re.search(rf"\bREGISTER_\w+_OP\(\s*{re.escape(plan.kernel_name or '')}\s*,\s*{t}\s*[,)]", text):
            yield _fail("bodies", f"{plan.kernel_name} is not registered for {t}", plan.kernel_file)


def _registry_op(worktree_root: Path, plan: PortPlan) -> tuple[Op | None, list[Failure]]:
    """The plan's op in the worktree's registry after torchgen validates it, or (None, the failure)."""
    try:
        registry = validate_registry(worktree_root / NATIVE_FUNCTIONS, Checkout(worktree_root).tags)
    except RegistryError as err:
        where = (err.location or "").rsplit(":", 1)
        line = int(where[1]) if len(where) == 2 and where[1].isdigit() else None
        return None, [_fail("registry", err.message, NATIVE_FUNCTIONS, line)]
    try:
        return registry.resolve(plan.op), []
    except MetalportError as err:
        return None, [_fail("rows", f"aten::{plan.op} is no longer in the registry: {err.message}", NATIVE_FUNCTIONS)]


def _registered_once(worktree_root: Path, sources: Sources, stub: str, host_file: str | None,
                     route: str = "") -> Iterator[Failure]:
    """`stub` is declared, and registered for MPS exactly once, by a native (not MPSGraph) kernel."""
    if not _declared(worktree_root, stub):
        yield _fail("stub", f"{stub} is not declared (no DECLARE_DISPATCH in the tree or the wheel's headers)")
    regs = sources.registrations_of(stub)
    if not regs:
        yield _fail("stub", f"{stub} must be registered for MPS exactly once, found 0{route}", host_file)
    elif len(regs) > 1:
        where = ", ".join(f"{r.where}" + (f" by {r.macro}" if r.macro else "") for r in regs)
        yield _fail("stub", f"{stub} must be registered for MPS exactly once, found {len(regs)} ({where}): "
                    f"a link error", regs[1].where.file, regs[1].where.line)
    elif regs[0].kind is ImplKind.GRAPH:
        yield _fail("stub", f"{stub} is still registered with an MPSGraph kernel "
                    f"{regs[0].kernel}", regs[0].where.file, regs[0].where.line)


def _registry_checks(plan: PortPlan, op: Op | None) -> Iterator[Failure]:
    if op is None:
        return
    changed = {r.entry for r in plan.rows}
    for entry in op.entries:
        for d in mps_only_lines(entry):
            if (entry.full_name, d.kernel) not in plan.kept_rows:  # Note [kept rows] (port/tree/resolve.py)
                yield _fail("rows", f"{entry.full_name} still dispatches MPS to {d.kernel}; route it to the "
                            f"shared kernel", NATIVE_FUNCTIONS, d.line)
        host = host_line(entry)
        if entry.full_name in changed and host is not None and "MPS" not in host.keys:
            yield _fail("rows", f"{entry.full_name} does not dispatch MPS to the shared kernel {host.kernel}",
                        NATIVE_FUNCTIONS, host.line)


def _declared(worktree_root: Path, stub: str) -> bool:
    """Whether a header of the tree or the wheel declares `stub` (multi-line declarations too)."""
    from metalport.torch_facts import torch_include_dir

    for root in (Checkout(worktree_root).native_dir, torch_include_dir() / "ATen/native"):
        texts = {str(h): h.read_text(encoding="utf-8", errors="replace") for h in root.rglob("*.h")}
        if any(d.name == stub for d in header_stubs(texts)):
            return True
    return False


def _stub_checks(worktree_root: Path, plan: PortPlan, added: dict[str, list[tuple[int, str]]]) -> Iterator[Failure]:
    """The stubs the op's CPU kernel calls (`plan.stubs`) are each registered for MPS exactly once,
    natively; the port registers no stub that kernel does not call."""
    if not plan.stub:
        yield _fail("stub", f"aten::{plan.op} has no dispatch stub to register for MPS")
        return
    sources = scan_sources(Checkout(worktree_root))
    route = f"; {plan.stub_route}" if plan.stub_route else ""
    for stub in plan.stubs or (plan.stub,):
        yield from _registered_once(worktree_root, sources, stub, plan.host_file, route)
        regs = sources.registrations_of(stub)
        if regs and stub == plan.stub:
            fn = registered_function(sources, regs[0])
            yield from _kernel_name_checks(worktree_root, plan, sources, regs[0], fn)
            yield from _foreign_stub_check(plan, sources, regs[0])
            yield from _params_checks(worktree_root, plan, fn)
    yield from _uncalled(plan, sources, added, route)


def _foreign_stub_check(plan: PortPlan, sources: Sources, reg: Registration) -> Iterator[Failure]:
    """A kernel that calls another op's stub with a negated scalar (`sub_out`: `add_stub(..., -alpha)`)
    relies on that op's computation: the kernel registered for `add_stub` must add, not run `sub`."""
    owner = plan.stub.removesuffix("_stub") if plan.stub else ""
    if not any(a.lstrip().startswith("-") for a in plan.stub_args) or owner == plan.op:
        return
    fn = sources.function(reg.kernel.split("::")[-1])
    runs = sorted({c.kernel for c in fn.calls}) if fn else []
    if runs and not all(k == owner or k.startswith(f"{owner}_") for k in runs):
        yield _fail("stub", f"{plan.stub} is called with {', '.join(plan.stub_args)} ({plan.stub_route}), so the "
                    f"kernel registered for it must compute {owner}; {fn.name if fn else reg.kernel} runs "
                    f"{', '.join(repr(k) for k in runs)}", reg.where.file, reg.where.line)


def _uncalled(plan: PortPlan, sources: Sources, added: dict[str, list[tuple[int, str]]],
              route: str) -> Iterator[Failure]:
    """Registrations the port added for stubs its op's kernel does not call (`route` ends each message)."""
    wanted = set(plan.stubs or (plan.stub,))
    for reg in sources.registrations:
        if reg.where.line not in {n for n, _ in added.get(reg.where.file, ())} or reg.stub in wanted:
            continue
        why = f"nothing calls {reg.stub}" if sources.route_files and not sources.callers(reg.stub) \
            else f"aten::{plan.op}'s kernel does not call {reg.stub}"
        yield _fail("stub", f"{why}, yet the port registers it{route}", reg.where.file, reg.where.line)


def _params_checks(worktree_root: Path, plan: PortPlan, fn: MpsFunction | None) -> Iterator[Failure]:
    """Note [params route] (port/plan/params.py): the registered host function uses every scalar its stub
    passes (a scalar taken and ignored, softplus's `beta`, is a wrong result the emulated host cannot
    see, as it fills the struct itself) and launches through an `exec_*_kernel_with_params`."""
    if not plan.params or fn is None or not (worktree_root / fn.where.file).is_file():
        return  # a missing function is reported by the kernel-name check
    text = (worktree_root / fn.where.file).read_text(encoding="utf-8", errors="replace")
    start = sum(len(line) for line in text.splitlines(keepends=True)[:fn.where.line - 1])
    brace = text.find("{", start)
    end = skip_to_close(text, brace) if brace >= 0 else -1
    body = text[brace:end] if end > brace else ""
    for name, *_ in plan.params:
        if not re.search(rf"\b{re.escape(name)}\b", body):
            yield _fail("params", f"{fn.name} takes {name} but never passes it to the kernel: the params struct "
                        f"{plan.params_type} must carry every scalar of {plan.stub}", fn.where.file, fn.where.line)
    if "_kernel_with_params(" not in body:
        yield _fail("params", f"{fn.name} does not launch through exec_*_kernel_with_params; the {plan.params_type} "
                    f"kernels take the params struct", fn.where.file, fn.where.line)


def _kernel_name_checks(worktree_root: Path, plan: PortPlan, sources: Sources, reg: Registration,
                        fn: MpsFunction | None) -> Iterator[Failure]:
    """`fn` (registered by `reg`) passes kernel names the kernel files register for every planned dtype."""
    rel = reg.where.file
    if fn is None:
        yield _fail("kernel-name", f"{reg.kernel.split('::')[-1]} registered for {reg.stub} is not defined", rel,
                    reg.where.line)
        return
    line = fn.where.line
    names = sorted({c.kernel for c in fn.calls})
    if not names:
        yield _fail("kernel-name", f"{fn.name} passes no kernel name to an exec_*_kernel call", fn.where.file, line)
        return
    metal_texts = [p.read_text(encoding="utf-8") for p in (worktree_root / KERNELS_DIR).glob("*.metal")]
    for name in names:
        registered = {s.args[0] for s in sources.shader_ops if s.name == name and s.args}
        missing = [t for t in plan.dtypes if t not in registered]
        if not registered:
            yield _fail("kernel-name", f"{fn.name} runs kernel \"{name}\" but no .metal file registers it", rel, line)
        elif missing:
            yield _fail("kernel-name", f"kernel \"{name}\" is not registered for planned dtype(s) "
                        f"{', '.join(missing)}", plan.kernel_file, None)
        if registered and not any(re.search(rf"\bstruct {re.escape(name)}_functor\b", t) for t in metal_texts):
            yield _fail("kernel-name", f"no 'struct {name}_functor' in the kernel files", plan.kernel_file, None)


def _spec_rows(op: Op | None, spec: LaunchSpec) -> Iterator[Failure]:
    if op is None:
        return
    full = f"{spec.op}.{spec.overload}" if spec.overload else spec.op
    named = next((e for e in op.entries if e.full_name == full), None)
    if named is not None:
        full = routed_entry(op.entries, named).full_name
    shared = set(spec.host_shared)
    for entry in op.entries:
        mps, cpu = entry.kernel_for("MPS"), entry.kernel_for("CPU")
        if entry.full_name in shared:
            if mps is None or cpu is None or mps.kernel != cpu.kernel:
                yield _fail("rows", f"{entry.full_name} should share its CPU/CUDA function with MPS "
                            f"(`CPU, CUDA, MPS: {cpu.kernel if cpu else '...'}`)", NATIVE_FUNCTIONS, entry.span.start)
        elif entry.full_name == full and spec.stub is not None:
            if mps is None or cpu is None or mps.kernel != cpu.kernel:
                yield _fail("rows", f"{entry.full_name} should dispatch MPS to its CPU/CUDA function, which reaches "
                            f"{spec.stub.name} (`CPU, CUDA, MPS: {cpu.kernel if cpu else '...'}`)"
                            + (f"; it names {mps.kernel}" if mps else ""), NATIVE_FUNCTIONS, entry.span.start)
        elif entry.full_name == full and (mps is None or mps.kernel != spec.host_function):
            yield _fail("rows", f"{entry.full_name} does not dispatch MPS to {spec.host_function}"
                        + (f" (it names {mps.kernel})" if mps else ""), NATIVE_FUNCTIONS, entry.span.start)
        elif mps is None and any(entry.kernel_for(k) for k in _BACKENDS):
            yield _fail("rows", f"{entry.full_name} has a CPU/CUDA kernel but no MPS line: route it to the new "
                        f"kernel too", NATIVE_FUNCTIONS, entry.span.start)


def _definitions(root: Path, name: str) -> list[tuple[str, int]]:
    """(file, line) of every top-level definition of function `name` in the operations .mm files."""
    name = re.escape(name)
    pattern = re.compile(rf"^(?:[A-Za-z_][\w:<>,\s&*]*\b{name}\s*\(|TORCH_IMPL_FUNC\(\s*{name}\s*\))")
    out = []
    for path in sorted((root / OPERATIONS_DIR).glob("*.mm")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        rel = path.relative_to(root).as_posix()
        out += [(rel, i) for i, line in enumerate(lines, 1) if pattern.match(line) and not line.rstrip().endswith(";")]
    return out


def _host_checks(root: Path, spec: LaunchSpec, plan: PortPlan) -> Iterator[Failure]:
    found = _definitions(root, spec.host_function)
    if not found:
        yield _fail("host", f"{spec.host_function} is not defined under {OPERATIONS_DIR}", spec.host_file)
        return
    if len(found) > 1:
        where = ", ".join(f"{f}:{n}" for f, n in found)
        yield _fail("host", f"{spec.host_function} is defined {len(found)} times ({where}); once is the contract",
                    found[1][0], found[1][1])
    rel, line = found[0]
    if rel != spec.host_file:
        yield _fail("host", f"{spec.host_function} is in {rel}, the spec says {spec.host_file}", rel, line)
    if plan.schema:
        body = write_host(spec, plan.schema)
        at = re.search(rf"[ (]{re.escape(spec.host_function)}[()]", body)
        start = body.rfind("\n", 0, at.start() if at else 0) + 1  # the definition line
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        if re.sub(r"\s+", "", body[start:]) not in re.sub(r"\s+", "", text):  # whitespace aside
            yield _fail("host", f"{spec.host_function} differs from the host code its launch spec gives "
                        f"(buffers, constants or geometry edited by hand?)", rel, line)


def _kernel_checks(root: Path, spec: LaunchSpec) -> Iterator[Failure]:
    path = root / spec.kernel_file
    if not path.is_file():
        yield _fail("kernel-name", f"{spec.kernel_file} does not exist", spec.kernel_file)
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    if not re.search(rf"\bkernel\s+void\s+{re.escape(spec.kernel_name)}\s*\(", text):
        yield _fail("kernel-name", f"no 'kernel void {spec.kernel_name}(' in {spec.kernel_file}", spec.kernel_file)
    for host in spec.host_names:
        if not instantiates(text, spec.kernel_name, host):
            yield _fail("kernel-name", f"the spec's instantiation {host!r} is not registered", spec.kernel_file)
    for literal in re.findall(rf'"({re.escape(spec.kernel_name)}_\w+)"', text):
        if literal not in spec.host_names:
            yield _fail("kernel-name", f"kernel {literal!r} is registered but the spec does not list it",
                        spec.kernel_file)


def _spec_stub(root: Path, spec: LaunchSpec) -> Iterator[Failure]:
    """The spec's stub registered for MPS exactly once, to the spec's host function (Note [stub reductions])."""
    if spec.stub is None:
        return
    sources = scan_sources(Checkout(root))
    yield from _registered_once(root, sources, spec.stub.name, spec.host_file)
    regs = sources.registrations_of(spec.stub.name)
    registered = regs[0].kernel.split("::")[-1] if len(regs) == 1 else spec.host_function
    if registered != spec.host_function:
        yield _fail("stub", f"{spec.stub.name} is registered to {registered}, the spec says {spec.host_function}",
                    regs[0].where.file, regs[0].where.line)


__all__ = ["contract_failure", "launch_checks"]
