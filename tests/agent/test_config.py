"""metalport.yaml parsing: typed fields, file:line errors, flags and env fallbacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.budget_limits import Price
from metalport.config import load_config
from metalport.errors import UsageError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "metalport.yaml"
    path.write_text(text)
    return path


def test_full_config_parses(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, "provider:\n  model: m1\n  base_url: http://h/v1\n"
                                "  timeout_s: 5\nprices:\n  m1: {input_per_mtok: 2.5, output_per_mtok: 10}\n"
                                "budget:\n  max_calls: 7\nsecret_env: [VAULT]\nbuild:\n  command: make\n"))
    assert config.provider.model == "m1" and config.provider.timeout_s == 5.0
    assert config.price() == Price(2.5, 10.0) and config.budget.max_calls == 7
    assert config.secret_env == ("VAULT",) and config.other == {"build": {"command": "make"}}


@pytest.mark.parametrize(("text", "message"), [
    ("provider:\n  model: m\n  temprature: 1\n",
     ":3: unknown key 'temprature' in provider; did you mean 'temperature'?"),
    ("budgets:\n  max_calls: 1\n", ":1: unknown key 'budgets' in top level; did you mean 'budget'?"),
    ("budget:\n  max_calls: many\n", ":2: budget.max_calls must be a int; fix the value"),
    ("prices:\n  m: {input_per_mtok: 1}\n", ":2: prices.m is missing ['output_per_mtok']; add them"),
    ("provider: [1]\n", ":1: provider must be a mapping; use `key: value` lines"),
])
def test_bad_config_names_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(UsageError) as err:
        load_config(path)
    assert str(err.value) == f"{path}{message}" and err.value.exit_code == 2


def test_no_config_uses_openai_env_and_flags_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k-from-env")
    config = load_config(tmp_path / "absent.yaml")
    assert config.provider.resolved_base_url() == "http://env/v1" and config.provider.api_key() == "k-from-env"
    flagged = config.with_flags(model="m2", base_url="http://flag/v1", temperature=None)
    assert flagged.provider.model == "m2" and flagged.provider.resolved_base_url() == "http://flag/v1"
    with pytest.raises(UsageError, match="unknown provider option"):
        config.with_flags(modle="x")


def test_capabilities_of_the_endpoint_are_typed_settings(tmp_path) -> None:
    from metalport.config import load_config
    from metalport.errors import UsageError

    good = tmp_path / "good.yaml"
    good.write_text("provider:\n  structured_output: prompt\n  schema_with_tools: true\n  max_tokens: 512\n  stream: true\n")
    cap = load_config(good).provider
    assert (cap.structured_output, cap.schema_with_tools, cap.max_tokens, cap.stream) == ("prompt", True, 512, True)
    bad = tmp_path / "bad.yaml"
    bad.write_text("provider:\n  structured_output: grammar\n")
    with pytest.raises(UsageError, match=r"bad.yaml:1: provider.structured_output 'grammar' is not one of json_schema"):
        load_config(bad)
    bad.write_text("provider:\n  stream: yes please\n")
    with pytest.raises(UsageError, match=r"provider.stream must be a bool"):
        load_config(bad)
