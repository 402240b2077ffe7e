"""`plan_port`: the whole port of one op, decided from the tree before any edit.

Public surface of the pipeline's plan step (contract C): `resolve_op`, `plan_port`, `apply_port`,
`PortPlan`, `RowChange`, `Resolution`. Registry rows follow Note [why rows collapse] (port/plan/rows.py):
every row of the op that names an MPS-only kernel, or lacks MPS, moves onto the kernel CPU and CUDA
share, unless a launch spec gives the op a host function of its own (Note [spec rows]).

Note [one planner]: every plan is made one way (`_plan`). The op's launch kind decides its part
(`LaunchPart`): `_spec_part` for a launch spec (the spec recipe table's, or a model's),
`_pointwise_part` for an elementwise launch (the functor table's, a model's functor, or a kernel the
tree has), `_kernel_part` for an own-kernel port whose kernel and launch a model has yet to write.
What every port adds on top is shared: the legacy code and MPSGraph registrations it removes, its
xfail keys, its allow-list and whether it migrates an MPS path.

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
"""

from __future__ import annotations

import re
from pathlib import Path
from dataclasses import fields, replace

from metalport.port.write.apply import apply_port
from metalport.port.plan.functors import COMPLEX_TYPES, FunctorRecipe, dtypes_for, metal_types_for, recipe_table
from metalport.port.plan.functors import HostTemplate
from metalport.port.tree.kinds import Classification, Kind, tensor_outputs
from metalport.port.plan.launch import LAUNCHERS, LaunchKind
from metalport.port.write.metal import fit_functor
from metalport.port.plan.params import placed_params, with_params
from metalport.port.tree.shape import halves_reason
from metalport.port.plan.bodies import ITERATOR_BODIES, IteratorBody, halves_forward, iterator_body
from metalport.port.tree.obsolete import (grad_xfails, left_out_dtypes, legacy_registrations, obsolete_decorators,
                                          obsolete_xfails, opinfo_dtypes, opinfo_names, removed_legacy)
from metalport.port.write.host import StubDeclaration, find_stub_declaration
from metalport.port.tree.reuse import ExistingKernel, missing_legacy, reuse_lines
from metalport.port.plan.model import (COMMON_MPS, NATIVE_FUNCTIONS, NEEDS_LLM, TRANSLATED, LaunchPart, PortPlan,
                                       ReuseVerifier, RowChange)
from metalport.port.tree.resolve import Resolution, resolve_op
from metalport.port.plan.rows import dispatch_keys, plan_rows, routed_entry, spec_entry, spec_rows
from metalport.port.spec.model import LaunchSpec
from metalport.port.spec.recipes import SpecRecipe, spec_recipes
from metalport.port.spec.schema import check_schema
from metalport.port.tree.op_facts import Family, Status
from metalport.checkout.layout import KERNELS_DIR, OPERATIONS_DIR, Checkout
from metalport.checkout.sources import ImplKind
from metalport.errors import PipelineError, RecipeError, SpecError
from metalport.metal_types import FLOATING
from metalport import python_ast

__all__ = ["PortPlan", "Resolution", "RowChange", "apply_port", "plan_port", "plan_resolved", "resolve_op"]

_ALREADY_NATIVE = (Status.SHARED, Status.COMPOSITE)
# Host family -> the operands its functor takes (Note [functor fit]; a reused kernel's arity).
_ARITY = {"unary": 1, "binary": 2, "alpha": 3, "ternary_alpha": 4}
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

def _stub_declaration(checkout: Checkout, stub: str) -> StubDeclaration:
    """The stub's declaring header and parameters: the tree's headers first, then the wheel's."""
    try:
        return find_stub_declaration(stub, checkout.root / "aten/src")
    except RecipeError:
        from metalport.torch_facts import torch_include_dir

        return find_stub_declaration(stub, torch_include_dir())


def mps_complex_names(checkout: Checkout) -> dict[str, int]:
    """OpInfo names in common_mps.py's SUPPORTED_COMPLEX_OPS (MPS runs them for complex today),
    each with its line; empty when the tree has no such list."""
    path = checkout.root / COMMON_MPS
    if not path.is_file():
        return {}
    import ast

    from metalport.checkout.sources import named_assignments

    found: dict[str, int] = {}
    for name, value in named_assignments(python_ast.parse(path.read_text(encoding="utf-8"))):
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


def _table_parts(checkout: Checkout, recipe: FunctorRecipe, stub: str) -> LaunchPart:
    """The recipe table's functor, its registrations for the OpInfo's dtypes, and its family's files."""
    decl = _stub_declaration(checkout, stub)
    dtypes = dtypes_for(recipe)
    return LaunchPart(functor_step="table", kernel_file=f"{KERNELS_DIR}/{recipe.kernel_file}", functor=recipe.functor,
                      functor_source=recipe.source, dtypes=dtypes, registrations=recipe.registrations(dtypes),
                      host_file=f"{OPERATIONS_DIR}/{recipe.host_file}", macro=recipe.macro, stub=stub,
                      stub_header=decl.header, stub_params=decl.params, host_family=recipe.family.value)


def _llm_parts(checkout: Checkout, res: Resolution) -> LaunchPart:
    halves = halves_reason(res) if res.stub else None
    shape = _BY_FAMILY.get(Family.BINARY if halves else res.family)
    if shape is None:
        return LaunchPart(functor_step=NEEDS_LLM, stub=res.stub)
    host_family, kernel, host, macro = shape
    # A pointwise functor returns one value: an op whose kernel writes two tensors (frexp's mantissa and
    # exponent) cannot be met by any functor a model writes, so it is refused here, before a model call.
    many = next((e for e in res.entries if len(tensor_outputs(e.func)) > 1), None)
    if many is not None:
        outputs = tensor_outputs(many.func)
        raise PipelineError(f"aten::{res.op} writes {len(outputs)} tensors ({', '.join(outputs)}) per element; a "
                            f"{macro} functor returns one, so its port is not a functor for a model to write",
                            location=f"{res.registry.path}:{many.span.start}",
                            hint="it needs a kernel with one output buffer per result; port it by hand")
    names = opinfo_names(res.op, res)
    keep_complex = res.status in _MIGRATING and any(n in mps_complex_names(checkout) for n in names)
    sibling = None if keep_complex else _complex_sibling(res)
    cpu = opinfo_dtypes(names)  # float types when no OpInfo goes by the op's names
    dtypes = metal_types_for(cpu, complex=keep_complex or sibling is not None) if cpu is not None \
        else FLOATING
    why = tuple(w for w in (halves, sibling if sibling and COMPLEX_TYPES[0] in dtypes else None) if w)
    parts = LaunchPart(functor_step=NEEDS_LLM, kernel_file=f"{KERNELS_DIR}/{kernel}", functor=f"{res.op}_functor",
                       dtypes=dtypes, registrations=tuple(f"{macro}({res.op}, {t}, {t});" for t in dtypes),
                       host_file=f"{OPERATIONS_DIR}/{host}", macro=macro, stub=res.stub, host_family=host_family,
                       placement=why)
    if res.stub:
        try:
            decl = _stub_declaration(checkout, res.stub)
        except RecipeError:
            return parts
        parts = replace(parts, stub_header=decl.header, stub_params=decl.params)
        parts = with_params(res, parts, decl.params)
    return parts


def _complex_sibling(res: Resolution) -> str | None:
    """Note [complex siblings]: why the port registers complex kernels although MPS runs none of the op
    for complex today, or None: a sibling kernel of the op in the tree (`<op>_<word>`, pow's
    `pow_scalar`, the Tensor-Scalar overload's) registers float2, so the op's complex math is written
    for Metal already (c10::metal::pow's polar form) and upstream's port registers the complex rows
    too (pow.Tensor_Tensor: float2 and half2). Only where CPU runs the op for complex (the OpInfo's
    dtypes decide, `metal_types_for`)."""
    found = next((s for s in res.sources.shader_ops if s.name.startswith(f"{res.op}_") and s.args
                  and s.args[0] == COMPLEX_TYPES[0] and "_" not in s.name[len(res.op) + 1:]), None)
    if found is None:
        return None
    return (f"complex rows (float2, half2): the tree's sibling kernel {found.name} registers {found.args[0]} "
            f"({found.where}), so the op's complex math exists for Metal (Note [complex siblings])")


def _existing_kernel_file(res: Resolution) -> str | None:
    """The `.metal` file that already registers the op's functor, if one does."""
    return next((s.where.file for s in res.sources.shader_ops if s.name == res.op), None)


def launch_in_tree(root: Path, op: str) -> tuple[LaunchKind, LaunchSpec | None]:
    """How the tree at `root` launches `op`'s kernels, as its port launched them (the planner's
    decision, for a tree already ported): its spec recipe's kind and spec when the tree's kernel file
    defines that spec's kernel, else elementwise (the `exec_*_kernel` host) and None."""
    recipe = spec_recipes().get(op.removeprefix("aten::").split(".")[0])
    kernel = Path(root) / recipe.spec.kernel_file if recipe is not None else None
    if kernel is not None and kernel.is_file() and \
            re.search(rf"\b{re.escape(recipe.spec.kernel_name)}\b", kernel.read_text(errors="replace")):
        return LaunchKind(recipe.spec.kind), recipe.spec
    return LaunchKind.ELEMENTWISE, None


def plan_port(checkout: Checkout, op: str, *, force: bool = False,
              verify_reuse: ReuseVerifier | None = None) -> PortPlan:
    """The plan for porting `op` in `checkout` to a native Metal kernel.

    Raises UnknownOpError (with close names), PipelineError "aten::x is already native (shared)"
    for a shared or composite op unless `force`, PipelineError "aten::x is not a port candidate:
    <reason>" for a not-a-candidate op (`port.tree.kinds`), and PipelineError when a pointwise row has
    no shared CPU/CUDA kernel. An op of the spec recipe table is planned from its launch spec;
    other reduction-stub, custom-kernel and multi-tensor ops get a plan of their kind with no
    launch yet (`_kernel_part`). A pointwise op outside the recipe table gets `needs_llm=True`,
    unless the tree has a kernel computing it (Note [reuse an existing kernel]): the op's own, or
    another op's that `verify_reuse` (the caller's behavioural check, `checks.reuse_check.verify_reuse`:
    the planner runs no kernel itself) passes; without `verify_reuse` another op's kernel is not reused.
    """
    return plan_resolved(checkout, resolve_op(checkout, op), force=force, verify_reuse=verify_reuse)


def plan_resolved(checkout: Checkout, res: Resolution, *, spec_recipe: SpecRecipe | None = None,
                  force: bool = False, verify_reuse: ReuseVerifier | None = None,
                  reuse_kernels: bool = True) -> PortPlan:
    """`plan_port` of an op already resolved. `spec_recipe` (a model's, `model_spec_recipe`) plans
    it as the op's spec recipe would be; SpecError when that spec does not fit the op."""
    spec_recipe = spec_recipe or spec_recipes().get(res.op)
    kind = res.kind
    declined = None
    if spec_recipe is None and kind is not None and kind.kind is Kind.MULTI_TENSOR and res.status not in _ALREADY_NATIVE:
        from metalport.port.translate.foreach import foreach_recipe  # Note [foreach from the tree's functor]

        spec_recipe, declined = foreach_recipe(checkout, res.sources, res.op)
        if spec_recipe is not None:
            base = res.op.removeprefix("_foreach_")
            why = (f"reuses {base}_functor ({spec_recipe.spec.kernel_file}, the tree's) in the _foreach_exp recipe's "
                   f"per-chunk launch over the tensor list (Note [foreach from the tree's functor])")
            if f"struct foreach_{base}_functor" in spec_recipe.kernel_source:  # Note [foreach from the recipe table]
                why = (f"adds the recipe table's {base} functor as foreach_{base}_functor to "
                       f"{spec_recipe.spec.kernel_file} (the tree has no {base}_functor) and launches it in the "
                       f"_foreach_exp recipe's per-chunk launch over the tensor list (Note [foreach from the recipe table])")
            part = _spec_part(checkout, res, spec_recipe)
            return _plan(checkout, res, replace(part, functor_step=TRANSLATED, reuse=(why, *part.reuse)))
    if spec_recipe is not None:
        part = _spec_part(checkout, res, spec_recipe)
    elif res.status in _ALREADY_NATIVE and not force:
        raise PipelineError(f"aten::{res.op} is already native ({res.status.value})",
                            location=res.mps_impl, hint="pass --force to plan it anyway")
    elif kind is not None and not kind.candidate and res.status is not Status.SHARED:
        raise PipelineError(f"aten::{res.op} is not a port candidate: {kind.reason}",
                            location=f"{res.registry.path}:{res.entries[0].span.start}",
                            hint="pick one with `metalport backlog --porter recipe,llm`")
    elif kind is not None and kind.kind is Kind.CUSTOM_KERNEL and \
            isinstance(body := iterator_body(checkout, res), IteratorBody):
        part = _bodies_part(checkout, res, kind, body)
    elif kind is not None and kind.kind in _OWN_KERNEL:
        part = replace(_kernel_part(res, kind), translate_declined=declined)
        if kind.kind is Kind.CUSTOM_KERNEL and isinstance(body := iterator_body(checkout, res), str):
            part = replace(part, kind_reason=f"{part.kind_reason}; not iterator bodies (Note [iterator bodies]): "
                                             f"{body}, so the port needs a kernel and launch of its own")
    elif (kind is None or kind.kind is Kind.POINTWISE_STUB) and res.status in _MIGRATING and \
            isinstance(body := halves_forward(checkout, res), IteratorBody):  # Note [halves forward]
        part = _bodies_part(checkout, res, kind, body)
    else:
        part = _pointwise_part(checkout, res, kind, reuse_kernels=reuse_kernels)
    plan = _plan(checkout, res, part)
    if plan.reused_kernel is None or plan.reused_kernel == res.op:
        return plan
    passed, line = verify_reuse(checkout, plan) if verify_reuse is not None else \
        (False, "no behavioural check of it was asked for (the planner runs no kernel itself)")
    if passed:
        return replace(plan, reuse=(f"{plan.reuse[0]}; {line}", *plan.reuse[1:]))
    fallback = plan_resolved(checkout, res, force=force, reuse_kernels=False)
    return replace(fallback, reuse=(*fallback.reuse, f"does not reuse kernel {plan.reused_kernel} "
                                                      f"({plan.kernel_file}): {line}"))


def _plan(checkout: Checkout, res: Resolution, part: LaunchPart) -> PortPlan:
    """The plan of `res` with its launch kind's `part` (Note [one planner]), and what every port
    adds: the legacy MPS code it removes with the helpers and macros only that code used (Note
    [legacy helpers] in port/tree/obsolete.py), the MPSGraph registrations it replaces, its xfail keys,
    its allow-list (registry, common_mps.py, every file it edits), whether it migrates an MPS path
    (the op runs on MPS today, or the port removes MPS code or rows) and the stub route of a port
    registering a stub (the route's stubs when the tree shows one: `sub_out` reaches add_stub)."""
    route = res.route
    legacy, include, macros = removed_legacy(checkout, res) if not part.bodies else ((), None, ())
    legacy_regs = legacy_registrations(checkout, res)
    allowed = {NATIVE_FUNCTIONS, COMMON_MPS, *(f for f, _ in legacy), *(f for f, _, _ in legacy_regs),
               *(d[0] for d in (*part.decorator_entries, *part.decorator_narrowed))}
    allowed |= {p for p in (None if part.reused_kernel else part.kernel_file, part.host_file) if p}
    if part.params_source and part.params_header:  # Note [params route]: the struct's header
        allowed.add(part.params_header)
    if part.shared_launcher == "extend":  # Note [extend shared code at home] (port/write/shared.py)
        from metalport.port.write.shared import HOMES

        allowed |= set(HOMES)
    tolerances = _module_tolerances(checkout, res, part.dtypes)
    if tolerances:
        allowed.add(tolerances[0][0])
    launch = {f.name: getattr(part, f.name) for f in fields(part)}
    if part.xfail_keys is None:  # each key of the entries removed or narrowed once, in order
        launch["xfail_keys"] = tuple(dict.fromkeys(x[1] for x in (*part.xfail_entries, *part.xfail_narrowed)))
    return PortPlan(
        op=res.op, status=res.status.value, family=res.family.value, legacy=legacy[0] if legacy else None,
        legacy_others=legacy[1:], legacy_include=include, legacy_registrations=legacy_regs, legacy_macros=macros,
        missing=missing_legacy(checkout, res.mps_kernels, {f.name for f in res.legacy}),
        allowed_paths=tuple(sorted(allowed)), needs_llm=part.functor_step not in ("table", "reuse", TRANSLATED),
        migrate=res.status in _MIGRATING or bool(res.legacy) or any(r.deletes or _names_mps(r.before)
                                                                    for r in part.rows),
        stubs=(route.stubs if route else (part.stub,)) if part.stub else (),
        stub_route=route.describe() if route and part.stub else None,
        stub_args=route.calls[0].args if route and part.stub else (), rows_why=_rows_why(res, part),
        kept_rows=tuple((e, k) for e, k, _ in res.kept_rows), module_tolerances=tolerances,
        module_tolerance_values=_module_tolerance_values(tolerances), **launch,
    )


def _module_tolerances(checkout: Checkout, res: Resolution, dtypes: tuple[str, ...]):
    """Note [module tolerances] (port/write/decorators.py): the ModuleInfo MPS failure decorators the port may
    replace by a toleranceOverride, for the dtypes it registers."""
    from metalport.port.write.decorators import MODULES_FILE, module_tolerances
    from metalport.port.spec.model import METAL_DTYPES

    path = checkout.root / MODULES_FILE
    if not dtypes or not path.is_file():
        return ()
    return module_tolerances(path.read_text(encoding="utf-8"), res.op, [METAL_DTYPES.get(t, t) for t in dtypes])


def _module_tolerance_values(tolerances: tuple[tuple[str, str, str, tuple[str, ...]], ...]):
    """Note [module tolerances]: the value of each planned toleranceOverride, per dtype, from the
    installed torch; a decorator with a dtype it cannot derive gets none (the port leaves it)."""
    from metalport.torch_facts import module_tolerance

    out = []
    for _, module, test, dtypes in tolerances:
        found = {d: module_tolerance(module, test, d) for d in dtypes}
        if all(found.values()):
            out += [(module, test, d, v[0], v[1], v[2]) for d, v in found.items() if v is not None]
    return tuple(out)


def _rows_why(res: Resolution, part: LaunchPart) -> tuple[str, ...]:
    """One line per entry whose rows the port changes (what they join and why) or keeps (Note
    [kept rows] in port/tree/resolve.py)."""
    out = []
    for entry in dict.fromkeys(r.entry for r in part.rows):
        after = next((r.after.strip() for r in part.rows if r.entry == entry and r.after), "")
        reason = (f"{part.stub} is registered for MPS, so the shared kernel serves MPS too" if part.stub
                  else "the port serves it")
        out.append(f"{entry} moves to `{after}`: {reason}" if after else f"{entry}: {reason}")
    return (*out, *(why for _, _, why in res.kept_rows))


def _names_mps(line: str) -> bool:
    """Whether a registry dispatch line routes MPS (`MPS: x_mps`, `CPU, MPS: x`): a port changing
    one migrates an existing MPS kernel."""
    return ":" in line and "MPS" in dispatch_keys(line)


def _pointwise_part(checkout: Checkout, res: Resolution, kind: Classification | None, *,
                    reuse_kernels: bool) -> LaunchPart:
    """The part of a pointwise-stub port (an elementwise launch): rows collapsed onto the shared
    kernel, the functor (the table's, a model's, or an existing kernel launched instead), the host
    stub and its registration, and the xfails and decorators its dtypes make obsolete."""
    rows = plan_rows(res)
    recipe = recipe_table().get(res.op)
    stub = res.route.stub if res.route else recipe.stub if recipe else res.stub
    translation = None
    if recipe is None and stub:  # Note [translate porter]: the CPU kernel's lambda, ported as a recipe
        from metalport.port.translate.recipe import translated_recipe

        translation, recipe = translated_recipe(checkout, res, stub)
    parts = _table_parts(checkout, recipe, stub) if recipe is not None else _llm_parts(checkout, res)
    if recipe is not None and translation is not None and translation.params_struct:
        parts = with_params(res, parts, parts.stub_params)  # Note [translated scalars]
    if translation is not None:
        parts = replace(parts, functor_step=TRANSLATED if recipe is not None else parts.functor_step,
                        kernel_name=recipe.op if recipe is not None and recipe.op != res.op else parts.kernel_name,
                        cpu_lambda=(translation.where, translation.lambda_text) if translation.where else None,
                        translate_declined=translation.declined)
    names = _test_list_names([recipe.opinfo] if recipe is not None else opinfo_names(res.op, res))
    _complex_kept(checkout, res, names, parts.dtypes, recipe is not None)
    shape_lines = parts.placement
    parts, placement, existing, turned_down = _placed_parts(checkout, res, recipe, parts, reuse_kernels)
    placement = (*shape_lines, *placement)
    if parts.params:
        wanted = parts.params_type
        parts, params_line = placed_params(checkout, res, parts, existing)
        placement = (*placement, params_line)
        if parts.functor_source and wanted and parts.params_type != wanted:  # a translated functor names its struct
            parts = replace(parts, functor_source=re.sub(rf"\bconst {re.escape(wanted)} params\b",
                                                         f"const {parts.params_struct} params", parts.functor_source))
    kept = next((r for r in res.registrations if r.stub == parts.stub and r.kind is not ImplKind.GRAPH), None)
    if kept is not None:
        parts = replace(parts, host_file=kept.where.file)  # registered natively already: no second one
        register = f"REGISTER_DISPATCH({kept.stub}, &{kept.kernel});"
    else:
        register = (f"REGISTER_DISPATCH({parts.stub}, &{res.op}_mps_kernel);"
                    if parts.stub and parts.host_file else None)
    shared, shared_line = None, None
    if parts.host_family == "ternary_alpha":  # Note [extend shared code at home] (port/write/shared.py)
        from metalport.port.write.shared import ternary_alpha_support

        shared, shared_line = ternary_alpha_support(checkout.root)
    xfail_entries, xfail_narrowed = obsolete_xfails(res, parts.dtypes)
    decorators, _ = obsolete_decorators(checkout, res.op, names, parts.dtypes)
    return replace(
        parts, rows=rows, register_dispatch=register, stub_registered_at=str(kept.where) if kept else None,
        kernel_name=(parts.kernel_name or res.op) if parts.kernel_file else None,
        kind=kind.kind.value if kind else Kind.POINTWISE_STUB.value, kind_reason=kind.reason if kind else None,
        xfail_entries=xfail_entries, xfail_narrowed=xfail_narrowed, decorator_entries=decorators,
        reuse=_reuse_lines(checkout, parts, shared_line, existing, turned_down), placement=placement,
        reused_kernel=existing.name if existing else None, shared_launcher=shared,
    )


def _spec_part(checkout: Checkout, res: Resolution, recipe: SpecRecipe) -> LaunchPart:
    """The part of a launch-spec port: rows routing the entry the spec serves (Note [spec rows]),
    the recipe's kernel source for the spec's kernel file, the host function's file, and the xfails
    and decorators its dtypes make obsolete or narrow. SpecError when the spec does not fit the op's
    schema, PipelineError when the routed entry cannot take the MPS row (`rows.spec_rows`)."""
    spec = recipe.spec
    named = spec_entry(res, spec)
    try:
        check_schema(spec, named.func)
    except SpecError as err:
        raise SpecError(err.message, location=f"{res.registry.path}:{named.span.start}", hint=err.hint) from None
    entry = routed_entry(res.entries, named)
    rows = spec_rows(res, entry, spec)
    metal = tuple(dict.fromkeys(t[0] for t in spec.dtypes))
    names = [spec.opinfo] if spec.opinfo else opinfo_names(res.op, res)
    left = left_out_dtypes(metal, names)
    xfail_entries, xfail_narrowed = obsolete_xfails(res, metal, names=names, narrow_to=left)
    decorators, narrowed_decorators = obsolete_decorators(checkout, res.op, names, metal, narrow_to=left)
    return LaunchPart(
        functor_step="table", kernel_file=spec.kernel_file, functor_source=recipe.kernel_source, dtypes=metal,
        registrations=spec.host_names, host_file=spec.host_file, kernel_name=spec.kernel_name, rows=rows, kind=spec.kind, kind_reason=_kind_reason(res, spec),
        launch_kind=LaunchKind(spec.kind), spec=spec.to_dict(), schema=entry.func, xfail_entries=xfail_entries, xfail_narrowed=xfail_narrowed,
        xfail_added=grad_xfails(res, spec.opinfo, spec.grad_xfail, metal), decorator_entries=decorators,
        decorator_narrowed=narrowed_decorators,
    )


def _kind_reason(res: Resolution, spec: LaunchSpec) -> str | None:
    """Why the port has the spec's kind; says so when the spec overrides the registry's classification
    (a reduction whose stub the tree does not show is ported as its own `MPS:` kernel)."""
    if res.kind is None:
        return None
    if res.kind.kind.value == spec.kind:
        return res.kind.reason
    return (f"its spec recipe ports it as {spec.kind} with its own MPS host function {spec.host_function} "
            f"(the registry alone says {res.kind.kind.value}: {res.kind.reason})")


def _bodies_part(checkout: Checkout, res: Resolution, kind: Classification | None, body: IteratorBody) -> LaunchPart:
    """The part of an iterator-bodies port (Note [iterator bodies], port/plan/bodies.py): rows kept, the
    out function's MPSGraph body rewritten in place, and a functor for a model in the kernel file the
    host file's library is built from, registered for the dtypes the op's OpInfo runs in float."""
    from metalport.port.write.halves import DENSE_MACRO, HALVES_FAMILY, HALVES_MACRO

    macro = {"unary": "REGISTER_UNARY_OP", HALVES_FAMILY: HALVES_MACRO}.get(body.host_family, "REGISTER_BINARY_OP")
    names = opinfo_names(res.op, res)
    cpu = opinfo_dtypes(names)
    dtypes = tuple(t for t in metal_types_for(cpu, complex=False) if t in FLOATING) \
        if cpu is not None else FLOATING
    xfail_entries, xfail_narrowed = obsolete_xfails(res, dtypes)
    registrations = tuple(f"{macro}({res.op}, {t});" if body.host_family == HALVES_FAMILY else
                          f"{macro}({res.op}, {t}, {t});" for t in dtypes)
    # Note [halves forward]: the contiguous kernel too (a backward over halves registers both with one macro)
    dense = body.host_family != HALVES_FAMILY and f'"{res.op}_dense_{{}}"' in body.body
    if dense:
        registrations += tuple(f"{DENSE_MACRO}({res.op}, {t});" for t in dtypes)
    reason = kind.reason.split(":")[0] if kind is not None else f"aten::{res.op}"
    reason = (f"{reason}; its stub's iterator only sees the halves as strided views, so the port rewrites the MPS "
              f"row's body" if dense else f"{reason}, and no stub both share: the port rewrites the MPS row's body")
    return LaunchPart(
        functor_step=NEEDS_LLM, kernel_file=body.kernel_file, functor=f"{res.op}_functor", dtypes=dtypes,
        registrations=registrations, host_file=body.file, macro=macro, host_family=body.host_family,
        kernel_name=res.op, kind=ITERATOR_BODIES, kind_reason=reason,
        placement=(body.why(),), xfail_entries=xfail_entries, xfail_narrowed=xfail_narrowed,
        bodies=((body.file, body.function, body.body),))


def _kernel_part(res: Resolution, kind: Classification) -> LaunchPart:
    """The part of a reduction-stub, custom-kernel or multi-tensor port no spec recipe covers: the
    rows collapsed onto the shared CPU/CUDA kernel when the port registers its stub (none when it
    writes `MPS: x_mps` rows) and a kernel step for a model, whose spec brings the launch
    (`model_spec_recipe`). Its dtypes are not known yet: every xfail key of the op is listed."""
    try:
        rows = () if kind.rows or kind.stub is None else plan_rows(res)
    except PipelineError:
        rows = ()
    return LaunchPart(functor_step=NEEDS_LLM, stub=kind.stub, rows=rows, kind=kind.kind.value, kind_reason=kind.reason,
                      launch_kind=LaunchKind.PENDING, xfail_keys=res.xfail_keys)


def _placed_parts(checkout: Checkout, res: Resolution, recipe: FunctorRecipe | None, parts: LaunchPart,
                  reuse_kernels: bool) -> tuple[LaunchPart, tuple[str, ...], ExistingKernel | None, tuple[str, ...]]:
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


def _reuse_lines(checkout: Checkout, parts: LaunchPart, shared_line: str | None, existing: ExistingKernel | None,
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


def _existing_kernel(checkout: Checkout, res: Resolution, parts: LaunchPart):
    """(the tree's kernel the port launches instead of adding a functor, or None; lines for the
    candidates turned down) (Note [reuse an existing kernel] in port/tree/reuse.py). Only a port of the
    op's own stub with a unary or binary host looks."""
    from metalport.port.tree.reuse import existing_kernels

    routed = parts.stub is not None and parts.stub != f"{res.op}_stub"
    if not (parts.kernel_file and parts.host_family in ("unary", "binary", *(("alpha",) if routed else ()))
            and parts.registrations and parts.stub):
        return None, ()
    arity = _ARITY[parts.host_family] + (1 if parts.params else 0)  # a params struct is one more argument
    if routed:
        # Note [routed stubs reuse the stub's kernel]: the CPU kernel calls another op's stub
        # (sub_out: add_stub with -alpha), so the kernel the port launches computes that op; the
        # tree's own (add_alpha_functor, fitted by arity as Note [functor fit] fits it) is reused
        # when it is registered for every type the port needs, else nothing is.
        if not res.route or parts.stub not in res.route.stubs:
            return None, ()
        base = parts.stub.removesuffix("_stub")
        path = checkout.root / parts.kernel_file
        text = path.read_text(encoding="utf-8") if path.is_file() else None
        name, _ = fit_functor(text, [base, f"{base}_alpha"] if parts.macro and "ALPHA" in parts.macro else [base], arity)
        if name is None:
            return None, ()
        regs = tuple(re.sub(r"\(\s*\w+\s*,", f"({name},", r, count=1) for r in parts.registrations)
        found, refused = existing_kernels(checkout, res.sources, name, arity, regs)
        return (found[0], ()) if found else (None, tuple(refused))
    found, refused = existing_kernels(checkout, res.sources, res.op, arity, parts.registrations,
                                      own_types_suffice=bool(parts.params))
    return (found[0] if found else None), tuple(refused)


def _host_call(parts: LaunchPart) -> str | None:
    """The launcher call the host stub will make (for the plan's reuse lines)."""
    launcher = LAUNCHERS.get(parts.host_family or "")
    if launcher is None:
        return None
    if parts.params_type is not None and parts.host_family in ("unary", "binary"):
        return f"exec_{parts.host_family}_kernel_with_params"
    from metalport.port.plan.functors import CASTOUT_MACRO

    castout = any(r.startswith(CASTOUT_MACRO + "(") for r in parts.registrations)
    return launcher + (" kBool" if castout else "")


def _placed_by_siblings(checkout: Checkout, res: Resolution, parts: LaunchPart) -> tuple[LaunchPart, tuple[str, ...]]:
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
    # Only siblings launched as the port is (a binary functor beside binary ones): pow_tensor_scalar_stub's
    # unary kernel does not make UnaryKernel.metal the home of pow.Tensor_Tensor's binary one.
    arity = (parts.macro or "").split("_")[1:2]
    shader_file = {s.name: s.where.file for s in res.sources.shader_ops
                   if not arity or s.macro.split("_")[1:2] == arity}
    for reg in res.sources.registrations:
        if reg.stub not in declared or reg.kind is ImplKind.GRAPH:
            continue
        launched = [c for c in res.sources.kernel_calls if c.function == reg.kernel and c.kernel in shader_file]
        if not launched:
            continue
        hosts[reg.where.file] += 1
        for call in launched:
            kernels[shader_file[call.kernel]] += 1
    if not hosts or not kernels:
        return parts, (f"kernel file {parts.kernel_file} and host file {parts.host_file}: from the family table "
                       f"(fallback: the tree registers no sibling of {parts.stub} from {header or 'its header'})",)
    host, kernel = hosts.most_common(1)[0][0], kernels.most_common(1)[0][0]
    why = (f"kernel file {kernel} and host file {host}: where the tree keeps the siblings of {parts.stub} "
           f"(stubs of {header} registered natively)")
    return replace(parts, kernel_file=kernel, host_file=host), (why,)


def _fit_functor(checkout: Checkout, res: Resolution, recipe: FunctorRecipe, parts: LaunchPart) -> LaunchPart:
    """`parts` on the kernel file's own functor of the right arity (Note [functor fit]).

    Raises PipelineError when the routed stub computes another op the file has no functor for, or
    when a same-named functor of another arity stands in the way.
    """
    path = checkout.root / parts.kernel_file if parts.kernel_file else None
    text = path.read_text(encoding="utf-8") if path and path.is_file() else None
    routed = parts.stub is not None and recipe.stub not in ((parts.stub,) + (res.route.stubs if res.route else ()))
    base = parts.stub.removesuffix("_stub") if routed and parts.stub else recipe.op
    arity = _ARITY[recipe.family.value]
    names = [base, f"{base}_alpha"] if recipe.family is HostTemplate.ALPHA else [base]
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
