"""`metalport doctor`: compiler choice and endpoint check, as a user sees them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from metalport.cli import main
from tests.llm_server import ScriptedLLM


def test_doctor_names_the_compiler_and_lists_the_endpoints_models_without_printing_the_key(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-doctor-secret-123")
    monkeypatch.delenv("METALPORT_CXX", raising=False)
    with ScriptedLLM([], models=("local-coder",)) as server:
        code = main(["doctor", "--base-url", server.base_url, "--model", "local-coder"])
        requests = list(server.requests)
    out = capsys.readouterr().out
    assert code == 0
    compiler = next(line for line in out.splitlines() if line.startswith("compiler: "))
    assert "none" not in compiler
    assert "reachable" in out and "local-coder" in out and "API key $OPENAI_API_KEY: set" in out
    assert "sk-doctor-secret-123" not in out
    assert requests == []  # no chat request: no tokens spent


def test_doctor_exits_1_when_the_endpoint_is_unreachable() -> None:
    proc = subprocess.run([sys.executable, "-m", "metalport", "doctor", "--base-url", "http://127.0.0.1:9/v1"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "unreachable" in proc.stdout
