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


def _doctor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metalport", "doctor", *args], capture_output=True, text=True,
                          timeout=60)


def test_a_closed_port_names_the_cause_and_the_fix() -> None:
    proc = _doctor("--base-url", "http://127.0.0.1:9/v1")
    assert proc.returncode == 1 and "endpoint http://127.0.0.1:9/v1/: unreachable" in proc.stdout
    assert ("error: connection refused: nothing listens on 127.0.0.1:9; start the model server there, or point "
            "--base-url (or provider.base_url in metalport.yaml) at the one that runs") in proc.stdout.splitlines()
    assert "APIConnectionError" not in proc.stdout


def test_a_404_is_a_server_that_answered_not_an_unreachable_one() -> None:
    with ScriptedLLM([]) as server:
        root = server.base_url.removesuffix("/v1")  # the path without /v1: the server answers 404
        proc = _doctor("--base-url", root + "/api")
    assert proc.returncode == 1 and "unreachable" not in proc.stdout
    assert f"endpoint {root}/api/: reachable, but it failed the check" in proc.stdout
    assert (f"error: HTTP 404 on GET {root}/api/models: a server answers, but serves no model list there; an "
            "OpenAI-compatible base URL usually ends in /v1 (e.g. http://127.0.0.1:8080/v1)") in proc.stdout


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/v1", "http://:80/v1", "http://host:port/v1"])
def test_a_base_url_that_is_not_a_url_is_one_line(url: str) -> None:
    proc = _doctor("--base-url", url)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr == (
        f"metalport: error: --base-url {url!r} is not an http(s) URL; write it as http://HOST:PORT/v1 "
        "(e.g. http://127.0.0.1:8080/v1)\n")
