"""`RecipePlan`: every mechanical step of porting one pointwise op, decided before any edit.

An op in the recipe table gets a complete plan. An op outside it gets a plan whose functor step
says it needs an LLM; `RecipePlan.needs_llm` tells the pipeline to stop there with exit 1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from metalport.port.functors import FunctorRecipe, dtypes_for, recipe_table
from metalport.port.host import HostStub, insert_stub
from metalport.port.metal import insert_functor
from metalport.checkout.layout import KERNELS_DIR, OPERATIONS_DIR
from metalport.errors import RecipeError

NEEDS_LLM = "needs an LLM (--model openai:...)"


@dataclass(frozen=True)
class RecipePlan:
    """What the recipe will do for `op`; paths are relative to the PyTorch checkout."""

    op: str
    functor_step: str  # "table" when the functor comes from the table, else NEEDS_LLM
    kernel_file: str | None = None
    functor: str | None = None
    functor_source: str | None = None
    macro: str | None = None
    dtypes: tuple[str, ...] = ()
    registrations: tuple[str, ...] = ()
    host_file: str | None = None
    host_stub: HostStub | None = None
    legacy: str | None = None  # TORCH_IMPL_FUNC / function name to remove, if any
    xfail_keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.functor_step not in ("table", NEEDS_LLM):
            raise ValueError(f"unknown functor step {self.functor_step!r}")
        if self.functor_step == "table" and not (self.kernel_file and self.host_stub):
            raise ValueError(f"table plan for {self.op} lacks its kernel file or host stub")

    @property
    def needs_llm(self) -> bool:
        return self.functor_step == NEEDS_LLM

    @property
    def register_dispatch(self) -> str | None:
        return self.host_stub.register_line if self.host_stub else None

    @property
    def allowed_paths(self) -> tuple[str, ...]:
        """The files this plan may edit, besides native_functions.yaml and common_mps.py."""
        return tuple(p for p in (self.kernel_file, self.host_file) if p)


@dataclass(frozen=True)
class StubDeclaration:
    """Where a dispatch stub is declared and the named parameters of its function type."""

    header: str  # "ATen/native/BinaryOps.h"
    params: str  # "TensorIteratorBase& iter, const Scalar& alpha"


def _name_params(raw: str) -> str:
    """Give unnamed parameters names: the first is `iter`, later ones `arg<i>`."""
    named = []
    for i, param in enumerate(p.strip() for p in raw.split(",")):
        has_name = re.search(r"[&*]\s*\w+$|\w\s+\w+$", param) is not None
        named.append(param if has_name else f"{param} {'iter' if i == 0 else f'arg{i}'}")
    return ", ".join(named)


def find_stub_declaration(stub: str, include_dir: Path) -> StubDeclaration:
    """The `ATen/native/<X>.h` under `include_dir` (an `include/` root) declaring `stub`, and the
    parameters of its function-pointer type."""
    pattern = re.compile(rf"DECLARE_DISPATCH\(\s*(\w+)\s*,\s*{re.escape(stub)}\s*\)")
    native = include_dir / "ATen" / "native"
    headers = sorted(native.glob("*.h"))
    for header in headers:
        found = pattern.search(header.read_text(encoding="utf-8", errors="replace"))
        if found is None:
            continue
        fn_type = re.compile(rf"using {found.group(1)}\s*=\s*void\s*\(\*\)\(([^)]*)\);")
        for candidate in [header, *headers]:
            typedef = fn_type.search(candidate.read_text(encoding="utf-8", errors="replace"))
            if typedef:
                return StubDeclaration(f"ATen/native/{header.name}", _name_params(typedef.group(1)))
        raise RecipeError(f"no 'using {found.group(1)} = void (*)(...)' for {stub}",
                          location=f"{header}", hint="pass the stub's parameters explicitly")
    raise RecipeError(f"no DECLARE_DISPATCH(..., {stub}) under {native}",
                      hint="declare the stub in an ATen/native header first")


def _default_include_dir() -> Path:
    from metalport.torch_facts import torch_include_dir

    return torch_include_dir()


def _default_xfail_keys(recipe: FunctorRecipe) -> tuple[str, ...]:
    # A backward op borrows its forward's OpInfo for dtypes, but the forward's xfails stay.
    return () if recipe.op.endswith("_backward") else (recipe.opinfo,)


def plan_recipe(op: str, *, legacy: str | None = None, dtypes: Iterable[str] | None = None,
                stub: StubDeclaration | None = None, xfail_keys: Iterable[str] | None = None,
                table: dict[str, FunctorRecipe] | None = None) -> RecipePlan:
    """The plan for `op`. Unset `dtypes` come from its OpInfo, an unset `stub` declaration from the
    installed torch headers; `xfail_keys` defaults to the OpInfo name."""
    recipe = (table if table is not None else recipe_table()).get(op)
    if recipe is None:
        return RecipePlan(op=op, functor_step=NEEDS_LLM, legacy=legacy,
                          xfail_keys=tuple(xfail_keys or (op,)))
    types = tuple(dtypes) if dtypes is not None else dtypes_for(recipe)
    decl = stub or find_stub_declaration(recipe.stub, _default_include_dir())
    host = HostStub(op, recipe.family.value, recipe.stub, decl.header, decl.params)
    return RecipePlan(
        op=op, functor_step="table",
        kernel_file=f"{KERNELS_DIR}/{recipe.kernel_file}",
        functor=recipe.functor, functor_source=recipe.source, macro=recipe.macro,
        dtypes=types, registrations=recipe.registrations(types),
        host_file=f"{OPERATIONS_DIR}/{recipe.host_file}", host_stub=host, legacy=legacy,
        xfail_keys=tuple(xfail_keys) if xfail_keys is not None else _default_xfail_keys(recipe),
    )


def _require_table(plan: RecipePlan) -> None:
    if plan.needs_llm:
        raise RecipeError(f"{plan.op} is not in the recipe table: its functor {NEEDS_LLM}",
                          hint="rerun with --model openai:<model>")


def edit_kernel(plan: RecipePlan, text: str | None) -> str:
    """The plan's kernel file after adding its functor and registrations (None: a new file)."""
    _require_table(plan)
    if not (plan.functor and plan.functor_source and plan.kernel_file):
        raise RecipeError(f"plan for {plan.op} has no functor", hint="build it with plan_recipe")
    return insert_functor(text, plan.functor, plan.functor_source, plan.registrations,
                          path=plan.kernel_file)


def edit_host(plan: RecipePlan, text: str | None) -> str:
    """The plan's host file after adding its stub (None: a new file)."""
    _require_table(plan)
    if not (plan.host_stub and plan.kernel_file and plan.host_file):
        raise RecipeError(f"plan for {plan.op} has no host stub", hint="build it with plan_recipe")
    kernel_basename = Path(plan.kernel_file).stem
    return insert_stub(text, plan.host_stub, kernel_basename=kernel_basename, path=plan.host_file)
