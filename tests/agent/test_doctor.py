"""check_endpoint lists models without spending tokens or showing the key."""

from __future__ import annotations

import pytest

from metalport.agent.doctor import check_endpoint
from metalport.config import AgentConfig, ProviderConfig
from tests.llm_server import ScriptedLLM


def test_endpoint_lists_models_and_hides_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOC_KEY", "sk-doctor-secret-123456")
    with ScriptedLLM([], models=("m-a", "m-b")) as server:
        config = AgentConfig(provider=ProviderConfig(model="m-b", base_url=server.base_url, api_key_env="DOC_KEY"))
        report = check_endpoint(config)
    assert report.ok and report.key_set and report.model_listed and report.models == ("m-a", "m-b")
    assert server.requests == [] and server.model_list_calls == 1
    assert "sk-doctor" not in "\n".join(report.lines()) and "API key $DOC_KEY: set" in report.lines()


def test_unreachable_endpoint_and_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with ScriptedLLM([]) as server:
        url = server.base_url
    report = check_endpoint(AgentConfig(provider=ProviderConfig(base_url=url, api_key_env="NO_SUCH_KEY")),
                            timeout_s=2)
    assert not report.ok and not report.key_set and report.error == "APIConnectionError"
    assert "API key $NO_SUCH_KEY: not set (export NO_SUCH_KEY before --model openai:...)" in report.lines()


def test_doctor_command_says_the_key_is_set_without_printing_it(tmp_path, monkeypatch, capsys) -> None:
    from metalport.cli import main

    key = "sk-doctor-cli-secret-987654321"
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.chdir(tmp_path)  # no ./metalport.yaml: the defaults
    with ScriptedLLM([], models=("scripted-model",)) as server:
        code = main(["doctor", "--base-url", server.base_url, "--model", "scripted-model"])
    out = capsys.readouterr()
    assert "API key $OPENAI_API_KEY: set" in out.out and key not in out.out + out.err
    assert f"endpoint {server.base_url}/: reachable" in out.out and "models: scripted-model" in out.out
    assert "model scripted-model: listed" in out.out
    assert server.requests == [] and code == 0
