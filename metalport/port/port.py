"""`plan_port`: the whole port of one op, decided from the tree before any edit.

Public surface of the pipeline's plan step (contract C): `resolve_op`, `plan_port`, `apply_port`,
`PortPlan`, `RowChange`, `Resolution`. Registry rows follow Note [why rows collapse]: every row of
the op that names an MPS-only kernel, or lacks MPS, moves onto the kernel CPU and CUDA share.

Note [no dtype regression]: a port replaces the op's MPS path, so every dtype that path runs must
still be registered afterwards. common_mps.py's SUPPORTED_COMPLEX_OPS names the OpInfos MPS runs
for complex (test_mps expects them to pass for complex32/complex64): such an op keeps `float2` and
`half2` registrations (functor branches picked by `c10::metal::is_complex_v`), or the plan refuses.

Note [functor fit]: a recipe's functor joins the kernel file only when the file has none of that
name. The structured kernel may route through another op's stub (`sub_out` calls `add_stub` with
`-alpha`): then the file's functor of the routed op is the kernel (`add_alpha`), found by name and
operand count (an alpha op also looks at `<op>_alpha_functor`, as `sub_functor` takes two operands
and `sub_alpha_functor` three in BinaryKernel.metal). A same-named functor of another arity is
never reused or shadowed: the plan refuses.

Note [legacy helpers]: MPSGraph ops of one family often share a helper (`addc_mul_div_out_mps`
serves `addcmul_out_mps` and `addcdiv_out_mps`). A port removes the helper with its last user: the
first port of the family keeps it, the port that removes its last caller removes it too.

Note [why rows collapse]: a native Metal port registers the op's dispatch stub for MPS, so the
structured CPU/CUDA kernel (`heaviside_out`) serves MPS too. `CPU, CUDA: x_out` + `MPS: x_out_mps`
becomes `CPU, CUDA, MPS: x_out`; a row left on `x_out_mps` would keep calling the legacy code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from metalport.port.apply import apply_port
from metalport.port.functors import COMPLEX_TYPES, FunctorRecipe, metal_types_for, recipe_table
from metalport.port.functors import Family as RecipeFamily
from metalport.port.kinds import Classification, Kind
from metalport.port.launch import LAUNCHERS
from metalport.port.metal import fit_functor
from metalport.port.obsolete import (always_edited, legacy_include, legacy_registrations, obsolete_decorators,
                                     obsolete_xfails, opinfo_names, xfail_keys)
from metalport.port.host import remove_legacy
from metalport.port.reuse import ExistingKernel, missing_legacy, orphaned_macros, reuse_lines
from metalport.port.plan import (KERNELS_DIR, NEEDS_LLM, OPERATIONS_DIR, StubDeclaration,
                                          find_stub_declaration, plan_recipe)
from metalport.port.plan_model import COMMON_MPS, PortPlan, RowChange
from metalport.port.resolve import Resolution, host_line, mps_only_lines, resolve_op
from metalport.backlog.model import Family, Status
from metalport.checkout.layout import Checkout
from metalport.checkout.sources import ImplKind
from metalport.errors import PipelineError, RecipeError

__all__ = ["PortPlan", "Resolution", "RowChange", "apply_port", "plan_port", "resolve_op"]

_ALREADY_NATIVE = (Status.SHARED, Status.COMPOSITE)
_MIGRATING = (Status.MPS_GRAPH, Status.MPS_GRAPH_STUB, Status.MPS_UNKNOWN, Status.MPS_METAL)
# Kinds whose port is a kernel of its own, not a functor in a pointwise kernel file.
_OWN_KERNEL = (Kind.REDUCTION_STUB, Kind.CUSTOM_KERNEL, Kind.MULTI_TENSOR)
# Backlog family -> (host template, kernel file, host file, registration macro) for ops the
# table does not know; the LLM writes the functor.
_BY_FAMILY = {
    Family.UNARY: ("unary", "UnaryKernel.metal", "UnaryKernel.mm", "REGISTER_UNARY_OP"),
    Family.BINARY: ("binary", "BinaryKernel.metal", "BinaryKernel.mm", "REGISTER_BINARY_OP"),
    Family.TERNARY: ("ternary", "TernaryKernel.metal", "TernaryKernel.mm", "REGISTER_TERNARY_OP"),
}


def _with_mps(line: str, also: tuple[str, ...] = ()) -> str:
    """`    CPU, CUDA: x_out  # c` -> `    CPU, CUDA, MPS: x_out  # c`; `also` are keys of lines
    merged into this one (`CPU: x_out` + `CUDA: x_out` -> `CPU, CUDA, MPS: x_out`)."""
    head, sep, tail = line.partition(":")
    keys = [k.strip() for k in head.split(",")]
    indent = head[: len(head) - len(head.lstrip())]
    merged = list(dict.fromkeys([*keys, *also, "MPS"]))
    return f"{indent}{', '.join(merged)}{sep}{tail}"


def _without_mps(line: str) -> str:
    """The dispatch line without its MPS key; "" when MPS was its only key."""
    head, sep, tail = line.partition(":")
    keys = [k.strip() for k in head.split(",")]
    rest = [k for k in keys if k != "MPS"]
    if not rest:
        return ""
    indent = head[: len(head) - len(head.lstrip())]
    return f"{indent}{', '.join(rest)}{sep}{tail}"


def plan_rows(res: Resolution) -> tuple[RowChange, ...]:
    """The dispatch-line changes that route every row of the op to the shared CPU/CUDA kernel.

    Raises PipelineError (with the row's file:line) when an MPS row has no CPU/CUDA kernel to
    share, or CPU and CUDA use different kernels.
    """
    lines = res.registry.text.splitlines()
    where = res.registry.path
    changes: list[RowChange] = []
    for entry in res.entries:
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
        before = lines[host.line - 1]
        if cuda is not None and cuda.line != host.line:
            # One shared row, as PyTorch writes it: `CPU, CUDA, MPS: x_out`.
            changes.append(RowChange(entry.full_name, host.line, before, _with_mps(before, cuda.keys)))
            changes.append(RowChange(entry.full_name, cuda.line, lines[cuda.line - 1], ""))
        else:
            changes.append(RowChange(entry.full_name, host.line, before, _with_mps(before)))
        for d in only:
            changes.append(RowChange(entry.full_name, d.line, lines[d.line - 1], _without_mps(lines[d.line - 1])))
    return tuple(sorted(changes, key=lambda c: c.line))


def _stub_declaration(checkout: Checkout, stub: str) -> StubDeclaration:
    """The stub's declaring header and parameters: the tree's headers first, then the wheel's."""
    try:
        return find_stub_declaration(stub, checkout.root / "aten/src")
    except RecipeError:
        from metalport.torch_facts import torch_include_dir

        return find_stub_declaration(stub, torch_include_dir())


def _opinfo_dtypes(names: list[str], *, complex: bool = False) -> tuple[str, ...]:
    """Metal types of the first OpInfo called one of `names` (CPU dtypes); float types if none."""
    from metalport.torch_facts import opinfo_facts

    by_name = opinfo_facts()
    for name in names:
        if name in by_name:
            return metal_types_for(by_name[name].cpu_dtypes, complex=complex)
    return ("float", "half", "bfloat")


def mps_complex_names(checkout: Checkout) -> dict[str, int]:
    """OpInfo names in common_mps.py's SUPPORTED_COMPLEX_OPS (MPS runs them for complex today),
    each with its line; empty when the tree has no such list."""
    path = checkout.root / COMMON_MPS
    if not path.is_file():
        return {}
    import ast

    from metalport.checkout.sources import named_assignments

    found: dict[str, int] = {}
    for name, value in named_assignments(ast.parse(path.read_text(encoding="utf-8"))):
        if name == "SUPPORTED_COMPLEX_OPS" and isinstance(value, (ast.Set, ast.List, ast.Tuple)):
            found |= {e.value: e.lineno for e in value.elts
                      if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return found


def _complex_kept(checkout: Checkout, res: Resolution, names: list[str], dtypes: tuple[str, ...],
                  from_table: bool) -> None:
    """Raise PipelineError when MPS runs the op for complex today and the plan's dtypes drop it
    (Note [no dtype regression])."""
    if res.status not in _MIGRATING or COMPLEX_TYPES[0] in dtypes:
        return
    listed = mps_complex_names(checkout)
    name = next((n for n in names if n in listed), None)
    if name is None:
        return
    why = "the recipe's functor has no complex branch" if from_table else "its OpInfo takes no complex dtype"
    raise PipelineError(f"aten::{res.op} runs on MPS for complex64 today ({name!r} is in SUPPORTED_COMPLEX_OPS) "
                        f"and {why}, so the port would drop complex support",
                        location=f"{COMMON_MPS}:{listed[name]}",
                        hint="port it by hand with a float2/half2 branch (c10::metal::is_complex_v)")


def _test_list_names(names: list[str]) -> list[str]:
    """`names` and every test-list variant naming the same op: the PythonRefInfo (`_refs.x`,
    `_refs.nn.functional.x`) and the `nn.functional.x` spelling, so each OpInfo/PythonRefInfo's MPS
    decorators go with the port (a leftover expectedFailure fails CI as an unexpected success)."""
    out = list(names)
    for name in names:
        bare = name.removeprefix("_refs.")
        out += [bare, f"_refs.{bare}"]
        if not bare.startswith(("nn.functional.", "special.", "linalg.", "fft.")) and "." not in bare:
            out.append(f"_refs.nn.functional.{bare}")
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class _Parts:
    """The functor, kernel and host side of a plan (from the table, or sketched for an LLM)."""

    functor_step: str
    kernel_file: str | None = None
    functor: str | None = None
    functor_source: str | None = None
    dtypes: tuple[str, ...] = ()
    registrations: tuple[str, ...] = ()
    host_file: str | None = None
    macro: str | None = None
    stub: str | None = None
    stub_header: str | None = None
    stub_params: str | None = None
    host_family: str | None = None
    kernel_name: str | None = None  # the shader kernel when it is not the op's (`add_alpha`)

    @property
    def needs_llm(self) -> bool:
        return self.functor_step not in ("table", "reuse")


def _table_parts(checkout: Checkout, recipe: FunctorRecipe, stub: str) -> _Parts:
    decl = _stub_declaration(checkout, stub)
    rp = plan_recipe(recipe.op, stub=decl, xfail_keys=())
    if rp.host_stub is None:
        raise RecipeError(f"the recipe for {recipe.op} has no host stub", hint="fix the recipe table")
    return _Parts("table", rp.kernel_file, rp.functor, rp.functor_source, rp.dtypes, rp.registrations,
                  rp.host_file, rp.macro, stub, decl.header, decl.params, rp.host_stub.family)


def _tensor_outputs(func: str) -> tuple[str, ...]:
    """The names of the tensors a schema returns: `(Tensor mantissa, Tensor exponent)` gives two."""
    returns = func.split("->", 1)[1].strip() if "->" in func else ""
    parts = [r.strip() for r in returns.strip("()").split(",") if r.strip()]
    return tuple((r.split()[-1] if len(r.split()) > 1 else f"result{i}") for i, r in enumerate(parts)
                 if r.startswith("Tensor") and not r.startswith("Tensor[]"))


def _llm_parts(checkout: Checkout, res: Resolution) -> _Parts:
    shape = _BY_FAMILY.get(res.family)
    if shape is None:
        return _Parts(NEEDS_LLM, stub=res.stub)
    host_family, kernel, host, macro = shape
    # A pointwise functor returns one value: an op whose kernel writes two tensors (frexp's mantissa and
    # exponent) cannot be met by any functor a model writes, so it is refused here, before a model call.
    many = next((e for e in res.entries if len(_tensor_outputs(e.func)) > 1), None)
    if many is not None:
        outputs = _tensor_outputs(many.func)
        raise PipelineError(f"aten::{res.op} writes {len(outputs)} tensors ({', '.join(outputs)}) per element; a "
                            f"{macro} functor returns one, so its port is not a functor for a model to write",
                            location=f"{res.registry.path}:{many.span.start}",
                            hint="it needs a kernel with one output buffer per result; port it by hand")
    names = opinfo_names(res.op, res)
    keep_complex = res.status in _MIGRATING and any(n in mps_complex_names(checkout) for n in names)
    dtypes = _opinfo_dtypes(names, complex=keep_complex)
    parts = _Parts(NEEDS_LLM, f"{KERNELS_DIR}/{kernel}", f"{res.op}_functor", None, dtypes,
                   tuple(f"{macro}({res.op}, {t}, {t});" for t in dtypes), f"{OPERATIONS_DIR}/{host}", macro,
                   res.stub, host_family=host_family)
    if res.stub:
        try:
            decl = _stub_declaration(checkout, res.stub)
        except RecipeError:
            return parts
        parts = replace(parts, stub_header=decl.header, stub_params=decl.params)
    return parts


def _existing_kernel_file(res: Resolution) -> str | None:
    """The `.metal` file that already registers the op's functor, if one does."""
    return next((s.where.file for s in res.sources.shader_ops if s.name == res.op), None)


def plan_port(checkout: Checkout, op: str, *, force: bool = False, reuse_kernels: bool = True) -> PortPlan:
    """The plan for porting `op` in `checkout` to a native Metal kernel.

    Raises UnknownOpError (with close names), PipelineError "aten::x is already native (shared)"
    for a shared or composite op unless `force`, PipelineError "aten::x is not a port candidate:
    <reason>" for a not-a-candidate op (`port.kinds`), and PipelineError when a pointwise row has
    no shared CPU/CUDA kernel. Reduction-stub, custom-kernel and multi-tensor ops get a plan of
    their kind (`_kernel_plan`). An op outside the recipe table gets `needs_llm=True`, unless the
    tree has a kernel computing it (Note [reuse an existing kernel]; `reuse_kernels=False` skips
    the lookup).
    """
    res = resolve_op(checkout, op)
    from metalport.port.spec_recipes import spec_recipes

    spec_recipe = spec_recipes().get(res.op)
    if spec_recipe is not None:
        from metalport.port.specport import plan_spec_port

        return plan_spec_port(checkout, res, spec_recipe)
    if res.status in _ALREADY_NATIVE and not force:
        raise PipelineError(f"aten::{res.op} is already native ({res.status.value})",
                            location=res.mps_impl, hint="pass --force to plan it anyway")
    kind = res.kind
    if kind is not None and not kind.candidate and res.status is not Status.SHARED:
        raise PipelineError(f"aten::{res.op} is not a port candidate: {kind.reason}",
                            location=f"{res.registry.path}:{res.entries[0].span.start}",
                            hint="pick one with `metalport backlog --porter recipe,llm`")
    if kind is not None and kind.kind in _OWN_KERNEL:
        return _kernel_plan(checkout, res, kind)
    plan = _pointwise_plan(checkout, res, kind, reuse_kernels=reuse_kernels)
    if plan.reused_kernel is None or plan.reused_kernel == res.op:
        return plan
    from metalport.port.reuse_check import verify_reuse

    passed, line = verify_reuse(checkout, plan)
    if passed:
        return replace(plan, reuse=(f"{plan.reuse[0]}; {line}", *plan.reuse[1:]))
    fallback = plan_port(checkout, op, force=force, reuse_kernels=False)
    return replace(fallback, reuse=(*fallback.reuse, f"does not reuse kernel {plan.reused_kernel} "
                                                      f"({plan.kernel_file}): {line}"))


def _pointwise_plan(checkout: Checkout, res: Resolution, kind: Classification | None, *,
                    reuse_kernels: bool) -> PortPlan:
    """The plan of a pointwise-stub port: rows collapsed onto the shared kernel, the functor (the
    table's, a model's, or an existing kernel launched instead), the host stub and what it removes."""
    rows = plan_rows(res)
    recipe = recipe_table().get(res.op)
    stub = res.route.stub if res.route else recipe.stub if recipe else res.stub
    parts = _table_parts(checkout, recipe, stub) if recipe is not None else _llm_parts(checkout, res)
    names = _test_list_names([recipe.opinfo] if recipe is not None else opinfo_names(res.op, res))
    _complex_kept(checkout, res, names, parts.dtypes, recipe is not None)
    parts, placement, existing, turned_down = _placed_parts(checkout, res, recipe, parts, reuse_kernels)
    kept = next((r for r in res.registrations if r.stub == parts.stub and r.kind is not ImplKind.GRAPH), None)
    if kept is not None:
        parts = replace(parts, host_file=kept.where.file)  # registered natively already: no second one
        register = f"REGISTER_DISPATCH({kept.stub}, &{kept.kernel});"
    else:
        register = (f"REGISTER_DISPATCH({parts.stub}, &{res.op}_mps_kernel);"
                    if parts.stub and parts.host_file else None)
    legacy_regs = legacy_registrations(checkout, res)
    legacy = tuple((f.where.file, f.name) for f in res.legacy)
    legacy += _orphaned_helpers(checkout, res, legacy)
    shared, shared_line = None, None
    if parts.host_family == "ternary_alpha":  # Note [extend shared code at home] (port/shared.py)
        from metalport.port.shared import HOMES, ternary_alpha_support

        shared, shared_line = ternary_alpha_support(checkout.root)
    reuse = _reuse_lines(checkout, parts, shared_line, existing, turned_down)
    xfail_entries, xfail_narrowed = obsolete_xfails(res, parts.dtypes)
    decorators, _ = obsolete_decorators(checkout, res.op, names, parts.dtypes)
    allowed = always_edited(legacy, legacy_regs, decorators)
    allowed |= {p for p in (None if existing else parts.kernel_file, parts.host_file) if p}
    if shared == "extend":
        allowed |= set(HOMES)
    return PortPlan(
        op=res.op, status=res.status.value, family=res.family.value, rows=rows,
        kernel_file=parts.kernel_file, functor=parts.functor, functor_source=parts.functor_source,
        dtypes=parts.dtypes, registrations=parts.registrations, host_file=parts.host_file,
        register_dispatch=register, kernel_name=(parts.kernel_name or res.op) if parts.kernel_file else None,
        legacy=legacy[0] if legacy else None, legacy_include=legacy_include(checkout, res),
        xfail_keys=xfail_keys(xfail_entries, xfail_narrowed), allowed_paths=tuple(sorted(allowed)),
        needs_llm=parts.needs_llm,
        migrate=res.status in _MIGRATING or any(r.deletes for r in rows),
        functor_step=parts.functor_step, macro=parts.macro, stub=parts.stub, stub_header=parts.stub_header,
        stub_params=parts.stub_params, host_family=parts.host_family, legacy_others=legacy[1:],
        xfail_entries=xfail_entries, xfail_narrowed=xfail_narrowed, decorator_entries=decorators,
        stubs=res.route.stubs if res.route else ((parts.stub,) if parts.stub else ()),
        stub_route=res.route.describe() if res.route else None,
        stub_args=res.route.calls[0].args if res.route else (),
        stub_registered_at=str(kept.where) if kept else None, legacy_registrations=legacy_regs,
        kind=kind.kind.value if kind else Kind.POINTWISE_STUB.value, kind_reason=kind.reason if kind else None,
        reuse=reuse, missing=missing_legacy(checkout, res.mps_kernels, {f.name for f in res.legacy}),
        legacy_macros=_orphaned_macros(checkout, res, legacy), placement=placement,
        reused_kernel=existing.name if existing else None, shared_launcher=shared,
    )


def _placed_parts(checkout: Checkout, res: Resolution, recipe: FunctorRecipe | None, parts: _Parts,
                  reuse_kernels: bool) -> tuple[_Parts, tuple[str, ...], ExistingKernel | None, tuple[str, ...]]:
    """(`parts` in the files where they go, one line each on why (Note [placement]), the tree's
    kernel the port launches instead of a functor or None, lines on kernels turned down)."""
    placement: tuple[str, ...] = ()
    if parts.kernel_file and (existing_file := _existing_kernel_file(res)):
        parts = replace(parts, kernel_file=existing_file)
        placement = (f"kernel file {existing_file}: the tree registers {res.op}'s kernels there already",)
    elif parts.kernel_file and parts.host_file:
        parts, placement = _placed_by_siblings(checkout, res, parts)
    existing, turned_down = _existing_kernel(checkout, res, parts) if reuse_kernels else (None, ())
    if existing is not None:
        host = existing.host_file or parts.host_file
        parts = replace(parts, functor_step="reuse", kernel_file=existing.kernel_file, functor=None,
                        functor_source=None, registrations=(), kernel_name=existing.name, host_file=host)
        placement = (f"kernel file {existing.kernel_file}: it registers {existing.name} "
                     f"({existing.name}_functor, line {existing.functor_line}), which the port launches",
                     f"host file {host}: " + (existing.host_why if existing.host_file
                                              else "from the family table or siblings (no .mm launches the kernel)"))
    elif recipe is not None:
        parts = _fit_functor(checkout, res, recipe, parts)
    return parts, placement, existing, turned_down


def _reuse_lines(checkout: Checkout, parts: _Parts, shared_line: str | None, existing: ExistingKernel | None,
                 turned_down: tuple[str, ...]) -> tuple[str, ...]:
    """Note [reuse before writing]: the plan's lines on what it reuses and adds, the shared
    launcher's line first (it names its launcher), then the reused kernel's."""
    host_call = None if shared_line is not None else _host_call(parts)
    reuse = reuse_lines(checkout, functor_source=parts.functor_source, registrations=parts.registrations,
                        host_call=host_call, kernel_file=parts.kernel_file, functor=parts.functor)
    if shared_line is not None:
        reuse = (shared_line, *reuse)
    if existing is not None:
        reuse = (f"reuses kernel {existing.name} ({existing.kernel_file}) instead of adding a functor: it is "
                 f"registered for every type the port needs", *reuse)
    return reuse + tuple(turned_down)


_REUSE_ARITY = {"unary": 1, "binary": 2}


def _existing_kernel(checkout: Checkout, res: Resolution, parts: _Parts):
    """(the tree's kernel the port launches instead of adding a functor, or None; lines for the
    candidates turned down) (Note [reuse an existing kernel] in port/reuse.py). Only a port of the
    op's own stub with a unary or binary host looks."""
    from metalport.port.reuse import existing_kernels

    if not (parts.kernel_file and parts.host_family in _REUSE_ARITY and parts.registrations
            and parts.stub == f"{res.op}_stub"):
        return None, ()
    found, refused = existing_kernels(checkout, res.sources, res.op, _REUSE_ARITY[parts.host_family],
                                      parts.registrations)
    return (found[0] if found else None), tuple(refused)


def _host_call(parts: _Parts) -> str | None:
    """The launcher call the host stub will make (for the plan's reuse lines)."""
    launcher = LAUNCHERS.get(parts.host_family or "")
    if launcher is None:
        return None
    from metalport.port.functors import CASTOUT_MACRO

    castout = any(r.startswith(CASTOUT_MACRO + "(") for r in parts.registrations)
    return launcher + (" kBool" if castout else "")


def _placed_by_siblings(checkout: Checkout, res: Resolution, parts: _Parts) -> tuple[_Parts, tuple[str, ...]]:
    """The kernel and host files where the tree keeps the op's siblings (Note [placement]): the
    stubs declared in the op's stub header that are registered natively, the `.mm` files of those
    registrations and the `.metal` files of the kernels they launch, the most common of each. The
    family table's files stay when the tree has no such sibling, and the plan says so."""
    from collections import Counter

    header = parts.stub_header
    declared = {d.name for d in res.sources.stubs if header and d.where.file.endswith(header)}
    declared.discard(parts.stub or "")
    hosts: Counter[str] = Counter()
    kernels: Counter[str] = Counter()
    shader_file = {s.name: s.where.file for s in res.sources.shader_ops}
    for reg in res.sources.registrations:
        if reg.stub not in declared or reg.kind is ImplKind.GRAPH:
            continue
        hosts[reg.where.file] += 1
        for call in res.sources.kernel_calls:
            if call.function == reg.kernel and call.kernel in shader_file:
                kernels[shader_file[call.kernel]] += 1
    if not hosts or not kernels:
        return parts, (f"kernel file {parts.kernel_file} and host file {parts.host_file}: from the family table "
                       f"(fallback: the tree registers no sibling of {parts.stub} from {header or 'its header'})",)
    host, kernel = hosts.most_common(1)[0][0], kernels.most_common(1)[0][0]
    why = (f"kernel file {kernel} and host file {host}: where the tree keeps the siblings of {parts.stub} "
           f"(stubs of {header} registered natively)")
    return replace(parts, kernel_file=kernel, host_file=host), (why,)


def _orphaned_macros(checkout: Checkout, res: Resolution,
                     legacy: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """(file, macro) of each legacy `#define` whose last invocation the port removes (Note [legacy
    helpers]: a family's macro goes with its last user, `CREATE_MPS_BINARY_COMPARISON_OP_FUNC`)."""
    return tuple((rel, m) for rel, before, after in _without_legacy(checkout, res, legacy)
                 for m in orphaned_macros(before, after))


def _without_legacy(checkout: Checkout, res: Resolution,
                    legacy: tuple[tuple[str, str], ...]) -> list[tuple[str, str, str]]:
    """(file, text, text without the legacy functions) of each file holding legacy code."""
    out = []
    for rel in dict.fromkeys(f for f, _ in legacy):
        before = (checkout.root / rel).read_text(encoding="utf-8")
        after = before
        for name in (n for f, n in legacy if f == rel):
            after = remove_legacy(after, res.op, name, path=rel, drop_include=False)
        out.append((rel, before, after))
    return out


def _kernel_plan(checkout: Checkout, res: Resolution, kind: Classification) -> PortPlan:
    """The plan of a reduction-stub, custom-kernel or multi-tensor port: the rows collapsed onto
    the shared CPU/CUDA kernel when the port registers its stub (none when it writes `MPS: x_mps`
    rows), the legacy code and xfails it replaces, and a kernel step that needs a recipe or a model.
    """
    try:
        rows = () if kind.rows or kind.stub is None else plan_rows(res)
    except PipelineError:
        rows = ()
    legacy = tuple((f.where.file, f.name) for f in res.legacy)
    legacy_regs = legacy_registrations(checkout, res)
    allowed = always_edited(legacy, legacy_regs)
    stubs = res.route.stubs if res.route and kind.stub else ((kind.stub,) if kind.stub else ())
    return PortPlan(
        op=res.op, status=res.status.value, family=res.family.value, rows=rows, kernel_file=None, functor=None,
        functor_source=None, dtypes=(), registrations=(), host_file=None, register_dispatch=None, kernel_name=None,
        legacy=legacy[0] if legacy else None, legacy_include=legacy_include(checkout, res),
        xfail_keys=res.xfail_keys, allowed_paths=tuple(sorted(allowed)), needs_llm=True,
        migrate=res.status in _MIGRATING or any(r.deletes for r in rows), functor_step=NEEDS_LLM,
        stub=kind.stub, stubs=stubs, stub_route=res.route.describe() if res.route and kind.stub else None,
        stub_args=res.route.calls[0].args if res.route and kind.stub else (), legacy_others=legacy[1:],
        legacy_registrations=legacy_regs, kind=kind.kind.value, kind_reason=kind.reason,
    )


_ARITY = {RecipeFamily.UNARY: 1, RecipeFamily.BINARY: 2, RecipeFamily.ALPHA: 3, RecipeFamily.TERNARY_ALPHA: 4}


def _fit_functor(checkout: Checkout, res: Resolution, recipe: FunctorRecipe, parts: _Parts) -> _Parts:
    """`parts` on the kernel file's own functor of the right arity (Note [functor fit]).

    Raises PipelineError when the routed stub computes another op the file has no functor for, or
    when a same-named functor of another arity stands in the way.
    """
    path = checkout.root / parts.kernel_file if parts.kernel_file else None
    text = path.read_text(encoding="utf-8") if path and path.is_file() else None
    routed = parts.stub is not None and recipe.stub not in ((parts.stub,) + (res.route.stubs if res.route else ()))
    base = parts.stub.removesuffix("_stub") if routed and parts.stub else recipe.op
    arity = _ARITY[recipe.family]
    names = [base, f"{base}_alpha"] if recipe.family is RecipeFamily.ALPHA else [base]
    found, clash = fit_functor(text, names, arity)
    if found == recipe.op or (found is None and not routed and clash is None):
        return parts
    if found is not None:
        regs = tuple(re.sub(rf"\(\s*{re.escape(recipe.op)}\s*,", f"({found},", r, count=1) for r in parts.registrations)
        return replace(parts, functor=f"{found}_functor", kernel_name=found, registrations=regs,
                       functor_source=(parts.functor_source or "").replace(recipe.functor, f"{found}_functor"))
    if clash is not None:
        name, took, line = clash
        raise PipelineError(f"struct {name}_functor takes {took} operand(s); aten::{res.op}'s {recipe.family.value} "
                            f"kernel needs {arity}", location=f"{parts.kernel_file}:{line}",
                            hint=f"add a {arity}-operand {name}_alpha_functor by hand, or port the op by hand")
    raise PipelineError(f"{res.route.describe() if res.route else parts.stub}: the recipe's {recipe.functor} computes "
                        f"{recipe.op}, and {parts.kernel_file} has no {base} functor taking {arity} operands",
                        location=parts.kernel_file, hint="port the op by hand")


def _orphaned_helpers(checkout: Checkout, res: Resolution,
                      legacy: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """(file, name) of each helper function the removed legacy code was the last user of (Note
    [legacy helpers]): defined in the same `.mm` file, called by the removed code, and named
    nowhere else in any `.mm` file once that code is gone."""
    gone = {name for _, name in legacy}
    found: list[tuple[str, str]] = []
    for rel, before, after in _without_legacy(checkout, res, legacy):
        others = "\n".join(p.read_text(encoding="utf-8", errors="replace")
                           for p in sorted(checkout.mps_operations.glob("*.mm")) if p != checkout.root / rel)
        for fn in res.sources.functions:
            if fn.where.file != rel or fn.impl_func or fn.name in gone:
                continue
            word = re.compile(rf"\b{re.escape(fn.name)}\b")
            if len(word.findall(before)) == len(word.findall(after)):
                continue  # the removed code did not call it
            rest = remove_legacy(after, res.op, fn.name, path=rel, drop_include=False)
            if not word.search(rest) and not word.search(others):
                found.append((rel, fn.name))
    return tuple(found)
