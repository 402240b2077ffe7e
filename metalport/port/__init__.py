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

# name -> module that defines it
_FACE: dict[str, str] = {
    # plan: the planner, the plan, families
    "plan_port": "metalport.port.plan.planner", "plan_resolved": "metalport.port.plan.planner",
    "ReuseVerifier": "metalport.port.plan.model", "launch_in_tree": "metalport.port.plan.planner",
    "PortPlan": "metalport.port.plan.model", "RowChange": "metalport.port.plan.model",
    "NATIVE_FUNCTIONS": "metalport.port.plan.model", "COMMON_MPS": "metalport.port.plan.model",
    "NEEDS_LLM": "metalport.port.plan.model", "TRANSLATED": "metalport.port.plan.model",
    "LaunchKind": "metalport.port.plan.launch", "ElementwiseLaunch": "metalport.port.plan.launch",
    "FamilyPlan": "metalport.port.plan.family", "plan_family": "metalport.port.plan.family",
    "family_of": "metalport.port.plan.family", "describe_family": "metalport.port.plan.family",
    "written_functor": "metalport.port.plan.family", "placeholder_functor": "metalport.port.plan.family",
    "routed_entry": "metalport.port.plan.rows",
    "FunctorRecipe": "metalport.port.plan.functors", "HostTemplate": "metalport.port.plan.functors",
    "recipe_table": "metalport.port.plan.functors", "dtypes_for": "metalport.port.plan.functors",
    "METAL_TYPES": "metalport.port.plan.functors",
    # tree: what the tree holds
    "resolve_op": "metalport.port.tree.resolve", "Resolution": "metalport.port.tree.resolve",
    "host_line": "metalport.port.tree.resolve", "mps_only_lines": "metalport.port.tree.resolve",
    "Status": "metalport.port.tree.op_facts", "Family": "metalport.port.tree.op_facts",
    "OpFacts": "metalport.port.tree.op_facts", "FactsContext": "metalport.port.tree.op_facts",
    "facts_context": "metalport.port.tree.op_facts", "read_op": "metalport.port.tree.op_facts",
    "op_facts": "metalport.port.tree.op_facts",
    "Kind": "metalport.port.tree.kinds", "Classification": "metalport.port.tree.kinds",
    "Porter": "metalport.port.tree.kinds", "PorterVerdict": "metalport.port.tree.kinds",
    "porter_for": "metalport.port.tree.kinds", "tensor_outputs": "metalport.port.tree.kinds",
    "operand_mismatch": "metalport.port.tree.shape",
    "scratch": "metalport.port.tree.scratch", "scratch_git": "metalport.port.tree.scratch:git",
    # write: every edit
    "apply_port": "metalport.port.write.apply", "write_host": "metalport.port.write.hostgen",
    "has_legacy": "metalport.port.write.host", "skip_to_close": "metalport.port.write.host",
    "HostStub": "metalport.port.write.host", "insert_stub": "metalport.port.write.host",
    "remove_legacy": "metalport.port.write.host", "insert_functor": "metalport.port.write.metal",
    "XFAIL_LIST_NAME": "metalport.port.write.xfail", "XfailRemoval": "metalport.port.write.xfail",
    "find_xfails": "metalport.port.write.xfail", "remove_xfails": "metalport.port.write.xfail",
    "MODULES_FILE": "metalport.port.write.decorators", "OPINFO_FILES": "metalport.port.write.decorators",
    "find_decorators": "metalport.port.write.decorators", "module_failures": "metalport.port.write.decorators",
    "narrow_decorators": "metalport.port.write.decorators",
    # spec: the launch spec model
    "LaunchSpec": "metalport.port.spec.model", "load_spec": "metalport.port.spec.model",
    "METAL_DTYPES": "metalport.port.spec.model", "Grid": "metalport.port.spec.model",
    "Layout": "metalport.port.spec.model", "OutputSpec": "metalport.port.spec.model",
    "OutShape": "metalport.port.spec.model", "ParamField": "metalport.port.spec.model",
    "check_holds": "metalport.port.spec.model", "check_message": "metalport.port.spec.model",
    "dims_exprs": "metalport.port.spec.model", "eval_threads": "metalport.port.spec.model",
    "host_value": "metalport.port.spec.model", "is_expression": "metalport.port.spec.model",
    "ExpressionError": "metalport.port.spec.expr",
    "spec_recipes": "metalport.port.spec.recipes", "recipe_ops": "metalport.port.spec.recipes",
    "model_spec_recipe": "metalport.port.spec.recipes", "instantiates": "metalport.port.spec.recipes",
    # translate: the CPU-lambda porter
    "translate_stub": "metalport.port.translate", "foreach_recipe": "metalport.port.translate.foreach",
}

__all__ = sorted(_FACE)


def __getattr__(name: str) -> Any:
    where = _FACE.get(name)
    if where is None:
        raise AttributeError(f"module 'metalport.port' has no attribute {name!r}")
    module, _, attribute = where.partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return __all__
