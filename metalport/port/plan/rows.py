"""The registry rows a port changes: its `RowChange`s in native_functions.yaml.

Note [why rows collapse]: a native Metal port registers the op's dispatch stub for MPS, so the
structured CPU/CUDA kernel (`heaviside_out`) serves MPS too. `CPU, CUDA: x_out` + `MPS: x_out_mps`
becomes `CPU, CUDA, MPS: x_out`; a row left on `x_out_mps` would keep calling the legacy code.

Note [spec rows]: a launch-spec port whose CPU/CUDA kernel is not shared with MPS (a custom kernel
takes its place) gives each routed entry its own line `MPS: <host function>` right after its last
dispatch line. Such a `RowChange` has `before == ""`: a line inserted after `line`. A stub
reduction joins the entry's `CPU, CUDA: f` line instead (Note [stub reductions] in port/spec/model.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from metalport.errors import PipelineError, SpecError
from metalport.port.plan.model import RowChange
from metalport.port.tree.resolve import Resolution, host_line, mps_only_lines
from metalport.port.spec.model import LaunchSpec
from metalport.port.spec.schema import check_stub
from metalport.registry.model import Entry

_BACKENDS = ("CPU", "CUDA")


def _indent(line: str) -> str:
    """The leading whitespace of `line`."""
    return line[: len(line) - len(line.lstrip())]


def dispatch_keys(line: str) -> list[str]:
    """The dispatch keys of a registry dispatch line (`CPU, CUDA: x_out` -> ["CPU", "CUDA"])."""
    return [k.strip() for k in line.partition(":")[0].split(",")]


def _rekeyed(line: str, keys: list[str]) -> str:
    """The dispatch line with `keys` in place of its own, indent, function and comment kept."""
    head, sep, tail = line.partition(":")
    return f"{_indent(head)}{', '.join(keys)}{sep}{tail}"


def _with_mps(line: str, also: tuple[str, ...] = ()) -> str:
    """`    CPU, CUDA: x_out  # c` -> `    CPU, CUDA, MPS: x_out  # c`; `also` are keys of lines
    merged into this one (`CPU: x_out` + `CUDA: x_out` -> `CPU, CUDA, MPS: x_out`)."""
    return _rekeyed(line, list(dict.fromkeys([*dispatch_keys(line), *also, "MPS"])))


def _join_mps(entry: Entry, line: int, lines: list[str], also: tuple[str, ...] = ()) -> RowChange:
    """Line `line` of `entry` (`CPU, CUDA: f`) gains MPS (and the keys `also`, see `_with_mps`): MPS
    shares the function CPU and CUDA run."""
    return RowChange(entry.full_name, line, lines[line - 1], _with_mps(lines[line - 1], also))


def _without_mps(line: str) -> str:
    """The dispatch line without its MPS key; "" when MPS was its only key."""
    rest = [k for k in dispatch_keys(line) if k != "MPS"]
    return _rekeyed(line, rest) if rest else ""


def plan_rows(res: Resolution) -> tuple[RowChange, ...]:
    """The dispatch-line changes that route every row of the op to the shared CPU/CUDA kernel.

    Raises PipelineError (with the row's file:line) when an MPS row has no CPU/CUDA kernel to
    share, or CPU and CUDA use different kernels.
    """
    lines = res.registry.text.splitlines()
    where = res.registry.path
    changes: list[RowChange] = []
    kept = {e for e, _, _ in res.kept_rows}  # Note [kept rows] (port/tree/resolve.py)
    for entry in res.entries:
        if entry.full_name in kept:
            continue
        mps = entry.kernel_for("MPS")
        only = mps_only_lines(entry)
        host = host_line(entry)
        if (mps is not None and not only) or (mps is None and host is None):
            continue  # already shared, or no kernel of its own (structured_delegate, composite)
        if host is None:
            raise PipelineError(f"{entry.full_name} has an MPS-only kernel {only[0].kernel} and no "
                                f"CPU/CUDA kernel to share", location=f"{where}:{only[0].line}",
                                hint="this op needs a hand-written port")
        cuda = entry.kernel_for("CUDA")
        if cuda is not None and cuda.kernel != host.kernel:
            raise PipelineError(f"{entry.full_name}: CPU ({host.kernel}) and CUDA ({cuda.kernel}) use "
                                f"different kernels, so MPS has no shared kernel to join",
                                location=f"{where}:{host.line}", hint="this op needs a hand-written port")
        merged = cuda if cuda is not None and cuda.line != host.line else None
        changes.append(_join_mps(entry, host.line, lines, merged.keys if merged else ()))
        if merged:  # one shared row, as PyTorch writes it: `CPU: x` + `CUDA: x` -> `CPU, CUDA, MPS: x`
            changes.append(RowChange(entry.full_name, merged.line, lines[merged.line - 1], ""))
        for d in only:
            changes.append(RowChange(entry.full_name, d.line, lines[d.line - 1], _without_mps(lines[d.line - 1])))
    return tuple(sorted(changes, key=lambda c: c.line))


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


def spec_rows(res: Resolution, entry: Entry, spec: LaunchSpec) -> tuple[RowChange, ...]:
    """The rows of a launch-spec port routed to `entry` (`routed_entry`): a stub reduction joins
    its shared line, an entry with MPS-only lines has them point at the host function (Note [spec
    migration]), any other gains its `MPS:` line (Note [spec rows]); then the `host.shared` entries
    and the `.out`/in-place entries the spec routes. PipelineError when the entry has no dispatch
    section or already routes MPS, SpecError for a stub the tree does not declare as the spec does.
    """
    if not entry.dispatch or entry.dispatch_line is None:
        raise PipelineError(f"{entry.full_name} has no dispatch section for an MPS line",
                            location=f"{res.registry.path}:{entry.span.start}", hint="port it by hand")
    if spec.stub is not None:
        check_stub(res.sources, spec)
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
        last = extra.dispatch[-1]
        rows.append(RowChange(extra.full_name, last.line, "", f"{_indent(last.text)}MPS: {host}"))
    return tuple(rows)


def registry_row(spec: LaunchSpec, dispatch_lines: list[tuple[int, str]]) -> tuple[int, str]:
    """(line after which to insert, the new `    MPS: <host function>` line) for the op's entry,
    given its dispatch lines [(line, text)]; SpecError when the entry already names MPS."""
    for line, text in dispatch_lines:
        if "MPS" in dispatch_keys(text):
            raise SpecError(f"spec {spec.op}: host.function: the row already routes MPS ({text.strip()})",
                            hint="the op has an MPS kernel; migrate it instead")
    last, text = dispatch_lines[-1]
    return last, f"{_indent(text)}MPS: {spec.host_function}"


def _stub_rows(res: Resolution, entry: Entry, spec: LaunchSpec) -> list[RowChange]:
    """The routed entry's `CPU, CUDA: f` line gains MPS; its MPS-only lines (an older port) go."""
    lines = res.registry.text.splitlines()
    shared = next((d for d in entry.dispatch if set(_BACKENDS) <= set(d.keys)), None)
    if shared is None:
        raise SpecError(f"spec {spec.op}: stub: {entry.full_name} has no `CPU, CUDA: <function>` line for MPS to "
                        f"join", location=f"{res.registry.path}:{entry.span.start}")
    rows = [] if "MPS" in shared.keys else [_join_mps(entry, shared.line, lines)]
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
            rows.append(_join_mps(entry, line.line, lines))
    return rows


def _legacy_rows(res: Resolution, entry: Entry, spec: LaunchSpec) -> list[RowChange]:
    """Note [spec migration]: an entry whose MPS line names an MPS-only kernel (MPSGraph or an older
    Metal port, `MPS: x_mps`) has that line point at the spec's host function instead (a second
    MPS-only line is deleted); the legacy function goes with the plan's `legacy` removal."""
    lines = res.registry.text.splitlines()
    rows = []
    for n, d in enumerate(mps_only_lines(entry)):
        before = lines[d.line - 1]
        after = f"{_indent(before)}MPS: {spec.host_function}" if n == 0 else ""
        if before != after:
            rows.append(RowChange(entry.full_name, d.line, before, after))
    return rows


__all__ = ["dispatch_keys", "extra_rows", "plan_rows", "registry_row", "routed_entry", "spec_entry", "spec_rows"]
