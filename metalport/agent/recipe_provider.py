"""`RecipeProvider`: the deterministic "model" of `--model recipe`, implementing `Provider`.

Functors come from the recipe table; it cannot repair a failure or act on review feedback (it
raises RecipeError, and the run ends with evidence); the PR description is a template.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from metalport.agent.provider import (FixRequest, FixResult, FunctorRequest, FunctorResult, KernelCheck,
                                      KernelRequest, KernelResult, PrRequest)
from metalport.port import FunctorRecipe, recipe_table
from metalport.agent.tools import ToolBox
from metalport.errors import RecipeError

_TEMPLATES = Path(__file__).resolve().parent.parent / "port" / "templates"
NO_USAGE = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}


class RecipeProvider:
    """Answers from the functor table; `table` overrides it (tests, custom tables)."""

    def __init__(self, table: dict[str, FunctorRecipe] | None = None) -> None:
        self._table = table

    def usage(self) -> dict:
        """This process's spend: always none (no model calls)."""
        return dict(NO_USAGE)

    def write_functor(self, request: FunctorRequest, tools: ToolBox) -> FunctorResult:
        """The table's functor for `request.op`; RecipeError when the op is not in the table."""
        name = request.op.removeprefix("aten::")
        recipe = (self._table if self._table is not None else recipe_table()).get(name)
        if recipe is None:
            raise RecipeError(f"aten::{name} is not in the recipe table: its functor needs an LLM",
                              hint="rerun with --model openai:MODEL")
        return FunctorResult(functor_source=recipe.source, summary=f"{recipe.functor} from the recipe table",
                             usage=dict(NO_USAGE))

    def write_kernel(self, request: KernelRequest, tools: ToolBox, accept: KernelCheck) -> KernelResult:
        """The spec table plans its ops itself, so an op asked for here has no recipe: RecipeError."""
        raise RecipeError(f"aten::{request.op.removeprefix('aten::')} is not in the spec recipe table: its kernel "
                          f"({request.kind}) needs an LLM", hint="rerun with --model openai:MODEL")

    def fix(self, request: FixRequest, tools: ToolBox) -> FixResult:
        """Always RecipeError: a deterministic recipe cannot repair its own output."""
        what = "act on review feedback" if request.failure_stage == "review" else (
            f"repair {request.failure_stage} failures")
        raise RecipeError(f"recipe cannot {what} for {request.op}",
                          hint="rerun with --model openai:MODEL to let an LLM repair it")

    def describe_pr(self, request: PrRequest) -> str:
        """The PR body rendered from `templates/pr_body.md.j2` (strict: no undefined variable)."""
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
                                 undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
        return env.get_template("pr_body.md.j2").render(
            op=request.op, plan_summary=request.plan_summary, diff_stat=request.diff_stat,
            verdicts=request.verdicts, usage={**NO_USAGE, **request.usage}).strip() + "\n"
