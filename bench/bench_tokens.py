"""Input/output tokens per graph node and per run for the scripted pointwise scenario.

Two scenarios, each through the real graph (`start_run`, `--model openai:scripted-model`, emulated
executor) on the fixture checkout's `hypot` (outside the recipe table), scripted as in
tests/agent/test_graph_e2e.py: (1) the model reads with tools and writes a passing functor;
(2) its first functor fails conformance and it repairs it in the `edit` node's fix step. The PR
description (the `publish` node's call) is then asked of the same run's provider. The server reports
`prompt_tokens` = characters sent (messages + tool specs) / 4 and `completion_tokens` = characters of
its reply / 4, so the numbers follow what we actually send.
Target: <= 15k input tokens for a pointwise port (scenario 1). Run: `python bench/bench_tokens.py`.

First, a table per prompt: each template rendered as a run renders it (the functor prompt for
`special_airy_ai` with the real tree's sibling functor and the c10/metal helpers when
$METALPORT_REAL_TREE is set), in characters and tokens (characters / 4), and the tool specs a
functor step sends beside it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TARGET_INPUT_TOKENS = 15_000
_STEPS = (("Write the Metal functor", "edit: write_functor"), ("The port of", "edit: fix"),
          ("Write the pull-request", "publish: describe_pr"), ("Plan the port", "plan"))


def _sized(reply: dict, log: list[tuple[str, int, int, int]]):
    """A script step whose usage follows the request and reply sizes; logs (node, messages, in, out)."""
    def step(body: dict) -> dict:
        sent = (len(json.dumps(body["messages"])) + len(json.dumps(body.get("tools", [])))) // 4
        out = len(json.dumps(reply["choices"][0]["message"])) // 4
        reply["usage"] = {"prompt_tokens": sent, "completion_tokens": out, "total_tokens": sent + out}
        log.append((_node(body), len(body["messages"]), sent, out))
        return reply
    return step


def _node(body: dict) -> str:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return next((name for prefix, name in _STEPS if user.startswith(prefix)), "other")


def _script(log: list[tuple[str, int, int, int]], *, repair: bool) -> list:
    """The scripted model: reads, answers (broken first when `repair`), fixes, describes the PR."""
    from tests.agent.test_graph_e2e import BROKEN, FUNCTOR, KERNEL, _competent_reads, _registrations
    from tests.llm_server import json_reply, text_reply, tool_reply

    first = BROKEN if repair else FUNCTOR
    replies = [*_competent_reads(), json_reply({"functor_source": first + _registrations(), "summary": "hypot"})]
    if repair:
        replies += [tool_reply(("read_file", {"path": KERNEL, "start": 1, "end": 60})),
                    tool_reply(("propose_edit", {"path": KERNEL, "search": "sqrt(1.0f - ratio * ratio)",
                                                 "replace": "sqrt(1.0f + ratio * ratio)"})),
                    tool_reply(("check", {})), tool_reply(("conformance", {})),
                    tool_reply(("finish", {"summary": "the ratio term is added, not subtracted"}))]
    replies.append(text_reply("## [MPS] native Metal kernel for hypot\n\nEvidence below."))
    return [_sized(r, log) for r in replies]


def _scenario(repair: bool) -> tuple[list[tuple[str, int, int, int]], object]:
    """Run the graph to the gate, then ask for the PR body; return the call log and the run record."""
    from metalport.agent.factory import make_provider
    from metalport.agent.provider import PrRequest
    from metalport.graph.runs import RunOptions, run_dir, start_run
    from tests.agent.test_graph_e2e import OP, _checkout
    from tests.llm_server import ScriptedLLM

    log: list[tuple[str, int, int, int]] = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLM(_script(log, repair=repair)) as server:
        repo = _checkout(Path(tmp))
        config = Path(tmp) / "metalport.yaml"
        config.write_text(f"provider:\n  base_url: {server.base_url}\n  timeout_s: 60\nsecret_env: [VAULT_PASS]\n")
        record = start_run(repo, f"aten::{OP}", RunOptions(model="openai:scripted-model", executor="emulated",
                                                          config_path=str(config)))
        provider = make_provider("openai:scripted-model", config_path=config, run_dir=run_dir(repo, record.run_id))
        provider.describe_pr(PrRequest(op=f"aten::{OP}", plan_summary="rows -> shared kernel; functor by the model",
                                       diff_stat="2 files changed", verdicts=tuple(map(str, record.verdicts)),
                                       usage=record.usage))
    return log, record


def _prompt_table() -> None:
    """Characters and estimated tokens of every prompt as a run renders it."""
    from metalport.agent.context import MACROS, helpers_for, sibling_example
    from metalport.agent.openai_provider import READ_ONLY_TOOLS
    from metalport.agent.tools import ToolBox
    from metalport.prompts import render_prompt

    tree = Path(os.environ.get("METALPORT_REAL_TREE") or "/nonexistent")
    kernel = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
    text = (tree / kernel).read_text() if (tree / kernel).is_file() else ""
    diag = [{"file": kernel, "line": 7, "kind": "conformance", "message": "sample 3: got nan, expected 0.35"}]
    plan = "op: special_airy_ai\nfamily: unary-pointwise\nkernel_file: " + kernel + "\nfunctor: special_airy_ai_functor"
    rendered = {
        "system": render_prompt("system"),
        "write_functor": render_prompt("write_functor", op="aten::special_airy_ai", family="unary",
                                       dtypes=("float", "half", "bfloat"), plan_summary=plan, kernel_file=kernel,
                                       functor_name="special_airy_ai_functor", feedback="", diagnostics=[], omitted=0,
                                       example=sibling_example(text, "unary", "special_airy_ai"),
                                       macro=MACROS["unary"], helpers=helpers_for(tree)),
        "fix_failure": render_prompt("fix_failure", op="aten::special_airy_ai", failure_stage="test",
                                     diagnostics=diag, omitted=0, allowed_paths=(kernel,), plan_summary=plan),
        "plan": render_prompt("plan", op="aten::logit", family="unary-pointwise", rows=["logit.out: MPS: logit_out_mps"],
                              current_impl="MPSGraph", dtypes=("float", "half")),
        "correction (invalid)": render_prompt("correction", kind="invalid", schema="FunctorAnswer",
                                              detail="Field required at summary", fields=["functor_source", "summary"]),
    }
    box = ToolBox(Path("."), (), check=dict, conformance=dict, show_op=dict, show_examples=dict)
    rendered["tool specs (functor step)"] = json.dumps(box.specs(READ_ONLY_TOOLS))
    print(f"{'prompt':<28} {'chars':>7} {'tokens~':>8}")
    for name, body in rendered.items():
        print(f"{name:<28} {len(body):>7} {len(body) // 4:>8}")
    total = sum(len(rendered[k]) for k in ("system", "write_functor", "tool specs (functor step)")) // 4
    print(f"{'first functor request':<28} {'':>7} {total:>8}")


def main() -> int:
    from tests.agent.test_graph_e2e import SECRETS

    _prompt_table()
    os.environ.update(SECRETS)
    ok = True
    totals = {}
    for name, repair in (("pointwise port", False), ("port + repair after failed conformance", True)):
        log, record = _scenario(repair)
        per_node: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        print(f"\n== {name}: status={record.status} attempts={record.attempts}")
        print(f"{'call':>4} {'node':<22} {'messages':>8} {'input tok':>9} {'output tok':>10}")
        for i, (node, messages, tin, tout) in enumerate(log, 1):
            per_node[node][0] += 1
            per_node[node][1] += tin
            per_node[node][2] += tout
            print(f"{i:>4} {node:<22} {messages:>8} {tin:>9} {tout:>10}")
        print(f"{'node':<22} {'calls':>5} {'input tok':>9} {'output tok':>10}")
        for node, (calls, tin, tout) in per_node.items():
            print(f"{node:<22} {calls:>5} {tin:>9} {tout:>10}")
        total_in, total_out = sum(v[1] for v in per_node.values()), sum(v[2] for v in per_node.values())
        print(f"{'run':<22} {len(log):>5} {total_in:>9} {total_out:>10}   (graph record before the PR: {record.usage})")
        totals[name] = total_in
        ok = ok and record.status == "awaiting-review"
    point = totals["pointwise port"]
    print(f"\npointwise port: {point} input tokens vs target <= {TARGET_INPUT_TOKENS}: "
          f"ratio {point / TARGET_INPUT_TOKENS:.2f}")
    return 0 if ok and point <= TARGET_INPUT_TOKENS else 1


if __name__ == "__main__":
    sys.exit(main())
