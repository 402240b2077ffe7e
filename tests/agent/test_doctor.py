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
    port = url.rsplit(":", 1)[1].split("/")[0]
    assert not report.ok and not report.key_set and report.error == (
        f"connection refused: nothing listens on 127.0.0.1:{port}; start the model server there, or point "
        "--base-url (or provider.base_url in metalport.yaml) at the one that runs")
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


def test_doctor_without_a_key_skips_the_remote_endpoint_and_passes(tmp_path, monkeypatch, capsys) -> None:
    from metalport.cli import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    code = main(["doctor"])
    out = capsys.readouterr()
    assert "endpoint: skipped ($OPENAI_API_KEY is not set; the default --model recipe needs no model" in out.out
    assert "APIConnectionError" not in out.out + out.err and code == 0


def _probe(script: list, **provider: object):
    from metalport.agent.openai_provider import make_client
    from metalport.agent.probe import probe_capabilities

    with ScriptedLLM(script) as server:
        config = AgentConfig(provider=ProviderConfig(model="scripted-model", base_url=server.base_url, **provider))
        return probe_capabilities(make_client(config, key="sk-probe"), config), server


def test_probe_of_a_llama_server_like_endpoint() -> None:
    from tests.llm_server import text_reply

    # llama-server --jinja with a small model: the call comes as text; the schema is enforced.
    report, server = _probe([text_reply('<tool_call>\n{"name": "ping", "arguments": {"n": 1}}\n</tool_call>'),
                             text_reply('{"ok": true}')])
    assert (report.tool_calls, report.structured_output, report.schema_with_tools) == ("text", "json_schema", False)
    assert all(r["max_tokens"] <= 48 for r in server.requests) and len(server.requests) == 2
    assert "structured_output: json_schema, schema_with_tools: false" in report.lines()[-1]


def test_probe_of_an_endpoint_that_refuses_json_schema_and_one_that_ignores_it() -> None:
    from tests.agent.server_shapes import LLAMA_CPP_PYTHON_SCHEMA_500
    from tests.llm_server import text_reply, tool_reply

    report, _ = _probe([tool_reply(("ping", {"n": 1})), LLAMA_CPP_PYTHON_SCHEMA_500, text_reply('{"greeting": "hello"}')])
    assert (report.tool_calls, report.structured_output) == ("api", "json_object")
    assert any("refused `response_format` (HTTP 500" in n for n in report.notes)
    report, _ = _probe([text_reply("I cannot call tools."), text_reply("Hello"), text_reply("Hello!")])
    assert (report.tool_calls, report.structured_output) == ("none", "prompt")


def test_probe_of_an_endpoint_that_keeps_tools_beside_a_schema() -> None:
    from tests.llm_server import text_reply, tool_reply

    report, server = _probe([tool_reply(("ping", {"n": 1})), text_reply('{"ok": true}'), tool_reply(("ping", {"n": 1}))])
    assert report.schema_with_tools and "tools" in server.requests[2] and "response_format" in server.requests[2]
