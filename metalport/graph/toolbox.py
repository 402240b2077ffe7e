"""The model's `ToolBox` for one run: `check` and `conformance` built from the contract checks and
the executor (counts and worst errors only: never held-out inputs)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from metalport.agent.tools import ToolBox
from metalport.agent.transcript import Redactor
from metalport.checkout.layout import KERNELS_DIR
from metalport.graph.context import RunContext
from metalport.graph.state import PortState
from metalport.sandbox.worktree import Worktree


_MACROS = {"unary": "REGISTER_UNARY_OP", "binary": "REGISTER_BINARY_OP",
           "alpha": "REGISTER_BINARY_ALPHA_OP", "ternary": "REGISTER_TERNARY_OP"}


def make_toolbox(ctx: RunContext, state: PortState, plan: Any, worktree: Worktree,
                 respec: Callable[[str, str], Any] | None = None) -> ToolBox:
    """A ToolBox over the run's worktree, allow-listed to the plan's paths. With `respec` (a port
    whose launch spec the model wrote), `respecify` replaces spec and kernel: `respec` plans and
    re-applies the port from them (raising SpecError/PipelineError for one it refuses) and returns
    the new plan, which the checks then judge."""
    from metalport.checks.contract.rules import check_contract
    from metalport.errors import PipelineError, SpecError

    root = worktree.path
    current = {"plan": plan}

    def check() -> dict:
        """Contract checks, then the build: `ok` and the first 20 failures."""
        plan = current["plan"]
        failures = check_contract(Path(state.get("base_root") or ctx.repo_root), root, plan)
        if not failures:
            failures = ctx.executor().build(root, plan)
        return {"ok": not failures, "failures": [f.to_dict() for f in failures[:20]],
                "total_failures": len(failures)}

    def conformance() -> dict:
        """Conformance without held-out cases, as the model may see it (counts, worst errors); a partial
        verdict (calls the host model skips) is nothing the model can fix, so it counts as ok."""
        report, failures = ctx.executor().test(root, current["plan"], held_out=False)
        return {"ok": not failures and report.status in ("pass", "partial"), "status": report.status,
                "summary": report.summary_for_model()}

    def show_op(op: str) -> dict:
        """The run's op as resolved and planned."""
        if op.removeprefix("aten::") != state["op"].removeprefix("aten::"):
            return {"ok": False, "error": f"this run is about {state['op']}, not {op!r}"}
        return {"ok": True, "resolution": state.get("resolution", {}), "plan": state.get("plan", {})}

    def show_examples(family: str) -> dict:
        """Functors of the tree registered with the family's macro."""
        macro = _MACROS.get(family)
        if macro is None:
            return {"ok": False, "error": f"unknown family {family!r}", "families": sorted(_MACROS)}
        return {"ok": True, "examples": _examples(root / KERNELS_DIR, macro)}

    def respecify(spec_yaml: str, kernel_source: str) -> dict:
        assert respec is not None
        try:
            current["plan"] = respec(spec_yaml, kernel_source)
        except (SpecError, PipelineError) as err:
            return {"ok": False, "error": f"{err.message}; {err.hint}" if err.hint else err.message}
        return {"ok": True, "allowed_paths": list(current["plan"].allowed_paths)}

    own_kernel = plan.kind != "pointwise-stub"
    return ToolBox(root, plan.allowed_paths, check=check, conformance=conformance, show_op=show_op,
                   show_examples=show_examples, show_kernels=(lambda kind, op: show_kernels(root, kind, op))
                   if own_kernel else None, respecify=respecify if respec is not None else None,
                   redactor=Redactor(secret_env=ctx.secret_env()))


def show_kernels(root: Path, kind: str, op: str | None = None) -> dict:
    """The tree's kernels of a port kind: the spec recipes of `kind` (each one's launch in a line;
    with `op`, that recipe's launch spec YAML and kernel source) and the checkout's kernels/*.metal."""
    from metalport.port import Kind
    from metalport.port import spec_recipes

    kinds = sorted(k.value for k in Kind if k is not Kind.NOT_A_CANDIDATE)
    if kind not in kinds:
        return {"ok": False, "error": f"unknown kind {kind!r}", "kinds": kinds}
    recipes = spec_recipes()
    if op is not None:
        recipe = recipes.get(op.removeprefix("aten::"))
        if recipe is None:
            return {"ok": False, "error": f"no spec recipe for {op!r}", "recipes": sorted(recipes)}
        return {"ok": True, "op": recipe.spec.op, "kind": recipe.spec.kind,
                "spec_yaml": recipe.path.read_text(encoding="utf-8"), "kernel_source": recipe.kernel_source}
    same = [r for r in recipes.values() if r.spec.kind == kind]
    listed = [{"op": r.spec.op, "kind": r.spec.kind, "grid": r.spec.geometry.grid.value,
               "inputs": [f"{i.arg} ({i.layout.value})" for i in r.spec.inputs],
               "outputs": [f"{o.name} ({o.shape_text}, {o.dtype})" for o in r.spec.outputs],
               "kernel": r.spec.kernel_name} for r in (same or recipes.values())]
    kernels = root / KERNELS_DIR
    files = sorted(f"{KERNELS_DIR}/{f.name}" for f in kernels.glob("*.metal")) if kernels.is_dir() else []
    note = "" if same else f"no spec recipe is of kind {kind!r}; all recipes are listed. "
    return {"ok": True, "recipes": listed, "kernel_files": files,
            "note": note + "show_kernels(kind, op) gives one recipe's spec YAML and kernel; read_file reads a kernel file"}


def _examples(kernels: Path, macro: str, limit: int = 5) -> list[dict]:
    """Up to `limit` functors of the tree registered with `macro`, with their source."""
    found: list[dict] = []
    for file in sorted(kernels.glob("*.metal")) if kernels.is_dir() else ():
        text = file.read_text(encoding="utf-8", errors="replace")
        for name in dict.fromkeys(re.findall(rf"{macro}\((\w+)\s*,", text)):
            body = re.search(rf"struct {name}_functor\b.*?\n}};", text, re.S)
            if body:
                found.append({"file": file.name, "functor": f"{name}_functor", "source": body.group(0)})
            if len(found) >= limit:
                return found
    return found
