"""The deterministic port of one op (or a family of ops) to a native Metal kernel: no model here.

Folders are stages or models (Note [one port model] in `port/plan/launch.py`):

- `tree/`: what the tree holds for an op before planning (resolution, status and family, port kind,
  existing kernels, legacy code, the op's shape);
- `plan/`: the planner (the one driver; the launch kind is decided there and nowhere else), the
  plan, families, registry rows, the params route, the functor recipe table;
- `write/`: every edit a plan makes (`apply_port`), text in and text out;
- `spec/`: the launch spec model and the spec recipe table;
- `translate/`: the translate porter (a CPU kernel's scalar lambda as a functor).

This module is the port's face: code outside `port/` imports from here, never from the modules
behind it (`tests/test_layers.py` says so). Names resolve on first use, so importing the face
costs nothing until a name is used (the CLI stays fast).
"""

from __future__ import annotations

import importlib
from typing import Any

# module behind the face (under `metalport.port`, `:attribute` when the face renames it) -> the names it gives
_MODULES: dict[str, tuple[str, ...]] = {
    # plan: the planner, the plan, families
    "plan.planner": ("plan_port", "plan_resolved", "launch_in_tree"),
    "plan.model": ("ReuseVerifier", "PortPlan", "RowChange", "NATIVE_FUNCTIONS", "COMMON_MPS", "NEEDS_LLM",
                   "TRANSLATED"),
    "plan.launch": ("LaunchKind", "ElementwiseLaunch"),
    "plan.family": ("FamilyPlan", "plan_family", "family_of", "describe_family", "written_functor",
                    "placeholder_functor"),
    "plan.rows": ("routed_entry",),
    "plan.functors": ("FunctorRecipe", "HostTemplate", "recipe_table", "dtypes_for", "METAL_TYPES"),
    # tree: what the tree holds
    "tree.resolve": ("resolve_op", "Resolution", "host_line", "mps_only_lines"),
    "tree.op_facts": ("Status", "Family", "OpFacts", "FactsContext", "facts_context", "read_op", "op_facts"),
    "tree.kinds": ("Kind", "Classification", "Porter", "PorterVerdict", "porter_for", "tensor_outputs"),
    "tree.shape": ("operand_mismatch",),
    "tree.scratch": ("scratch",), "tree.scratch:git": ("scratch_git",),
    # write: every edit
    "write.apply": ("apply_port",), "write.hostgen": ("write_host",),
    "write.host": ("has_legacy", "skip_to_close", "HostStub", "insert_stub", "remove_legacy"),
    "write.metal": ("insert_functor",),
    "write.xfail": ("XFAIL_LIST_NAME", "XfailRemoval", "find_xfails", "remove_xfails"),
    "write.decorators": ("MODULES_FILE", "OPINFO_FILES", "find_decorators", "module_failures", "narrow_decorators"),
    # spec: the launch spec model
    "spec.model": ("LaunchSpec", "load_spec", "METAL_DTYPES", "Grid", "Layout", "OutputSpec", "OutShape", "ParamField",
                   "check_holds", "check_message", "dims_exprs", "eval_threads", "host_value", "is_expression"),
    "spec.expr": ("ExpressionError",),
    "spec.recipes": ("spec_recipes", "recipe_ops", "model_spec_recipe", "instantiates"),
    # translate: the CPU-lambda porter
    "translate": ("translate_stub",), "translate.foreach": ("foreach_recipe",),
}
_FACE = {name: where for where, names in _MODULES.items() for name in names}  # name -> where it is defined

__all__ = sorted(_FACE)


def __getattr__(name: str) -> Any:
    where = _FACE.get(name)
    if where is None:
        raise AttributeError(f"module 'metalport.port' has no attribute {name!r}")
    module, _, attribute = where.partition(":")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute or name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return __all__
