"""plan: every change of the port, decided before any edit and shown to the reviewer."""

from __future__ import annotations

from pathlib import Path

from metalport.graph.nodes._common import plan_update
from metalport.graph.records import repo_arg
from metalport.graph.state import PortState


def plan(state: PortState) -> dict:
    """Plan the port; an op outside the recipe table under `--model recipe` ends as needs-llm.

    When the plan's `.metal`/`.mm` files overlap an open run's, the run re-plans on that run's
    change and says so (Note [stacked runs] in graph/nodes/_stack.py).
    PipelineError "already native" (unless --force) and UnknownOpError propagate to the caller.
    """
    update = _plan_at(state, Path(state.get("base_root") or state["repo_root"]))
    if update.get("status") or state.get("stacked_on"):
        return update
    from metalport.graph.nodes._stack import edited_files, find_stack_base, stack_note

    import git

    root = Path(state["repo_root"])
    base_commit = git.Repo(root).commit(state["options"].get("base", "HEAD")).hexsha
    stacked = find_stack_base(root, state["run_id"], base_commit, edited_files(update["plan"], update.get("family")))
    if stacked is None:
        return update
    stacked["base_commit"] = base_commit  # where the run goes if that run is not approved (Note [rebase at approval])
    from langgraph.config import get_stream_writer

    from metalport.sandbox.base_tree import base_root

    options = {**state["options"], "base": stacked["commit"]}
    snapshot = base_root(root, state["run_id"], stacked["commit"])
    get_stream_writer()({"event": "note", "node": "plan", "message": stack_note(stacked)})
    replanned = _plan_at({**state, "options": options}, snapshot)
    return {**replanned, "options": options, "base_root": str(snapshot), "stacked_on": stacked}


def _plan_at(state: PortState, root: Path) -> dict:
    """The plan update of the run's op(s) in the tree at `root`."""
    from metalport.checks.reuse_check import verify_reuse
    from metalport.port import plan_family
    from metalport.port import LaunchKind
    from metalport.checkout import find_checkout

    checkout = find_checkout(root)
    options = state["options"]
    ops, reasons = _family_ops(checkout, state["op"], options)
    family = plan_family(checkout, ops, force=bool(options.get("force")), reasons=reasons, verify_reuse=verify_reuse)
    update: dict = {"stage": "plan", **plan_update(family)}
    port = next((m for m in family.members if m.needs_llm), family.members[0])
    if port.needs_llm and state["options"].get("model", "recipe") == "recipe":
        name = port.op
        what = f"its kernel ({port.kind})" if port.launch_kind is LaunchKind.PENDING else "its functor"
        update.update(status="needs-llm", reason=(
            f"aten::{name} is not in the recipe table: {what} needs an LLM; "
            f"rerun with --model openai:MODEL (e.g. `run-migration aten::{name} --model openai:gpt-4.1"
            f"{repo_arg(state['repo_root'])}`)"))
    return update


def _family_ops(checkout, op: str, options: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ops of the run's change and why they go together: the op alone, the ops given with it
    (`run-migration a b c`), or with `--family` every op sharing its legacy macro or helper."""
    name = op.removeprefix("aten::")
    ops = [name, *(o.removeprefix("aten::") for o in options.get("family_ops") or ())]
    reasons: tuple[str, ...] = ()
    if options.get("expand_family"):
        from metalport.port import family_of

        found, reasons = family_of(checkout, name)
        ops += list(found)
    return tuple(dict.fromkeys(ops)), reasons
