"""Contract checks of a spec-recipe port (custom-kernel / reduction kinds).

Every entry of the op with a CPU or CUDA kernel dispatches MPS, the spec's entry to the spec's
host function; the host function is defined exactly once under `operations/` and is the text
`hostgen` writes from the spec (whitespace aside); the kernel file defines the spec's kernel and
instantiates every host name the spec lists, and no other `<kernel>_*` host name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from metalport.checks.contract_rows import contract_failure, registry_op
from metalport.failure import Failure
from metalport.port.hostgen import write_host
from metalport.port.plan_model import NATIVE_FUNCTIONS, PortPlan
from metalport.port.spec import LaunchSpec, load_spec
from metalport.port.spec_recipes import _instantiates
from metalport.port.rows import routed_entry

_OPERATIONS = "aten/src/ATen/native/mps/operations"
_BACKENDS = ("CPU", "CUDA")


_fail = contract_failure


def _row_checks(root: Path, spec: LaunchSpec, plan: PortPlan) -> Iterator[Failure]:
    op, failures = registry_op(root, plan)
    yield from failures
    if op is None:
        return
    full = f"{spec.op}.{spec.overload}" if spec.overload else spec.op
    named = next((e for e in op.entries if e.full_name == full), None)
    if named is not None:
        full = routed_entry(op.entries, named).full_name
    shared = set(spec.host_shared)
    for entry in op.entries:
        mps = entry.kernel_for("MPS")
        cpu = entry.kernel_for("CPU")
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
    pattern = re.compile(rf"^(?:[A-Za-z_][\w:<>,\s&*]*\b{re.escape(name)}\s*\(|TORCH_IMPL_FUNC\(\s*{re.escape(name)}\s*\))")
    out = []
    folder = root / _OPERATIONS
    for path in sorted(folder.glob("*.mm")) if folder.is_dir() else ():
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        rel = path.relative_to(root).as_posix()
        out += [(rel, i) for i, line in enumerate(lines, 1) if pattern.match(line) and not line.rstrip().endswith(";")]
    return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _host_checks(root: Path, spec: LaunchSpec, plan: PortPlan) -> Iterator[Failure]:
    found = _definitions(root, spec.host_function)
    if not found:
        yield _fail("host", f"{spec.host_function} is not defined under {_OPERATIONS}", spec.host_file)
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
        wanted = _squash(body[start:])
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        if wanted not in _squash(text):
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
        if not _instantiates(text, spec.kernel_name, host):
            yield _fail("kernel-name", f"the spec's instantiation {host!r} is not registered", spec.kernel_file)
    listed = set(spec.host_names)
    for literal in re.findall(rf'"({re.escape(spec.kernel_name)}_\w+)"', text):
        if literal not in listed:
            yield _fail("kernel-name", f"kernel {literal!r} is registered but the spec does not list it",
                        spec.kernel_file)


def _stub_checks(root: Path, spec: LaunchSpec) -> Iterator[Failure]:
    """The stub registered for MPS exactly once, to the spec's host function (Note [stub reductions])."""
    if spec.stub is None:
        return
    pattern = re.compile(rf"^\s*REGISTER_(?:MPS_)?DISPATCH\(\s*{re.escape(spec.stub.name)}\s*,\s*&?\s*(\w+)\s*\)", re.M)
    found = []
    folder = root / _OPERATIONS
    for path in sorted(folder.glob("*.mm")) if folder.is_dir() else ():
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(root).as_posix()
        found += [(rel, text.count("\n", 0, m.start()) + 1, m.group(1)) for m in pattern.finditer(text)]
    if not found:
        yield _fail("stub", f"{spec.stub.name} is not registered for MPS (no REGISTER_DISPATCH under {_OPERATIONS})",
                    spec.host_file)
    elif len(found) > 1:
        yield _fail("stub", f"{spec.stub.name} is registered {len(found)} times; once is the contract",
                    found[1][0], found[1][1])
    elif found[0][2] != spec.host_function:
        yield _fail("stub", f"{spec.stub.name} is registered to {found[0][2]}, the spec says {spec.host_function}",
                    found[0][0], found[0][1])


def spec_contract(worktree_root: Path, plan: PortPlan) -> list[Failure]:
    """The spec-specific contract failures of a spec plan's port (`[]` when they hold)."""
    if plan.spec is None:
        return []
    spec = load_spec(plan.spec)
    root = Path(worktree_root)
    return [*_row_checks(root, spec, plan), *_host_checks(root, spec, plan), *_kernel_checks(root, spec),
            *_stub_checks(root, spec)]


__all__ = ["spec_contract"]
