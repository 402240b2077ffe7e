"""The port of an op in the spec recipe table: plan and edits of a custom-kernel port.

Note [spec rows]: the op's CPU/CUDA kernel is not shared with MPS (a custom kernel takes its
place), so each routed entry gains its own line `MPS: <host function>` right after its last
dispatch line. Such a `RowChange` has `before == ""`: a line inserted after `line`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from metalport.checkout.layout import KERNELS_DIR, OPERATIONS_DIR, Checkout
from metalport.errors import PipelineError, SpecError
from metalport.port.hostgen import host_file_text, kernel_file_text, registry_row, write_host_code
from metalport.port.obsolete import (always_edited, legacy_include, legacy_registrations, obsolete_decorators,
                                     obsolete_xfails, opinfo_names, xfail_keys)
from metalport.port.plan_model import NATIVE_FUNCTIONS, PortPlan, RowChange
from metalport.port.resolve import Resolution
from metalport.port.spec import LaunchSpec, load_spec
from metalport.port.spec_schema import check_schema
from metalport.port.spec_recipes import SpecRecipe
from metalport.registry.model import DispatchLine, Entry

_BACKENDS = ("CPU", "CUDA")


def spec_entry(res: Resolution, spec: LaunchSpec) -> Entry:
    """The registry entry the spec's host function serves; SpecError when the op has none."""
    full = f"{spec.op}.{spec.overload}" if spec.overload else spec.op
    entry = next((e for e in res.entries if e.full_name == full), None)
    if entry is None:
        raise SpecError(f"spec {spec.op}: overload: native_functions.yaml has no entry {full}",
                        location=str(res.registry.path), hint=f"entries: {', '.join(e.full_name for e in res.entries)}")
    return entry


def routed_entry(entries: Sequence[Entry], entry: Entry) -> Entry:
    """The entry that gets the MPS line for `entry`: itself, or for a structured op's functional
    entry its `structured_delegate` (the `.out` entry whose TORCH_IMPL_FUNC the host becomes)."""
    if entry.structured_delegate:
        full = entry.structured_delegate if "." in entry.structured_delegate else \
            f"{entry.name}.{entry.structured_delegate}"
        return next((e for e in entries if e.full_name == full), entry)
    if not any(entry.kernel_for(k) for k in _BACKENDS):
        # A composite functional entry (logspace) reaches the backends through its `.out` entry.
        out = next((e for e in entries if e.full_name == f"{entry.name}.out"), None)
        if out is not None and any(out.kernel_for(k) for k in _BACKENDS):
            return out
    return entry


def extra_rows(entries: Sequence[Entry], spec: LaunchSpec) -> list[tuple[Entry, str]]:
    """(entry, host function) of the `.out` and in-place entries a spec routes besides its own."""
    base = spec.op
    wanted = ((f"{base}.out", spec.host_out_function), (f"{base}_", spec.host_inplace_function))
    out = []
    for full, host in wanted:
        entry = next((e for e in entries if e.full_name == full), None)
        if host and entry is not None and entry.dispatch and entry.dispatch_line is not None:
            out.append((entry, host))
    return out


def _spec_xfails(res: Resolution, metal: tuple[str, ...], names: list[str]
                 ) -> tuple[tuple[tuple[str, str, int], ...], tuple[tuple[str, str, int, tuple[str, ...]], ...]]:
    """The xfail edits of a spec port: as for pointwise, except that an entry meaning every dtype
    (`"logspace": None`) is narrowed to the OpInfo dtypes MPS could hold that the spec does not
    register (a recipe may leave some out), instead of removed."""
    import dataclasses

    # The spec's OpInfo may be named unlike the op (`_ctc_loss`'s is nn.functional.ctc_loss): its
    # entries go too.
    named = tuple(x for n in names for x in res.sources.xfails_for(n) if x not in res.xfails)
    removed, narrowed = obsolete_xfails(dataclasses.replace(res, xfails=res.xfails + named), metal)
    left = _left_out(metal, names)
    if not left:
        return removed, narrowed
    every = {(x.list_name, x.op, x.where.line) for x in (*res.xfails, *named) if x.dtypes is None}
    return (tuple(r for r in removed if r not in every),
            narrowed + tuple((lst, key, line, left) for lst, key, line in removed if (lst, key, line) in every))


def _left_out(metal: tuple[str, ...], names: list[str]) -> tuple[str, ...]:
    """The torch dtypes of the op's OpInfo (CPU) that MPS could hold but the spec does not register."""
    from metalport.port.functors import METAL_TYPES
    from metalport.torch_facts import opinfo_facts

    facts = opinfo_facts()
    cpu = next((facts[n].cpu_dtypes for n in names if n in facts), ())
    return tuple(d for d in cpu if d in METAL_TYPES and METAL_TYPES[d] not in metal)


def plan_spec_port(checkout: Checkout, res: Resolution, recipe: SpecRecipe) -> PortPlan:
    """The plan of porting `res.op` with `recipe`; SpecError when the spec does not fit the op's
    schema, PipelineError when the op already has an MPS kernel on the routed entry."""
    spec = recipe.spec
    named = spec_entry(res, spec)
    try:
        check_schema(spec, named.func)
    except SpecError as err:
        raise SpecError(err.message, location=f"{res.registry.path}:{named.span.start}", hint=err.hint) from None
    entry = routed_entry(res.entries, named)
    if not entry.dispatch or entry.dispatch_line is None:
        raise PipelineError(f"{entry.full_name} has no dispatch section for an MPS line",
                            location=f"{res.registry.path}:{entry.span.start}", hint="port it by hand")
    if spec.stub is not None:
        _check_stub(res, spec)
        legacy_rows = _stub_rows(res, entry, spec)
    else:
        legacy_rows = _legacy_rows(res, entry, spec)
    if not legacy_rows:
        try:
            line, after = registry_row(spec, [(d.line, d.text) for d in entry.dispatch])
        except SpecError as err:
            raise PipelineError(err.message, location=f"{res.registry.path}:{entry.span.start}",
                                hint=err.hint) from None
    rows = legacy_rows or [RowChange(entry.full_name, line, "", after)]
    rows += _shared_rows(res, spec)
    for extra, host in extra_rows(res.entries, spec):
        last, text = extra.dispatch[-1].line, extra.dispatch[-1].text
        indent = text[: len(text) - len(text.lstrip())]
        rows.append(RowChange(extra.full_name, last, "", f"{indent}MPS: {host}"))
    metal = tuple(dict.fromkeys(t[0] for t in spec.dtypes))
    names = [spec.opinfo] if spec.opinfo else opinfo_names(res.op, res)
    xfail_entries, xfail_narrowed = _spec_xfails(res, metal, names)
    decorators, narrowed_decorators = obsolete_decorators(checkout, res.op, names, metal,
                                                          narrow_to=_left_out(metal, names))
    legacy = tuple((f.where.file, f.name) for f in res.legacy)
    legacy_regs = legacy_registrations(checkout, res)
    allowed = always_edited(legacy, legacy_regs, decorators, narrowed_decorators) | {spec.kernel_file, spec.host_file}
    return PortPlan(
        op=res.op, status=res.status.value, family=res.family.value, rows=tuple(rows), kernel_file=spec.kernel_file,
        functor=None, functor_source=recipe.kernel_source, dtypes=metal, registrations=spec.host_names,
        host_file=spec.host_file, register_dispatch=None, kernel_name=spec.kernel_name,
        legacy=legacy[0] if legacy else None, legacy_others=legacy[1:],
        legacy_include=legacy_include(checkout, res) if legacy else None, legacy_registrations=legacy_regs,
        xfail_keys=xfail_keys(xfail_entries, xfail_narrowed),
        allowed_paths=tuple(sorted(allowed)), needs_llm=False,
        migrate=bool(legacy or any(_names_mps(r.before) for r in legacy_rows)), xfail_entries=xfail_entries,
        xfail_narrowed=xfail_narrowed, decorator_entries=decorators, decorator_narrowed=narrowed_decorators,
        kind=spec.kind, kind_reason=_kind_reason(res, spec), spec=spec.to_dict(),
        schema=entry.func, xfail_added=_grad_xfails(res, spec))


def _grad_xfails(res: Resolution, spec: LaunchSpec) -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
    """The XFAILLIST_GRAD entry of a forward-only port (`grad_xfail`): its OpInfo's gradient checks
    would reach the missing backward on MPS. None when the tree has no such list or the entry."""
    if spec.grad_xfail is None or spec.opinfo is None:
        return ()
    if any(x.list_name == GRAD_LIST and x.op == spec.opinfo for x in res.sources.xfails):
        return ()
    from metalport.port.spec import METAL_DTYPES

    dtypes = tuple(dict.fromkeys(METAL_DTYPES[t[0]] for t in spec.dtypes))
    return ((GRAD_LIST, spec.opinfo, dtypes, spec.grad_xfail),)


GRAD_LIST = "XFAILLIST_GRAD"


def _names_mps(line: str) -> bool:
    """Whether a registry dispatch line routes MPS (`MPS: x_mps`, `CPU, MPS: x`): a port changing
    one migrates an existing MPS kernel."""
    return "MPS" in [k.strip() for k in line.split(":", 1)[0].split(",")] if ":" in line else False


def _normal_type(text: str) -> str:
    return re.sub(r"\s+", "", re.sub(r"\b(?:c10|at)::", "", text))


def _check_stub(res: Resolution, spec: LaunchSpec) -> None:
    """SpecError unless the tree declares the spec's stub in its header with the spec's parameters
    after a TensorIterator (Note [stub reductions])."""
    assert spec.stub is not None
    decl = res.sources.stub(spec.stub.name)
    if decl is None:
        raise SpecError(f"spec {spec.op}: stub.name: no DECLARE_DISPATCH of {spec.stub.name} in the tree's "
                        f"ATen/native headers")
    if not decl.where.file.endswith("/" + spec.stub.header):
        raise SpecError(f"spec {spec.op}: stub.header: {spec.stub.name} is declared in {decl.where.file}, "
                        f"not {spec.stub.header}")
    params = [p.strip() for p in (decl.params or "").split(",")] if decl.params else []
    if not params or _normal_type(params[0]) not in ("TensorIterator&", "TensorIteratorBase&"):
        raise SpecError(f"spec {spec.op}: stub.name: {spec.stub.name} takes ({decl.params or '?'}), not a "
                        f"reduction iterator first", location=str(decl.where))
    want = [_normal_type(re.sub(r"\s*\w+$", "", p)) for p in spec.stub.params]
    have = [_normal_type(re.sub(r"(?<=[\w&*>])\s+\w+$", "", p)) for p in params[1:]]
    if want != have:
        raise SpecError(f"spec {spec.op}: stub.params: {spec.stub.name} takes ({decl.params}); the spec gives "
                        f"(TensorIterator&{''.join(', ' + p for p in spec.stub.params)})", location=str(decl.where))


def _stub_rows(res: Resolution, entry: Entry, spec: LaunchSpec) -> list[RowChange]:
    """The routed entry's `CPU, CUDA: f` line gains MPS; its MPS-only lines (an older port) go."""
    lines = res.registry.text.splitlines()
    shared = next((d for d in entry.dispatch if set(_BACKENDS) <= set(d.keys)), None)
    if shared is None:
        raise SpecError(f"spec {spec.op}: stub: {entry.full_name} has no `CPU, CUDA: <function>` line for MPS to "
                        f"join", location=f"{res.registry.path}:{entry.span.start}")
    rows = [] if "MPS" in shared.keys else [_join_mps(entry, shared, lines)]
    from metalport.port.resolve import mps_only_lines

    rows += [RowChange(entry.full_name, d.line, lines[d.line - 1], "") for d in mps_only_lines(entry)]
    return rows


def _shared_rows(res: Resolution, spec: LaunchSpec) -> list[RowChange]:
    """`CPU, CUDA: f` -> `CPU, CUDA, MPS: f` on each entry the spec names in `host.shared`;
    SpecError when such an entry is missing or has no line shared by CPU and CUDA."""
    rows = []
    lines = res.registry.text.splitlines()
    for i, full in enumerate(spec.host_shared):
        entry = next((e for e in res.entries if e.full_name == full), None)
        line = next((d for d in entry.dispatch if set(_BACKENDS) <= set(d.keys)), None) if entry else None
        if entry is None or line is None:
            raise SpecError(f"spec {spec.op}: host.shared[{i}]: {full} is no entry of {res.op} with a "
                            f"`CPU, CUDA: <function>` line", location=str(res.registry.path))
        if "MPS" not in line.keys:
            rows.append(_join_mps(entry, line, lines))
    return rows


def _join_mps(entry: Entry, line: DispatchLine, lines: list[str]) -> RowChange:
    """`CPU, CUDA: f` -> `CPU, CUDA, MPS: f`: MPS shares the function CPU and CUDA run."""
    before = lines[line.line - 1]
    head, _, kernel = before.partition(":")
    return RowChange(entry.full_name, line.line, before, f"{head}, MPS:{kernel}")


def _legacy_rows(res: Resolution, entry: Entry, spec: LaunchSpec) -> list[RowChange]:
    """Note [spec migration]: an entry whose MPS line names an MPS-only kernel (MPSGraph or an older
    Metal port, `MPS: x_mps`) has that line point at the spec's host function instead (a second
    MPS-only line is deleted); the legacy function goes with the plan's `legacy` removal."""
    from metalport.port.resolve import mps_only_lines

    lines = res.registry.text.splitlines()
    rows = []
    for n, d in enumerate(mps_only_lines(entry)):
        before = lines[d.line - 1]
        indent = before[: len(before) - len(before.lstrip())]
        after = f"{indent}MPS: {spec.host_function}" if n == 0 else ""
        if before != after:
            rows.append(RowChange(entry.full_name, d.line, before, after))
    return rows


def _insert_rows(text: str, plan: PortPlan) -> str:
    """The registry with each planned MPS line inserted (Note [spec rows]) or replaced (Note [spec
    migration]); lines already as planned are kept."""
    lines = text.splitlines(keepends=True)
    for change in sorted(plan.rows, key=lambda c: -c.line):
        if not change.inserts:
            at = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == change.before]
            if at:
                i = min(at, key=lambda k: abs(k + 1 - change.line))
                if change.after:
                    lines[i] = change.after + "\n"
                else:
                    del lines[i]
            continue
        if any(line.rstrip("\r\n") == change.after for line in lines):
            continue
        if not 1 <= change.line <= len(lines):
            raise SpecError(f"spec {plan.op}: the registry has no line {change.line}", location=NATIVE_FUNCTIONS,
                            hint="re-plan the op on the current tree")
        lines.insert(change.line, change.after + "\n")
    return "".join(lines)


def spec_texts(plan: PortPlan, root: Path, current: dict[str, str | None]) -> dict[str, str]:
    """New texts of the registry, kernel file and host file for a spec plan. `current` maps each of
    those paths to its text (None: the file does not exist yet)."""
    if plan.spec is None or plan.schema is None:
        raise SpecError(f"plan for {plan.op} has no launch spec")
    spec = load_spec(plan.spec)
    out = {NATIVE_FUNCTIONS: _insert_rows(current[NATIVE_FUNCTIONS] or "", plan)}
    kernel = current.get(spec.kernel_file)
    if kernel is None or f"kernel void {spec.kernel_name}(" not in kernel:
        out[spec.kernel_file] = kernel_file_text(spec, plan.functor_source or "", kernel)
    host = write_host_code(plan, root, current.get)
    if host is not None:
        out[spec.host_file] = host
    return out


def _kind_reason(res: Resolution, spec: LaunchSpec) -> str | None:
    """Why the port has the spec's kind; says so when the spec overrides the registry's classification
    (a reduction whose stub the tree does not show is ported as its own `MPS:` kernel)."""
    if res.kind is None:
        return None
    if res.kind.kind.value == spec.kind:
        return res.kind.reason
    return (f"its spec recipe ports it as {spec.kind} with its own MPS host function {spec.host_function} "
            f"(the registry alone says {res.kind.kind.value}: {res.kind.reason})")


_INCLUDE = re.compile(r"^\s*#\s*include\s*[<\"]([^>\"]*)[>\"]", re.MULTILINE)
_SOURCE_NAME = "<model>"


def model_spec_recipe(op: str, schemas: Mapping[str, str], spec_text: str, kernel_source: str) -> SpecRecipe:
    """A recipe from a model's launch spec (YAML) and kernel source, checked before anything uses
    them (Note [model specs]); SpecError, one line naming the field, for the first problem.

    `schemas` maps each registry entry of `op` (`_aminmax.dim`) to its `func:` schema.

    Note [model specs]: a model's spec is untrusted data. Besides `load_spec` and `check_schema`
    (against the entry the spec names), it must be about the run's op, keep its kernel and host
    files under the MPS kernels/ and operations/ folders (they join the plan's allow-list), and
    its kernel may include only c10/metal headers (the port adds metal_stdlib); every dtypes row
    must be instantiated, as for a recipe of the table, and the host writer must be able to write
    its launch (`hostgen.host_file_text`).
    """
    spec = load_spec(spec_text)
    if spec.op != op:
        raise SpecError(f"spec {spec.op}: op: this port is about {op}, not {spec.op}")
    full = f"{op}.{spec.overload}" if spec.overload else op
    if full not in schemas:
        raise SpecError(f"spec {op}: overload: native_functions.yaml has no entry {full}",
                        hint=f"entries: {', '.join(schemas)}")
    check_schema(spec, schemas[full])
    for name, path, folder, ext in (("kernel.file", spec.kernel_file, KERNELS_DIR, ".metal"),
                                    ("host.file", spec.host_file, OPERATIONS_DIR, ".mm")):
        parts = path.split("/")
        if ".." in parts or not path.startswith(folder + "/") or len(parts) != folder.count("/") + 2 \
                or not path.endswith(ext):
            raise SpecError(f"spec {op}: {name}: {path!r} must be a {ext} file directly under {folder}/")
    # Note [unset outputs] leaves NaN elements of torch's result out of the comparison: ours to
    # grant for an op whose CPU kernel leaves memory unset (a recipe, reviewed), never the model's.
    loose = next((i for i, o in enumerate(spec.outputs) if o.compare is not None), None)
    if loose is not None:
        raise SpecError(f"spec {op}: outputs[{loose}].compare: a model's spec compares every output element",
                        hint="drop `compare`; write every element the op defines")
    bad = next((m for m in _INCLUDE.finditer(kernel_source) if not m.group(1).startswith("c10/metal/")), None)
    if bad is not None:
        line = kernel_source.count("\n", 0, bad.start()) + 1
        raise SpecError(f"spec {op}: kernel_source: line {line}: #include <{bad.group(1)}> is not allowed",
                        hint="include only c10/metal headers; the port adds metal_stdlib")
    if f"kernel void {spec.kernel_name}" not in re.sub(r"\s+", " ", kernel_source):
        raise SpecError(f"spec {op}: kernel.name: kernel_source defines no `kernel void {spec.kernel_name}`")
    host_file_text(spec, schemas[full], None)  # a launch the host writer cannot write is refused here too
    return SpecRecipe(spec, kernel_source, Path(f"{_SOURCE_NAME}/{op}.yaml"))


def entry_schemas(res: Resolution) -> dict[str, str]:
    """Each registry entry of the resolved op, by full name, with its `func:` schema."""
    return {e.full_name: e.func for e in res.entries}


__all__ = ["entry_schemas", "extra_rows", "model_spec_recipe", "plan_spec_port", "routed_entry", "spec_entry",
           "spec_texts"]
