"""plan: every change of the port, decided before any edit and shown to the reviewer."""

from __future__ import annotations

from pathlib import Path

from metalport.graph.records import repo_arg
from metalport.graph.state import PortState


def plan(state: PortState) -> dict:
    """Plan the port; an op outside the recipe table under `--model recipe` ends as needs-llm.

    PipelineError "already native" (unless --force) and UnknownOpError propagate to the caller.
    """
    from metalport.port.port import plan_port
    from metalport.checkout import find_checkout

    checkout = find_checkout(Path(state.get("base_root") or state["repo_root"]))
    port = plan_port(checkout, state["op"], force=bool(state["options"].get("force")))
    update: dict = {"stage": "plan", "plan": port.to_dict()}
    if port.needs_llm and state["options"].get("model", "recipe") == "recipe":
        name = state["op"].removeprefix("aten::")
        what = "its functor" if port.kind == "pointwise-stub" else f"its kernel ({port.kind})"
        update.update(status="needs-llm", reason=(
            f"aten::{name} is not in the recipe table: {what} needs an LLM; "
            f"rerun with --model openai:MODEL (e.g. `run-migration aten::{name} --model openai:gpt-4.1"
            f"{repo_arg(state['repo_root'])}`)"))
    return update
