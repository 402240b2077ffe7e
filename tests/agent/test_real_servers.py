"""The provider against what real servers and small open models do (shapes in `server_shapes`,
replies recorded from Qwen2.5-Coder-1.5B on llama-server in `recorded_replies`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.agent import endpoint as endpoint_module
from metalport.budget_limits import BudgetLimits
from metalport.agent.endpoint import DROPPED_RESULT, TEXT_RESULTS
from metalport.agent.provider import FixRequest, FunctorRequest
from metalport.agent.transcript import read_transcript
from metalport.errors import AgentError
from tests.agent import server_shapes as shapes
from tests.agent.helpers import KERNEL, make_provider, make_toolbox, make_tree
from tests.llm_server import Delay, ScriptedLLM, json_reply, text_reply, tool_reply

FUNCTOR = "struct heaviside_functor { template <typename T> T operator()(T x, T v) { return x; } };"
REQUEST = FunctorRequest(op="heaviside", family="binary", dtypes=("float", "half"),
                         plan_summary="heaviside.out row -> shared kernel", kernel_file=KERNEL,
                         functor_name="heaviside_functor")
FIX = FixRequest(op="heaviside", failure_stage="check",
                 diagnostics=({"file": KERNEL, "line": 7, "message": "wrong branch"},), allowed_paths=(KERNEL,))
ANSWER = {"functor_source": FUNCTOR, "summary": "step function"}
EDIT = {"path": KERNEL, "search": "::metal::copysign(a, b)", "replace": "::metal::copysign(a, b) /* fixed */"}


def _run(tmp_path: Path, script: list, what: str = "functor", notes: list[str] | None = None, **kw: object):
    root = make_tree(tmp_path / "wt")
    box, checks = make_toolbox(root)
    with ScriptedLLM(script) as server:
        provider = make_provider(server.base_url, tmp_path, **kw)
        provider.endpoint._notify = (notes.append if notes is not None else (lambda line: None))
        try:
            result = provider.write_functor(REQUEST, box) if what == "functor" else provider.fix(FIX, box)
        except AgentError as err:
            return err, server, box
        return result, server, box


def _events(tmp_path: Path, kind: str) -> list[dict]:
    return [e["data"] for e in read_transcript(tmp_path / "transcript.jsonl") if e["kind"] == kind]


@pytest.mark.parametrize("written", [
    '{"name": "propose_edit", "arguments": %s}',
    'I will fix the branch.\n```json\n{"name": "propose_edit", "arguments": %s}\n```',
    '<tool_call>\n{"name": "propose_edit", "arguments": %s}\n</tool_call>',
], ids=["bare", "fenced", "tagged"])
def test_tool_calls_written_in_the_text_are_run(tmp_path: Path, written: str) -> None:
    script = [text_reply(written % json.dumps(EDIT)), text_reply('{"name": "check", "arguments": {}}'),
              text_reply('```json\n{"name": "finish", "arguments": {"summary": "fixed the branch"}}\n```')]
    result, server, box = _run(tmp_path, script, what="fix")
    assert result.summary == "fixed the branch" and "/* fixed */" in (tmp_path / "wt" / KERNEL).read_text()
    fed_back = server.requests[1]["messages"][-1]
    assert fed_back["role"] == "user" and fed_back["content"].startswith(TEXT_RESULTS)
    assert '"ok": true' in fed_back["content"]
    forms = [e["form"] for e in _events(tmp_path, "tool_call")]
    assert forms[0] == {"bare": "bare", "fenced": "fenced", "tagged": "tagged"}[forms[0]] and len(forms) == 3


def test_a_json_answer_in_prose_and_a_fence_is_taken(tmp_path: Path) -> None:
    prose = f"Here is the functor:\n```json\n{json.dumps(ANSWER, indent=2)}\n```\nIt handles NaN."
    result, server, _ = _run(tmp_path, [text_reply(prose)])
    assert result.functor_source == FUNCTOR and len(server.requests) == 1


def test_a_reply_without_json_gets_a_closing_request_with_the_schema_and_no_tools(tmp_path: Path) -> None:
    result, server, _ = _run(tmp_path, [text_reply("I think the functor should use copysign."), json_reply(ANSWER)])
    assert result.functor_source == FUNCTOR
    first, second = server.requests
    assert "tools" in first and "response_format" not in first
    assert "tools" not in second and second["response_format"]["type"] == "json_schema"
    assert "functor_source, summary" in second["messages"][-1]["content"]


def test_a_server_that_combines_gets_tools_and_schema_together(tmp_path: Path) -> None:
    _, server, _ = _run(tmp_path, [json_reply(ANSWER)], schema_with_tools=True)
    assert "tools" in server.requests[0] and server.requests[0]["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize("mode", ["json_object", "prompt"])
def test_structured_output_capability_shapes_the_closing_request(tmp_path: Path, mode: str) -> None:
    _, server, _ = _run(tmp_path, [text_reply("thinking"), json_reply(ANSWER)], structured_output=mode)
    closing = server.requests[1]
    if mode == "json_object":
        assert closing["response_format"] == {"type": "json_object"}
    else:
        assert "response_format" not in closing and "tools" in closing


@pytest.mark.parametrize("refusal", [shapes.LLAMA_CPP_PYTHON_SCHEMA_500, shapes.LLAMA_SERVER_SCHEMA_500],
                         ids=["llama-cpp-python", "llama-server"])
def test_a_refused_schema_is_not_retried_but_asked_for_in_the_prompt(tmp_path: Path, refusal) -> None:
    notes: list[str] = []
    result, server, _ = _run(tmp_path, [text_reply("thinking"), refusal, json_reply(ANSWER)], notes=notes,
                             schema_with_tools=False)
    assert result.functor_source == FUNCTOR and len(server.requests) == 3
    assert "response_format" not in server.requests[2]
    assert any("refused `response_format`" in n for n in notes) and not any("retrying" in n for n in notes)
    assert _events(tmp_path, "capability")[0]["structured_output"] == {"from": "json_schema", "to": "prompt"}


@pytest.mark.parametrize(("refusal", "field"), [(shapes.OLLAMA_NO_TOOLS_400, "tools"),
                                                  (shapes.VLLM_TOOL_CHOICE_400, "tool_choice")])
def test_a_refused_request_field_ends_the_step_at_once(tmp_path: Path, refusal, field: str) -> None:
    err, server, _ = _run(tmp_path, [refusal, json_reply(ANSWER)])
    assert isinstance(err, AgentError) and f"refused the request field `{field}`" in str(err)
    assert len(server.requests) == 1


@pytest.mark.parametrize("full", [shapes.LLAMA_SERVER_CONTEXT_400, shapes.LLAMA_CPP_PYTHON_CONTEXT_400,
                                  shapes.VLLM_CONTEXT_400], ids=["llama-server", "llama-cpp-python", "vllm"])
def test_a_full_context_drops_the_oldest_tool_result_and_says_so(tmp_path: Path, full) -> None:
    notes: list[str] = []
    script = [tool_reply(("read_file", {"path": KERNEL})), tool_reply(("show_examples", {"family": "binary"})),
              full, json_reply(ANSWER)]
    result, server, _ = _run(tmp_path, script, notes=notes)
    assert result.functor_source == FUNCTOR
    tool_messages = [m for m in server.requests[3]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == DROPPED_RESULT and tool_messages[1]["content"] != DROPPED_RESULT
    assert any("context is full" in n for n in notes)
    assert _events(tmp_path, "context_trim")


def test_a_full_context_with_nothing_to_drop_is_a_named_error(tmp_path: Path) -> None:
    err, server, _ = _run(tmp_path, [shapes.VLLM_CONTEXT_400])
    assert isinstance(err, AgentError) and err.message.startswith("context-length:") and len(server.requests) == 1


def test_a_timeout_is_reported_as_a_timeout(tmp_path: Path) -> None:
    err, server, _ = _run(tmp_path, [Delay(1.5, json_reply(ANSWER))] * 3, timeout_s=0.4)
    assert isinstance(err, AgentError) and err.message.startswith("timeout: the endpoint sent no reply within 0.4 s")
    assert "provider.max_tokens" in str(err) and len(server.requests) == 2


@pytest.mark.parametrize(("busy", "wait"), [(shapes.RATE_LIMIT_429, 3.0), (shapes.LLAMA_SERVER_LOADING_503, 2.0)])
def test_retry_after_is_honoured(tmp_path: Path, busy, wait: float) -> None:
    slept: list[float] = []
    root = make_tree(tmp_path / "wt")
    box, _ = make_toolbox(root)
    with ScriptedLLM([busy, json_reply(ANSWER)]) as server:
        provider = make_provider(server.base_url, tmp_path)
        provider.endpoint._sleep = slept.append
        provider.endpoint._notify = lambda line: None
        assert provider.write_functor(REQUEST, box).functor_source == FUNCTOR
    assert slept == [wait]


def test_max_tokens_follows_what_the_budget_has_left(tmp_path: Path) -> None:
    script = [tool_reply(("check", {}), completion_tokens=900), json_reply(ANSWER)]
    _, server, _ = _run(tmp_path, script, limits=BudgetLimits(max_output_tokens=1000), max_tokens=512)
    assert [r["max_tokens"] for r in server.requests] == [512, 100]


def test_a_reply_cut_at_max_tokens_is_told_so(tmp_path: Path) -> None:
    cut = text_reply('{"functor_source": "struct heaviside_functor {', finish_reason="length")
    _, server, _ = _run(tmp_path, [cut, json_reply(ANSWER)])
    assert "cut off at max_tokens=2048" in server.requests[1]["messages"][-1]["content"]


def test_streaming_assembles_text_and_tool_calls_and_shows_progress(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(endpoint_module, "PROGRESS_EVERY_S", 0.0)
    notes: list[str] = []
    script = [tool_reply(("read_file", {"path": KERNEL, "start": 1, "end": 3}), completion_tokens=11),
              json_reply(ANSWER, completion_tokens=33)]
    result, server, _ = _run(tmp_path, script, notes=notes, stream=True)
    assert result.functor_source == FUNCTOR and result.usage["output_tokens"] == 44
    assert all(r["stream"] is True for r in server.requests)
    assert json.loads(server.requests[1]["messages"][-1]["content"])["ok"] is True
    assert any(n.startswith("model writing:") for n in notes)


def test_an_op_with_two_outputs_is_refused_with_its_reason_before_any_model_call(tmp_path: Path) -> None:
    from metalport.errors import PipelineError
    from metalport.graph.runs import RunOptions, start_run
    from tests.real_tree import overlay_real_tree

    repo = overlay_real_tree(tmp_path / "ws", writable=True).root
    with ScriptedLLM([]) as server:
        config = tmp_path / "metalport.yaml"
        config.write_text(f"provider:\n  base_url: {server.base_url}\n")
        try:
            record = start_run(repo, "aten::frexp", RunOptions(model="openai:scripted-model", executor="emulated",
                                                              config_path=str(config), no_input=True))
            reason = f"{record.status}: {record.reason}"
        except PipelineError as err:
            reason = str(err)
    assert "aten::frexp writes 2 tensors (mantissa, exponent)" in reason and server.requests == []
