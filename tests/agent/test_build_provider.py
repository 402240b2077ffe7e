"""A provider built from config: the env key and secret_env values never reach a prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.agent.openai_provider import build_provider
from metalport.agent.provider import FunctorRequest
from metalport.config import AgentConfig, ProviderConfig
from metalport.errors import UsageError
from tests.agent.helpers import KERNEL, make_toolbox, make_tree
from tests.llm_server import ScriptedLLM, json_reply, tool_reply


def test_retry_after_failed_conformance_sends_diagnostics_not_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUN_KEY", "key-value-abcdef123")
    monkeypatch.setenv("VAULT_PASS", "vault-value-987654")
    root = make_tree(tmp_path / "wt")
    (root / "README.txt").write_text("vault-value-987654 is the password\n")
    box, _ = make_toolbox(root)
    script = [tool_reply(("read_file", {"path": "README.txt"})),
              json_reply({"functor_source": "struct f {};", "summary": "first"}),
              tool_reply(("conformance", {})),
              json_reply({"functor_source": "struct f { /* fixed */ };", "summary": "second"})]
    with ScriptedLLM(script) as server:
        config = AgentConfig(provider=ProviderConfig(model="m", base_url=server.base_url, api_key_env="RUN_KEY"),
                             secret_env=("VAULT_PASS",))
        provider = build_provider(config, tmp_path / "run" / "transcript.jsonl")
        base = dict(op="heaviside", family="binary", dtypes=("float",), plan_summary="p",
                    kernel_file=KERNEL, functor_name="f")
        first = provider.write_functor(FunctorRequest(**base), box)
        # The conformance verdict the graph feeds back: counts and worst errors.
        second = provider.write_functor(FunctorRequest(**base, feedback="conformance: 3 of 40 failed",
                                                       diagnostics=({"file": KERNEL, "line": 5,
                                                                     "message": "max abs error 1.0 at x=0"},)),
                                        box)
    assert (first.summary, second.summary) == ("first", "second")
    assert second.usage["calls"] == 4
    sent = server.prompt_text()
    assert "conformance: 3 of 40 failed" in sent and "max abs error 1.0 at x=0" in sent
    for secret in ("key-value-abcdef123", "vault-value-987654"):
        assert secret not in sent
        assert secret not in (tmp_path / "run" / "transcript.jsonl").read_text()


def test_missing_key_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ABSENT_KEY", raising=False)
    with pytest.raises(UsageError, match=r"no API key: \$ABSENT_KEY is not set; export ABSENT_KEY="):
        build_provider(AgentConfig(provider=ProviderConfig(api_key_env="ABSENT_KEY")), None)
