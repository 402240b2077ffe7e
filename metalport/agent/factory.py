"""`make_provider`: the provider a run uses, from its `--model` string, config and run folder.

`"recipe"` gives the deterministic recipe engine; `"openai:MODEL"` gives the OpenAI provider for
MODEL on the endpoint from `metalport.yaml` (or, without one, `OPENAI_BASE_URL`/`OPENAI_API_KEY`),
writing the run's redacted transcript to `run_dir/transcript.jsonl`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from metalport.budget_limits import BudgetLimits
from metalport.agent.provider import Provider
from metalport.errors import UsageError

OPENAI_PREFIX = "openai:"
TRANSCRIPT_NAME = "transcript.jsonl"


def make_provider(model: str, *, config_path: Path | None, run_dir: Path | None,
                  budget_limits: BudgetLimits | Mapping[str, float] | None = None) -> Provider:
    """The provider named by `model` ("recipe" or "openai:MODEL").

    `budget_limits` overrides the config's `budget:` (a mapping overrides single fields; a sweep
    passes `SweepBudget.limits_for_run(...)`). Raises UsageError for an unknown model string, a
    missing key or a bad config (with file:line).
    """
    if model == "recipe":
        from metalport.agent.recipe_provider import RecipeProvider

        return RecipeProvider()
    if not model.startswith(OPENAI_PREFIX) or not model[len(OPENAI_PREFIX):].strip():
        raise UsageError(f"unknown model {model!r}", hint="use 'recipe' or 'openai:MODEL' (e.g. openai:gpt-4.1)")
    from metalport.agent.openai_provider import build_provider
    from metalport.config import load_config

    config = load_config(config_path).with_flags(model=model[len(OPENAI_PREFIX):].strip())
    limits = BudgetLimits.coerce(budget_limits, config.budget)
    transcript = Path(run_dir) / TRANSCRIPT_NAME if run_dir is not None else None
    return build_provider(config, transcript, limits)
