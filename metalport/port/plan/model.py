"""`PortPlan` and `RowChange`: the reviewed, serialisable plan of one op's port.

A plan is decided before any edit (`plan_port`) and carried in the graph state as a dict
(`to_dict`/`from_dict` round-trip exactly). Paths are relative to the checkout root.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from metalport.port.plan.launch import ElementwiseLaunch, LaunchKind, listify

if TYPE_CHECKING:
    from metalport.checkout.layout import Checkout

NEEDS_LLM = "needs an LLM (--model openai:...)"  # the functor step of a plan waiting for a model
TRANSLATED = "translate"  # the functor step of a plan whose functor the translate porter wrote
_OWN_FUNCTOR = ("table", "reuse", TRANSLATED)  # functor steps that need no model
NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"
COMMON_MPS = "torch/testing/_internal/common_mps.py"


def _tuplify(value: Any) -> Any:
    """Lists (nested too) as tuples: the inverse of `listify` (a dict, the launch spec, is kept)."""
    return tuple(_tuplify(v) for v in value) if isinstance(value, (list, tuple)) else value


@dataclass(frozen=True)
class RowChange:
    """One dispatch line of one registry entry: its text before and after (`""` = deleted)."""

    entry: str  # the entry's full name, e.g. "heaviside.out"
    line: int  # 1-based line in the base native_functions.yaml
    before: str  # the whole line as it reads in the base, without its newline; "" = `after` is a
    # new line inserted after `line`
    after: str  # the whole line after the port; "" when the line is deleted

    @property
    def deletes(self) -> bool:
        """True when the port removes this line (the `MPS: x_mps` half of a collapse)."""
        return self.after == ""

    @property
    def inserts(self) -> bool:
        """True when the port adds `after` as a new line after `line` (Note [spec rows])."""
        return self.before == ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"entry": self.entry, "line": self.line, "before": self.before, "after": self.after}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RowChange:
        """Inverse of `to_dict`."""
        return cls(str(data["entry"]), int(data["line"]), str(data["before"]), str(data["after"]))


@dataclass(frozen=True, kw_only=True)
class LaunchPart:
    """What the op's launch kind decides of its plan (Note [one planner] in port/plan/planner.py): the
    functor, kernel and host side of a pointwise port (from the recipe table, translated, or sketched
    for a model), a launch spec, or iterator bodies. `PortPlan` is a `LaunchPart` plus what every port
    adds; the planner's parts are `LaunchPart`s, and each field is the plan's of the same name."""

    rows: tuple[RowChange, ...] = ()
    kernel_file: str | None = None
    functor: str | None = None
    functor_source: str | None = None
    dtypes: tuple[str, ...] = ()
    registrations: tuple[str, ...] = ()
    host_file: str | None = None
    register_dispatch: str | None = None
    kernel_name: str | None = None  # the shader kernel; a pointwise part's None is the op's own
    xfail_keys: tuple[str, ...] | None = None  # None: the keys of the entries removed or narrowed
    # how its kernel is launched, decided by the planner (Note [one port model]): a functor's part is
    # elementwise; the spec and kernel parts say theirs
    launch_kind: LaunchKind = LaunchKind.ELEMENTWISE
    functor_step: str = "table"  # "table", "reuse", TRANSLATED or NEEDS_LLM
    macro: str | None = None  # REGISTER_*_OP macro of the registrations
    stub: str | None = None  # "heaviside_stub"
    stub_header: str | None = None  # "ATen/native/BinaryOps.h"
    stub_params: str | None = None  # "TensorIteratorBase& iter"
    host_family: str | None = None  # "unary" | "binary" | "alpha" | "ternary" (host template)
    xfail_entries: tuple[tuple[str, str, int], ...] = ()  # (list name, key, line) in the base
    # Entries whose dtype list the port only partly covers: (list, key, line, dtypes kept), e.g.
    # ("UNIMPLEMENTED_XFAILLIST", "hypot", 12, ("complex64",)); the list is narrowed to those.
    xfail_narrowed: tuple[tuple[str, str, int, tuple[str, ...]], ...] = ()
    # MPS skip/expectedFailure decorators of the op's OpInfos the port makes obsolete:
    # (file, OpInfo name, first line, last line) in the base (metalport/port/write/decorators.py).
    decorator_entries: tuple[tuple[str, str, int, int], ...] = ()
    # Decorators the port makes pass for some dtypes only, narrowed to the others:
    # (file, OpInfo name, first line, last line, torch dtype names kept) in the base.
    decorator_narrowed: tuple[tuple[str, str, int, int, tuple[str, ...]], ...] = ()
    # Entries the port adds: (list, key, torch dtype names, reason), e.g. the forward-only port of
    # _ctc_loss adds ("XFAILLIST_GRAD", "nn.functional.ctc_loss", ("float32",), "...backward...").
    xfail_added: tuple[tuple[str, str, tuple[str, ...], str], ...] = ()
    # An existing native registration of `stub` the port keeps ("file:line").
    stub_registered_at: str | None = None
    # How the port is made (`port.tree.kinds.Kind` value) and why, in one line: "reduction-stub",
    # "prod_out reaches prod_stub through a reduction TensorIterator".
    kind: str = "pointwise-stub"
    kind_reason: str | None = None
    # A spec-recipe port carries its launch spec (`LaunchSpec.to_dict()`), the `func:` schema of
    # the entry it serves, and its kernel source in `functor_source`; its rows insert lines
    # (Note [spec rows] in port/plan/rows.py).
    spec: dict[str, Any] | None = None
    schema: str | None = None
    # Note [reuse before writing] (port/tree/reuse.py): what the port reuses from the tree and what it
    # adds, one line each.
    reuse: tuple[str, ...] = ()
    placement: tuple[str, ...] = ()  # where the kernel and host files come from, one line each
    # Note [reuse an existing kernel] (port/tree/reuse.py): the tree's kernel the host stub launches
    # (`kernel_name`, in `kernel_file`) instead of a new functor; the kernel file is not edited.
    reused_kernel: str | None = None
    # Note [extend shared code at home] (port/write/shared.py): "extend" when the port adds the shared
    # launcher/kernel variant it needs to its home files, "reuse" when the tree has it, None when
    # the port keeps a file-local copy (the plan's reuse lines say why).
    shared_launcher: str | None = None
    # Note [params route] (port/plan/params.py): the stub's scalars carried into the kernel as one struct,
    # (name, stub C++ type, opmath, default) each; `params_type` the name the host passes and the
    # host names end in ("SoftplusParams", "NanToNumParams_float"), `params_struct` its C++ type
    # ("NanToNumParams<float>"), `params_header` the file defining it, `params_source` the struct the
    # port adds there (None: the tree defines it already).
    params: tuple[tuple[str, str, bool, str], ...] = ()
    params_type: str | None = None
    params_struct: str | None = None
    params_header: str | None = None
    params_source: str | None = None
    # Note [translate porter] (port/translate/porter.py): the CPU kernel's scalar lambda a translated
    # functor comes from ("file:line", the lambda as written), or why the porter declined the op.
    cpu_lambda: tuple[str, str] | None = None
    translate_declined: str | None = None
    # Note [iterator bodies] (port/plan/bodies.py): (host file, out function, new body) of each MPS row kept
    # whose MPSGraph body the port rewrites as a TensorIterator launch.
    bodies: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class PortPlan(LaunchPart):
    """Every mechanical step of porting one op to a native Metal kernel: its launch part (what the
    op's launch kind decided) and what every port adds.

    `status`/`family` are the backlog's values ("mps-graph", "binary-pointwise", ...).
    `legacy` is the (file, function) of the MPS implementation to remove, `legacy_others` any
    further ones (an op with several `_mps` functions); `legacy_include` the per-op
    `#include <ATen/ops/x_native.h>` line removed with them (None when something else in that
    file still needs it). `needs_llm` plans have no `functor_source`: the functor step says
    `functor_step` and `apply_port` needs `functor_source=` from a model. A `translate` plan's
    functor (or, for a `_foreach_` row, its spec kernel) was written by the translate porter from
    the tree (Note [translate porter]); it is ported and checked as a recipe's.
    """

    op: str
    status: str
    family: str
    legacy: tuple[str, str] | None
    legacy_include: str | None
    allowed_paths: tuple[str, ...]
    needs_llm: bool
    migrate: bool
    xfail_keys: tuple[str, ...]  # the xfail keys the port removes or narrows (the part's None resolved)
    launch_kind: LaunchKind  # stated by every plan (a plan without one is refused)
    legacy_others: tuple[tuple[str, str], ...] = ()
    # Stub routing (checkout.routing): every stub the op's CPU kernel calls, each of which must be
    # registered for MPS exactly once after the port; `stub` is the first of them. `stub_route` is
    # the route in one line, `stub_args` the arguments the kernel passes the stub (`("-alpha",)`).
    stubs: tuple[str, ...] = ()
    stub_route: str | None = None
    stub_args: tuple[str, ...] = ()
    # The MPSGraph registrations of the route's stubs the port removes: (file, line, text of the line).
    legacy_registrations: tuple[tuple[str, int, str], ...] = ()
    # Note [reuse before writing]: what the tree lacks ("legacy `x_out_mps` not found ...: remove it by
    # hand"), and (file, macro) of legacy macros whose last invocation the port removes.
    missing: tuple[str, ...] = ()
    legacy_macros: tuple[tuple[str, str], ...] = ()
    # Which registry rows move and why, one line each (Note [why rows collapse], Note [kept rows]).
    rows_why: tuple[str, ...] = ()
    kept_rows: tuple[tuple[str, str], ...] = ()  # (entry, MPS kernel) rows kept (Note [kept rows], port/tree/resolve.py)
    # Note [module tolerances] (port/write/decorators.py): (file, module, test, torch dtype names) of each MPS
    # failure decorator of a ModuleInfo whose module calls the op, which the port may replace by a
    # toleranceOverride for that test and dtypes (the file is then on the allow-list).
    module_tolerances: tuple[tuple[str, str, str, tuple[str, ...]], ...] = ()
    # (module, test, torch dtype name, atol, rtol, where from) of each value the port writes in place of
    # those decorators, read from the installed torch (`torch_facts.module_tolerance`)
    module_tolerance_values: tuple[tuple[str, str, str, float, float, str], ...] = ()

    def __post_init__(self) -> None:
        if self.needs_llm != (self.functor_step not in _OWN_FUNCTOR):
            raise ValueError(f"plan for {self.op}: needs_llm={self.needs_llm} but functor step "
                             f"{self.functor_step!r}")
        if (self.functor_step == "reuse") != (self.reused_kernel is not None):
            raise ValueError(f"plan for {self.op}: functor step {self.functor_step!r} with reused kernel "
                             f"{self.reused_kernel!r}")
        if not self.needs_llm and not self.functor_source and self.reused_kernel is None:
            raise ValueError(f"table plan for {self.op} has no functor source")
        if self.launch_kind.by_spec != (self.spec is not None) or \
                (self.spec is not None and self.spec.get("kind") != self.launch_kind.value):
            raise ValueError(f"plan for {self.op}: launch kind {self.launch_kind.value} with spec kind "
                             f"{None if self.spec is None else self.spec.get('kind')!r}")

    @property
    def elementwise(self) -> ElementwiseLaunch | None:
        """A pointwise port's launch, made from the plan's stub, kernel and dtype rows (so it never
        disagrees with them); None for any other launch kind."""
        return ElementwiseLaunch.of_plan(self) if self.launch_kind is LaunchKind.ELEMENTWISE else None

    @property
    def launch(self) -> dict[str, Any] | None:
        """The launch description as plain data: the elementwise launch's dict or the spec."""
        return self.elementwise.to_dict() if self.elementwise is not None else self.spec

    @property
    def legacy_all(self) -> tuple[tuple[str, str], ...]:
        """Every (file, function) of legacy MPS code the port removes."""
        return ((self.legacy,) if self.legacy else ()) + self.legacy_others

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples become lists)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "rows":
                value = [r.to_dict() for r in value]
            elif f.name == "launch_kind":
                value = value.value
            out[f.name] = listify(value)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PortPlan:
        """Inverse of `to_dict`; unknown keys are a ValueError."""
        known = {f.name for f in fields(cls)}
        extra = sorted(set(data) - known)
        if extra:
            raise ValueError(f"unknown PortPlan field(s) {extra}")
        values = {name: _tuplify(value) for name, value in data.items()}
        values["rows"] = tuple(RowChange.from_dict(r) for r in data.get("rows", ()))
        for name in ("dtypes", "registrations", "xfail_keys", "allowed_paths"):
            values.setdefault(name, ())
        values["legacy"] = values.get("legacy") or None
        if "launch_kind" not in values:
            raise ValueError("PortPlan without a launch_kind (a plan from before launch kinds were typed: plan it again)")
        values["launch_kind"] = LaunchKind(values["launch_kind"])
        return cls(**values)


# (checkout, plan) -> (passed, one line): the behavioural check of a plan reusing another op's kernel
# (the planner runs no kernel; `checks.reuse_check.verify_reuse` is the one its callers pass)
ReuseVerifier = Callable[["Checkout", PortPlan], tuple[bool, str]]
