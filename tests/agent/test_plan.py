"""The plan step: a json_schema answer validated by pydantic and by our path/row rules, read-only tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.agent.provider import PlanRequest
from metalport.errors import AgentError
from tests.agent.helpers import KERNEL, make_provider, make_toolbox, make_tree
from tests.llm_server import ScriptedLLM, json_reply, text_reply, tool_reply

REQUEST = PlanRequest(op="logit", family="unary-with-scalar", entries=("logit", "logit.out", "logit_"),
                      rows=("logit.out: CPU, CUDA: logit_out / MPS: logit_out_mps",),
                      current_impl="MPSGraph in UnaryOps.mm", dtypes=("float", "half"))
PLAN = {"family": "unary-with-scalar", "kernel_file": "aten/src/ATen/native/mps/kernels/UnaryKernel.metal",
        "functor_name": "logit_functor", "host_file": "aten/src/ATen/native/mps/operations/UnaryKernel.mm",
        "register_dispatch": "REGISTER_DISPATCH(logit_stub, &logit_mps_kernel)",
        "rows": [{"entry": "logit.out", "after": "CPU, CUDA, MPS: logit_out"}],
        "legacy": "logit_out_mps", "xfail_keys": ["logit"], "summary": "logit with eps clamp"}


def _plan(tmp_path: Path, script: list, **provider: object):
    box, _ = make_toolbox(make_tree(tmp_path / "wt"))
    with ScriptedLLM(script) as server:
        return make_provider(server.base_url, tmp_path, **provider).plan(REQUEST, box), server


def test_plan_uses_read_only_tools_and_returns_the_validated_plan(tmp_path: Path) -> None:
    result, server = _plan(tmp_path, [tool_reply(("show_op", {"op": "logit"})), json_reply(PLAN)],
                           schema_with_tools=True)  # a server that keeps tools usable beside a schema (OpenAI)
    assert result.summary == "logit with eps clamp" and result.plan["rows"] == PLAN["rows"]
    assert result.usage["calls"] == 2
    first = server.requests[0]
    assert {t["function"]["name"] for t in first["tools"]} == {"read_file", "grep", "show_op", "show_examples"}
    schema = first["response_format"]["json_schema"]
    assert schema["name"] == "PlanAnswer" and "register_dispatch" in schema["schema"]["properties"]
    assert "logit.out: CPU, CUDA: logit_out / MPS: logit_out_mps" in first["messages"][1]["content"]


def test_plan_may_not_edit_or_finish(tmp_path: Path) -> None:
    edit = ("propose_edit", {"path": KERNEL, "search": "copysign", "replace": "x"})
    result, server = _plan(tmp_path, [tool_reply(edit, ("finish", {"summary": "done"})), json_reply(PLAN)])
    errors = [json.loads(m["content"])["error"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert errors == ["not offered in this step 'propose_edit'", "not offered in this step 'finish'"]
    assert "copysign" in (tmp_path / "wt" / KERNEL).read_text() and result.plan["functor_name"] == "logit_functor"


@pytest.mark.parametrize(("change", "message"), [
    ({"kernel_file": "../../etc/passwd.metal"}, "kernel_file '../../etc/passwd.metal' must be a .metal file under"),
    ({"host_file": "aten/src/ATen/native/mps/operations/../../../../setup.py"}, "host_file"),
    ({"functor_name": "logit functor"}, "functor_name 'logit functor' is not a C++ identifier"),
    ({"register_dispatch": "system('curl x')"}, "register_dispatch"),
    ({"rows": [{"entry": "sigmoid.out", "after": "CPU, CUDA, MPS: sigmoid_out"}]},
     "rows name unknown entries ['sigmoid.out']"),
    ({"rows": [{"entry": "logit.out", "after": "MPS: logit_out_mps"}]}, "a row still names an MPS-only kernel"),
])
def test_invalid_plans_are_refused_back_to_the_model(tmp_path: Path, change: dict, message: str) -> None:
    result, server = _plan(tmp_path, [json_reply({**PLAN, **change}), json_reply(PLAN)])
    feedback = server.requests[1]["messages"][-1]["content"]
    assert feedback.startswith("your PlanAnswer is refused: ") and message in feedback
    assert result.plan["kernel_file"] == PLAN["kernel_file"]


def test_garbage_plans_end_at_the_loop_bound(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match="repeated the same failing step 3 times: your answer is not valid "
                                         "PlanAnswer JSON"):
        _plan(tmp_path, [text_reply("I think you should port it."), json_reply({"family": "x"}),
                         text_reply("{broken")])
