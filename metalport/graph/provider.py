"""The model provider a run's options name, with the run's budget and metalport.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from metalport.errors import UsageError

if TYPE_CHECKING:  # the agent package costs a tenth of a second to import; a model check needs none of it
    from metalport.agent.provider import Provider
    from metalport.graph.records import RunOptions

MODEL_HINT = "use --model recipe or --model openai:MODEL"


def check_model(model: str) -> None:
    """UsageError unless `model` is `recipe` or `openai:MODEL`."""
    if model == "recipe":
        return
    if not model.startswith("openai:") or not model.removeprefix("openai:").strip():
        raise UsageError(f"unknown model {model!r}", hint=MODEL_HINT)


def run_provider(options: RunOptions, root: Path, directory: Path) -> Provider:
    """The provider `options.model` names, with the run's budget (wall time capped by the option)."""
    from metalport.agent.factory import make_provider

    check_model(options.model)
    config_path = run_config_path(options, root)
    budget = dict(options.budget or {})
    budget["max_wall_s"] = min(float(budget.get("max_wall_s") or options.wall_time_s), options.wall_time_s)
    return make_provider(options.model, config_path=config_path, run_dir=directory, budget_limits=budget)


def run_config_path(options: RunOptions, root: Path) -> Path:
    """The run's metalport.yaml: --config, else the repository's own."""
    return Path(options.config_path) if options.config_path else root / "metalport.yaml"
