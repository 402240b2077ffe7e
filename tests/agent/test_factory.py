"""make_provider: model strings, config and env, transcript in the run folder, budgets carried on resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.budget_limits import BudgetLimits
from metalport.agent.factory import make_provider
from metalport.agent.openai_provider import OpenAIProvider
from metalport.agent.provider import FunctorRequest
from metalport.agent.transcript import read_transcript
from metalport.errors import BudgetExhausted, UsageError
from tests.agent.helpers import KERNEL, make_toolbox, make_tree
from tests.llm_server import ScriptedLLM, json_reply, tool_reply

KEY = "sk-factory-key-0123456789"
REQUEST = FunctorRequest(op="heaviside", family="binary", dtypes=("float",), plan_summary="p",
                         kernel_file=KERNEL, functor_name="heaviside_functor")
ANSWER = {"functor_source": "struct heaviside_functor {};", "summary": "s"}


@pytest.mark.parametrize("model", ["gpt", "openai:", "openai:  ", "anthropic:claude"])
def test_unknown_model_strings_are_usage_errors(tmp_path: Path, model: str) -> None:
    with pytest.raises(UsageError, match="unknown model .*; use 'recipe' or 'openai:MODEL'") as err:
        make_provider(model, config_path=None, run_dir=tmp_path)
    assert err.value.exit_code == 2


def test_openai_model_from_env_alone_writes_a_redacted_transcript(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    root = make_tree(tmp_path / "wt")
    (root / "README.txt").write_text(f"the key is {KEY}\n")
    box, _ = make_toolbox(root)
    with ScriptedLLM([tool_reply(("read_file", {"path": "README.txt"})), json_reply(ANSWER)]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        provider = make_provider("openai:scripted-model", config_path=tmp_path / "absent.yaml",
                                 run_dir=tmp_path / "run")
        assert isinstance(provider, OpenAIProvider)
        result = provider.write_functor(REQUEST, box)
    assert result.functor_source == ANSWER["functor_source"]
    assert [r["model"] for r in server.requests] == ["scripted-model"] * 2
    assert KEY not in server.prompt_text() and "[REDACTED]" in server.prompt_text()
    text = (tmp_path / "run" / "transcript.jsonl").read_text()
    assert KEY not in text
    last = read_transcript(tmp_path / "run" / "transcript.jsonl")[-1]
    assert last["kind"] == "usage" and last["data"]["calls"] == 2
    assert provider.usage()["calls"] == 2


def test_config_file_wins_over_env_and_model_flag_over_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LLM_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # unused: the file names the server
    with ScriptedLLM([json_reply(ANSWER)]) as server:
        config = tmp_path / "metalport.yaml"
        config.write_text(f"provider:\n  model: from-config\n  base_url: {server.base_url}\n"
                          "  api_key_env: MY_LLM_KEY\n  temperature: 0.25\n")
        box, _ = make_toolbox(make_tree(tmp_path / "wt"))
        make_provider("openai:from-flag", config_path=config, run_dir=tmp_path / "run").write_functor(REQUEST, box)
    assert server.requests[0]["model"] == "from-flag" and server.requests[0]["temperature"] == 0.25


def test_missing_key_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UsageError, match=r"no API key: \$OPENAI_API_KEY is not set"):
        make_provider("openai:m", config_path=None, run_dir=tmp_path)


def test_budget_limits_override_config_and_carry_over_a_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    run = tmp_path / "run"
    box, _ = make_toolbox(make_tree(tmp_path / "wt"))
    with ScriptedLLM([tool_reply(("show_op", {"op": "heaviside"})), json_reply(ANSWER),
                      tool_reply(("show_op", {"op": "heaviside"}))] * 2) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        first = make_provider("openai:m", config_path=None, run_dir=run, budget_limits={"max_calls": 3})
        assert first.write_functor(REQUEST, box).usage["calls"] == 2
        resumed = make_provider("openai:m", config_path=None, run_dir=run, budget_limits=BudgetLimits(max_calls=3))
        assert resumed.usage()["calls"] == 0 and resumed.budget.total_usage()["calls"] == 2
        with pytest.raises(BudgetExhausted, match="calls 3 reached the limit 3") as err:
            resumed.write_functor(REQUEST, box)
    # The error carries this process's usage; the graph adds the earlier processes' (RunContext.usage_base).
    assert err.value.usage["calls"] == 1 and err.value.usage["input_tokens"] == 100
    with pytest.raises(UsageError, match=r"unknown budget limit\(s\) \['max_call'\]"):
        make_provider("openai:m", config_path=None, run_dir=run, budget_limits={"max_call": 3})


def test_recipe_model_is_the_deterministic_provider(tmp_path: Path) -> None:
    from metalport.agent.recipe_provider import RecipeProvider
    from metalport.errors import RecipeError

    provider = make_provider("recipe", config_path=None, run_dir=tmp_path)
    assert isinstance(provider, RecipeProvider) and provider.usage()["calls"] == 0
    box, _ = make_toolbox(make_tree(tmp_path / "wt"))
    assert "struct heaviside_functor" in provider.write_functor(REQUEST, box).functor_source
    with pytest.raises(RecipeError, match="is not in the recipe table"):
        provider.write_functor(FunctorRequest(op="hypot", family="binary", dtypes=("float",), plan_summary="p",
                                              kernel_file=KERNEL, functor_name="hypot_functor"), box)
    assert not (tmp_path / "transcript.jsonl").exists()
