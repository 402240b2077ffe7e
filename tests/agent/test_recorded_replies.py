"""Replies recorded once from the real model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama-server
--jinja, our own prompts and tool specs: `tests.agent.real_model.record_replies`), replayed through
the scripted server: what a real small model writes is read as it is written."""

from __future__ import annotations

import json
from pathlib import Path

from metalport.agent.endpoint import TEXT_RESULTS
from metalport.agent.provider import FixRequest, FunctorRequest
from metalport.agent.transcript import read_transcript
from tests.agent.helpers import make_provider, make_toolbox, make_tree
from tests.agent.real_model import RECORDED
from tests.llm_server import ScriptedLLM, text_reply

REPLIES = {name: r["body"] for name, r in json.loads(RECORDED.read_text())["replies"].items()}
KERNEL = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
REQUEST = FunctorRequest(op="aten::special_airy_ai", family="unary", dtypes=("float", "half"),
                         plan_summary="special_airy_ai -> UnaryKernel.metal", kernel_file=KERNEL,
                         functor_name="special_airy_ai_functor")


def _tree(tmp_path: Path) -> Path:
    root = make_tree(tmp_path / "wt")
    (root / KERNEL).write_text("\n".join(f"// line {n}" for n in range(1, 40)) + "\n")
    return root


def test_the_recordings_are_what_the_issue_describes() -> None:
    # No OpenAI tool_calls: the call is fenced JSON in the content; answers come fenced or bare.
    assert all("tool_calls" not in r["choices"][0]["message"] for r in REPLIES.values())
    assert REPLIES["fix_with_tools"]["choices"][0]["message"]["content"].startswith("```json\n{\n  \"name\": \"read_file\"")
    assert REPLIES["functor_with_tools"]["choices"][0]["message"]["content"].startswith("```json\n{\n  \"functor_source\"")


def test_a_recorded_fenced_tool_call_is_run_and_its_result_fed_back(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    box, _ = make_toolbox(root, allowed=(KERNEL,))
    fix = FixRequest(op="aten::special_airy_ai", failure_stage="test", allowed_paths=(KERNEL,),
                     diagnostics=({"file": KERNEL, "line": 12, "message": "got nan"},))
    script = [REPLIES["fix_with_tools"], text_reply('{"name": "finish", "arguments": {"summary": "nothing to fix"}}'),
              text_reply("I cannot fix this.")] * 2
    with ScriptedLLM(script) as server:
        provider = make_provider(server.base_url, tmp_path, max_repeats=2)
        try:
            provider.fix(fix, box)
        except Exception as err:  # noqa: BLE001 - the repeat bound ends it; what matters is below
            assert type(err).__name__ == "AgentError"
    calls = [e["data"] for e in read_transcript(tmp_path / "transcript.jsonl") if e["kind"] == "tool_call"]
    assert calls[0]["name"] == "read_file" and calls[0]["form"] == "fenced" and calls[0]["result"]["ok"]
    assert "12: // line 12" in calls[0]["result"]["text"]
    fed = server.requests[1]["messages"][-1]
    assert fed["role"] == "user" and fed["content"].startswith(TEXT_RESULTS) and "// line 12" in fed["content"]
    assert calls[1]["name"] == "finish" and "finish refused" in calls[1]["result"]["error"]
    assert provider.usage()["output_tokens"] >= REPLIES["fix_with_tools"]["usage"]["completion_tokens"]


def test_recorded_answers_fenced_bare_and_beside_tools_are_taken(tmp_path: Path) -> None:
    for name, settings in (("functor_with_tools", {}), ("functor_with_schema", {}),
                           ("functor_with_tools_and_schema", {"schema_with_tools": True})):
        box, _ = make_toolbox(_tree(tmp_path / name), allowed=(KERNEL,))
        with ScriptedLLM([REPLIES[name]]) as server:
            result = make_provider(server.base_url, tmp_path / name, **settings).write_functor(REQUEST, box)
        assert result.functor_source.startswith("struct special_airy_ai_functor {"), name
        assert len(server.requests) == 1
