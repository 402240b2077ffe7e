"""Tokens per model call and per run for a scripted pointwise functor-writing scenario.

The scripted server reports `usage.prompt_tokens` as the request's characters (messages and tools) / 4, so the
numbers follow what we actually send; we also count the prompt size ourselves (chars / 4 of the
messages and tool specs sent). Target: <= 15k input tokens per pointwise run. Run: `python bench/bench_tokens.py`.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TARGET_INPUT_TOKENS = 15_000


def _scenario(root: Path) -> list:
    from tests.llm_server import json_reply, tool_reply

    kernel = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    answer = {"functor_source": "struct heaviside_functor {\n  template <typename T>\n  inline T operator()"
              "(const T x, const T v) {\n    return x == T(0) ? v : T(x > T(0));\n  }\n};",
              "summary": "heaviside: values where x is zero, else the step"}
    replies = [tool_reply(("show_op", {"op": "heaviside"})),
               tool_reply(("show_examples", {"family": "binary"})),
               tool_reply(("read_file", {"path": kernel, "start": 1, "end": 60})),
               json_reply(answer)]

    def sized(reply: dict):
        def step(body: dict) -> dict:
            reply["usage"]["prompt_tokens"] = (len(json.dumps(body["messages"])) + len(json.dumps(body.get("tools", [])))) // 4
            reply["usage"]["total_tokens"] = reply["usage"]["prompt_tokens"] + reply["usage"]["completion_tokens"]
            return reply
        return step

    (root / kernel).parent.mkdir(parents=True)
    functors = "\n".join(f"struct op{i}_functor {{\n  template <typename T>\n  inline T operator()(const T a, "
                         f"const T b) {{\n    return a * T({i}) + b;\n  }}\n}};\n"
                         f"REGISTER_BINARY_OP(op{i}, float, float);\nREGISTER_BINARY_OP(op{i}, half, half);\n"
                         for i in range(30))
    (root / kernel).write_text("#include <c10/metal/indexing.h>\nusing namespace c10::metal;\n\n" + functors)
    return [sized(r) for r in replies]


def main() -> int:
    import openai

    from metalport.agent.budget import Budget, BudgetLimits
    from metalport.agent.openai_provider import OpenAIProvider
    from metalport.agent.provider import FunctorRequest
    from metalport.agent.tools import ToolBox
    from metalport.agent.transcript import Redactor, Transcript
    from metalport.config import AgentConfig, ProviderConfig
    from tests.llm_server import ScriptedLLM

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = _scenario(root)
        kernel_text = (root / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal").read_text()
        box = ToolBox(root, ["aten/src/ATen/native/mps/kernels/BinaryKernel.metal"],
                      check=lambda: {"ok": True}, conformance=lambda: {"ok": True},
                      show_op=lambda op: {"ok": True, "rows": [
                          f"- func: {op}.out(Tensor self, Tensor values, *, Tensor(a!) out) -> Tensor(a!)",
                          f"  dispatch: CPU, CUDA: {op}_out\n  MPS: {op}_out_mps"], "backlog": "mps-graph"},
                      show_examples=lambda family: {"ok": True, "examples": [kernel_text[:3000]]},
                      redactor=Redactor(environ={}))
        with ScriptedLLM(script) as server:
            config = AgentConfig(provider=ProviderConfig(model="scripted-model", base_url=server.base_url,
                                                         timeout_s=10))
            client = openai.OpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0, timeout=10)
            budget = Budget(BudgetLimits())
            provider = OpenAIProvider(config, client, budget, Transcript(None, Redactor(environ={})))
            provider.write_functor(FunctorRequest(op="heaviside", family="binary", dtypes=("float", "half"),
                                                  plan_summary="heaviside.out -> CPU, CUDA, MPS: heaviside_out",
                                                  kernel_file="BinaryKernel.metal",
                                                  functor_name="heaviside_functor"), box)
            requests = server.requests
    print(f"{'call':>4} {'messages':>8} {'chars sent':>12} {'own est. tok':>12} {'tools chars':>11}")
    own_total = 0
    for i, body in enumerate(requests, 1):
        chars = len(json.dumps(body["messages"])) + len(json.dumps(body.get("tools", [])))
        own_total += chars // 4
        print(f"{i:>4} {len(body['messages']):>8} {chars:>12} {chars // 4:>12} {len(json.dumps(body.get('tools', []))):>11}")
    usage = budget.usage()
    print(f"run: calls={usage['calls']} input_tokens={usage['input_tokens']} (own estimate {own_total}) "
          f"output_tokens={usage['output_tokens']} target<={TARGET_INPUT_TOKENS} "
          f"ratio={usage['input_tokens'] / TARGET_INPUT_TOKENS:.2f}")
    return 0 if usage["input_tokens"] <= TARGET_INPUT_TOKENS else 1


if __name__ == "__main__":
    sys.exit(main())
