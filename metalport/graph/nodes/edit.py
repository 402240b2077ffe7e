"""edit: apply the plan in the worktree, or let the provider repair a failure or act on feedback."""

from __future__ import annotations

import dataclasses
from typing import Any

from langgraph.runtime import Runtime

from metalport.agent.provider import FixRequest, FunctorRequest, KernelRequest
from metalport.port import LaunchKind, PortPlan, TRANSLATED
from metalport.errors import AgentError, BudgetExhausted, PipelineError, RecipeError, SpecError
from metalport.failure import Failure
from metalport.graph.context import RunContext
from metalport.graph.nodes._common import first_failure, load_family, load_plan, load_worktree, plan_update
from metalport.graph.state import PortState
from metalport.sandbox.worktree import Worktree, reset_worktree


def edit(state: PortState, runtime: Runtime[RunContext]) -> dict:
    """One edit attempt; returns attempts, failures and, when the run cannot go on, its end status.

    First attempt: reset the worktree to its base and apply the plan (so a re-run after a crash
    starts clean); a recipe anchor miss becomes an `edit` failure. Later attempts call
    `provider.fix` with the failures or the reviewer's feedback; a provider that cannot (the recipe
    model) ends the run: failed, or rejected after a rejection.
    """
    ctx, port, worktree = runtime.context, load_plan(state), load_worktree(state)
    attempts = state.get("attempts", 0) + 1
    update: dict = {"stage": "edit", "attempts": attempts, "decision": None}
    rejected = state.get("decision") == "reject"
    failures = state.get("failures") or []
    try:
        if rejected or failures:
            from metalport.graph.toolbox import make_toolbox

            respec = _Respec(ctx, state, worktree) if _model_spec(port) else None
            ctx.provider.fix(_fix_request(state, port, rejected), make_toolbox(ctx, state, port, worktree, respec))
            if respec is not None and respec.replanned is not None:
                update.update(plan_update(load_family(state).with_member(respec.replanned)))
        else:
            family = load_family(state)
            planned = _apply_fresh(ctx, state, family, worktree)
            if planned != family:
                update.update(plan_update(planned))
    except BudgetExhausted as err:
        return {**update, "status": "budget-exhausted", "reason": str(err), "usage": ctx.total_usage(err.usage)}
    except PipelineError as err:  # a model's spec that the deterministic plan cannot place
        return {**update, "status": "failed", "reason": str(err), "usage": ctx.total_usage(ctx.provider.usage())}
    except (RecipeError, AgentError) as err:
        update["usage"] = ctx.total_usage(ctx.provider.usage())
        if rejected:
            return {**update, "status": "rejected", "reason": (
                f"rejected by the reviewer: {state.get('feedback') or '(no feedback)'}; "
                f"the {state['options'].get('model', 'recipe')} model cannot act on feedback ({err})")}
        if failures:
            return {**update, "status": "failed",
                    "reason": f"{state.get('failure_stage', 'check')} failed: {first_failure(failures)}; {err}"}
        if isinstance(err, AgentError):
            return {**update, "status": "failed", "reason": str(err)}
        return {**update, "failures": [Failure("edit", err.location, None, None, err.message).to_dict()],
                "failure_stage": "edit"}
    return {**update, "failures": [], "failure_stage": "", "usage": ctx.total_usage(ctx.provider.usage())}


def _apply_fresh(ctx: RunContext, state: PortState, family: Any, worktree: Worktree) -> Any:
    """Apply every member's plan in order in a clean worktree (port/plan/family.py; a family of one is
    one op's port); returns the family applied (a model-written spec port's plan replaces a kernel
    plan that had none)."""
    reset_worktree(worktree.path)
    applied = []
    for member in family.members:  # Note [family members a model writes]: the model, per member
        member_state = {**state, "op": f"aten::{member.op}"} if family.several else state
        applied.append(_apply_member(ctx, member_state, member, worktree))
    return dataclasses.replace(family, members=tuple(applied))


def _apply_member(ctx: RunContext, state: PortState, port: PortPlan, worktree: Worktree) -> PortPlan:
    """Apply one member's plan on the worktree its predecessors left; returns the plan applied."""
    from metalport.port import apply_port

    if port.launch_kind is LaunchKind.PENDING:  # a kernel port no recipe covers: the model writes kernel and launch
        port = _model_spec_plan(ctx, state, port, worktree)
        apply_port(port, worktree.path, secret_env=ctx.secret_env())
        return port
    functor_source = None
    # The recipe model is asked too (its table is the source of truth, and can be overridden);
    # an LLM is asked only when the table has no functor for the op. A spec recipe's plan carries
    # its kernel and launch spec already.
    if port.launch_kind is LaunchKind.ELEMENTWISE and port.reused_kernel is None and (
            (state["options"].get("model", "recipe") == "recipe" and port.functor_step != TRANSLATED)
            or port.needs_llm or not port.functor_source):
        from metalport.graph.toolbox import make_toolbox

        answer = ctx.provider.write_functor(_functor_request(state, port), make_toolbox(ctx, state, port, worktree))
        functor_source = answer.functor_source
    apply_port(port, worktree.path, functor_source=functor_source, secret_env=ctx.secret_env())
    return port


def _spec_planner(state: PortState) -> tuple[Any, tuple[tuple[str, str], ...]]:
    """(plan_with(spec_text, kernel_source) -> PortPlan, the op's entry schemas) for a model's spec:
    `model_spec_recipe`, then planned as a spec recipe; SpecError/PipelineError for a refusal."""
    from pathlib import Path

    from metalport.checkout import find_checkout
    from metalport.port import resolve_op
    from metalport.port import plan_resolved
    from metalport.port import model_spec_recipe

    checkout = find_checkout(Path(state.get("base_root") or state["repo_root"]))
    res = resolve_op(checkout, state["op"])
    schemas = {e.full_name: e.func for e in res.entries}

    def plan_with(spec_text: str, kernel_source: str) -> PortPlan:
        return plan_resolved(checkout, res, spec_recipe=model_spec_recipe(res.op, schemas, spec_text, kernel_source))

    return plan_with, tuple(schemas.items())


def _model_spec(port: PortPlan) -> bool:
    """Whether the port's launch spec was written by the model (no spec recipe is the op's)."""
    from metalport.port import spec_recipes

    return port.launch_kind.by_spec and (port.spec or {}).get("op") not in spec_recipes()


class _Respec:
    """Note [model spec repair]: the fix loop's `respecify` for a port whose spec the model wrote:
    the new spec and kernel are judged as a first answer is (`_spec_planner`), then the worktree
    is reset and the port applied from them; `replanned` holds the plan the run goes on with."""

    def __init__(self, ctx: RunContext, state: PortState, worktree: Worktree) -> None:
        self.ctx, self.worktree = ctx, worktree
        self.plan_with, _ = _spec_planner(state)
        self.replanned: PortPlan | None = None

    def __call__(self, spec_text: str, kernel_source: str) -> PortPlan:
        from metalport.port import apply_port

        planned = self.plan_with(spec_text, kernel_source)
        reset_worktree(self.worktree.path)
        apply_port(planned, self.worktree.path, secret_env=self.ctx.secret_env())
        self.replanned = planned
        return planned


def _model_spec_plan(ctx: RunContext, state: PortState, port: PortPlan, worktree: Worktree) -> PortPlan:
    """Note [model kernels]: an op whose port writes its own kernel and that no spec recipe covers
    gets its kernel and launch spec from the model. An answer is accepted only when it passes
    `model_spec_recipe` and plans as a spec recipe (`plan_resolved`); otherwise the one-line
    SpecError/PipelineError goes back to the model. The same registry row, host code, allow-list,
    contract, build and conformance as for a recipe then judge it."""
    from metalport.graph.toolbox import make_toolbox

    plan_with, schema_items = _spec_planner(state)

    def accept(spec_text: str, kernel_source: str) -> str | None:
        try:
            plan_with(spec_text, kernel_source)
        except (SpecError, PipelineError) as err:
            return f"{err.message}; {err.hint}" if err.hint else err.message  # no location: paths stay ours
        return None

    request = KernelRequest(op=state["op"], kind=port.kind, kind_reason=port.kind_reason or "",
                            schemas=schema_items, plan_summary=_plan_summary(port),
                            feedback=state.get("feedback") or "")
    answer = ctx.provider.write_kernel(request, make_toolbox(ctx, state, port, worktree), accept)
    return plan_with(answer.spec_text, answer.kernel_source)


def _plan_summary(port: PortPlan) -> str:
    data = port.to_dict()
    keys = ("op", "family", "kind", "kernel_file", "functor", "dtypes", "host_file", "register_dispatch", "legacy",
            "xfail_keys", "migrate")
    if port.params:  # Note [params route]
        keys = (*keys, "params_type", "registrations")
    return "\n".join(f"{k}: {data.get(k)}" for k in keys)


def _functor_request(state: PortState, port: PortPlan) -> FunctorRequest:
    return FunctorRequest(op=state["op"], family=port.host_family or port.family, dtypes=port.dtypes,
                          plan_summary=_plan_summary(port), kernel_file=port.kernel_file or "",
                          functor_name=port.functor or "", feedback=state.get("feedback") or "",
                          params_type=port.params_type or "",
                          params_fields=tuple(f"{'float' if opmath else 'T'} {name}" for name, _, opmath, _ in port.params))


def _fix_request(state: PortState, port: PortPlan, rejected: bool) -> FixRequest:
    if rejected:
        diagnostics = (Failure("review", None, None, None, state.get("feedback") or "").to_dict(),)
        stage = "review"
    else:
        diagnostics = tuple(_for_model(f) for f in state.get("failures") or [])
        stage = state.get("failure_stage") or "check"
    return FixRequest(op=state["op"], failure_stage=stage, diagnostics=diagnostics,
                      allowed_paths=port.allowed_paths, plan_summary=_plan_summary(port))


def _for_model(failure: dict) -> dict:
    # Held-out cases stay secret from the model: it sees that they failed, not their inputs.
    if failure.get("kind") == "held-out":
        return {**failure, "message": "held-out conformance cases failed (inputs withheld)"}
    return failure
