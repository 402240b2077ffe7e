"""The OpenAI-compatible provider: chat completions with tool calls, our retries, budget, transcript.

Only `chat.completions.create` is used (portable to vLLM, Ollama, llama.cpp); structured answers
come back as the configured capability allows (`provider.structured_output`: a json_schema
`response_format`, JSON mode, or the prompt alone) and are validated here with pydantic, read
through code fences and prose. Tool calls a model writes into its text instead of `tool_calls` are
found (`replies`) and run like any other. Requests, retries and refusals live in `endpoint`. The
client is built with `max_retries=0`; its HTTP transport caps every reply body at
`provider.max_reply_bytes` (see `capped_http`).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pydantic

from metalport.agent.budget import Budget
from metalport.budget_limits import BudgetLimits
from metalport.agent.capped_http import capped_client
from metalport.agent.context import MACROS, helpers_for, sibling_example
from metalport.agent.endpoint import TEXT_RESULTS, Endpoint, Reply, ToolCall
from metalport.agent.provider import (FixRequest, FixResult, FunctorRequest, FunctorResult, KernelCheck,
                                      KernelRequest, KernelResult, PlanRequest, PlanResult, PrRequest)
from metalport.agent.replies import answer_json, tool_calls_in_text
from metalport.agent.tools import ToolBox
from metalport.agent.transcript import Redactor, Transcript, read_transcript
from metalport.config import AgentConfig
from metalport.errors import AgentError, UsageError
from metalport.prompts import render_prompt

class FunctorAnswer(pydantic.BaseModel):
    """The structured final answer of `write_functor`."""

    model_config = pydantic.ConfigDict(extra="forbid")
    functor_source: str = pydantic.Field(min_length=1)
    summary: str


class KernelAnswer(pydantic.BaseModel):
    """The structured final answer of `write_kernel`: the launch spec as YAML and the kernel."""

    model_config = pydantic.ConfigDict(extra="forbid")
    spec_yaml: str = pydantic.Field(min_length=1)
    kernel_source: str = pydantic.Field(min_length=1)
    summary: str


class RowEdit(pydantic.BaseModel):
    """One registry row after the port."""

    model_config = pydantic.ConfigDict(extra="forbid")
    entry: str = pydantic.Field(min_length=1)  # overload name, e.g. "logit.out"
    after: str = pydantic.Field(min_length=1)  # its dispatch line after the port


class PlanAnswer(pydantic.BaseModel):
    """The structured answer of `plan`: what deterministic code should do, checked by `_check_plan`."""

    model_config = pydantic.ConfigDict(extra="forbid")
    family: str = pydantic.Field(min_length=1)
    kernel_file: str
    functor_name: str
    host_file: str
    register_dispatch: str
    rows: list[RowEdit] = pydantic.Field(min_length=1)
    legacy: str | None
    xfail_keys: list[str]
    summary: str


KERNELS_DIR = "aten/src/ATen/native/mps/kernels/"
OPERATIONS_DIR = "aten/src/ATen/native/mps/operations/"
_IDENT = re.compile(r"[A-Za-z_]\w*")
_REGISTER = re.compile(r"REGISTER_DISPATCH\(\s*\w+\s*,\s*&\w+\s*\)")
# Planning and writing a functor only read: the functor comes back as JSON and deterministic code
# inserts it, so editing, checking or finishing there would act on a tree without it.
READ_ONLY_TOOLS = frozenset({"read_file", "grep", "show_op", "show_examples"})
# Writing a kernel reads too, with the tree's kernels of the same kind instead of pointwise functors.
KERNEL_TOOLS = frozenset({"read_file", "grep", "show_op", "show_kernels"})


def _check_plan(request: PlanRequest) -> Callable[[PlanAnswer], str | None]:
    """A validator of plans for `request`: the first problem as a sentence for the model, or None."""
    def check(plan: PlanAnswer) -> str | None:
        for name, path, folder, ext in (("kernel_file", plan.kernel_file, KERNELS_DIR, ".metal"),
                                        ("host_file", plan.host_file, OPERATIONS_DIR, ".mm")):
            if ".." in path.split("/") or not path.startswith(folder) or not path.endswith(ext):
                return f"{name} {path!r} must be a {ext} file under {folder}"
        if not _IDENT.fullmatch(plan.functor_name):
            return f"functor_name {plan.functor_name!r} is not a C++ identifier"
        if not _REGISTER.fullmatch(plan.register_dispatch.strip()):
            return f"register_dispatch {plan.register_dispatch!r} must read REGISTER_DISPATCH(<stub>, &<fn>)"
        unknown = [r.entry for r in plan.rows if r.entry not in request.entries]
        if unknown:
            return f"rows name unknown entries {unknown}; the op's entries are {list(request.entries)}"
        if any("MPSGraph" in r.after or r.after.rstrip().endswith("_mps") for r in plan.rows):
            return "a row still names an MPS-only kernel; every row must reach the shared kernel"
        return None
    return check


def select_diagnostics(diagnostics: tuple[dict, ...], limit: int = 8,
                       max_message_chars: int = 300) -> tuple[list[dict], int]:
    """The diagnostics worth a prompt: the first of each (file, line, kind), at most `limit`, messages
    cut to `max_message_chars`; and how many were left out (the context is chosen, not dumped)."""
    seen: set[tuple] = set()
    shown: list[dict] = []
    for d in diagnostics:
        key = (d.get("file"), d.get("line"), d.get("kind"))
        if key in seen or len(shown) >= limit:
            continue
        seen.add(key)
        message = str(d.get("message", ""))
        cut = message if len(message) <= max_message_chars else message[:max_message_chars] + " [...]"
        shown.append({**d, "message": cut})
    return shown, len(diagnostics) - len(shown)


LOCAL_KEY = "no-key-needed"  # sent to a server on this machine when no key is set: local servers ignore it


def is_loopback(base_url: str | None) -> bool:
    """`base_url` points at this machine (127.0.0.0/8, ::1 or localhost)."""
    from urllib.parse import urlsplit

    host = urlsplit(base_url or "").hostname or ""
    return host == "localhost" or host == "::1" or host.startswith("127.")


def make_client(config: AgentConfig, key: str | None = None) -> openai.OpenAI:
    """An openai client for the configured endpoint, without the SDK's own retries, whose replies
    are capped at `provider.max_reply_bytes`; the key is `key`, else the configured variable's."""
    key = key or config.provider.api_key(None) or (LOCAL_KEY if is_loopback(config.provider.resolved_base_url(None))
                                                   else None)
    if not key:
        raise UsageError(f"no API key: ${config.provider.api_key_env} is not set",
                         hint=f"export {config.provider.api_key_env}=... or set provider.api_key_env")
    return openai.OpenAI(base_url=config.provider.resolved_base_url(None), api_key=key, max_retries=0,
                         timeout=config.provider.timeout_s,
                         http_client=capped_client(config.provider.max_reply_bytes, config.provider.timeout_s))


class OpenAIProvider:
    """Implements `Provider` against one endpoint; every request goes through `_complete`."""

    def __init__(self, config: AgentConfig, client: openai.OpenAI, budget: Budget, transcript: Transcript,
                 sleep: Callable[[float], None] = time.sleep, notify: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.client = client
        self.budget = budget
        self.transcript = transcript
        self._sleep = sleep
        self._notify = notify or _to_stderr  # one line per retry, so a 429/5xx storm is never silent
        self.endpoint = Endpoint(config.provider, client, budget, transcript, sleep, self._notify)

    def write_functor(self, request: FunctorRequest, tools: ToolBox) -> FunctorResult:
        """Run the tool loop until the model answers with a valid `FunctorAnswer`."""
        shown, omitted = select_diagnostics(request.diagnostics)
        op = request.op.removeprefix("aten::")
        messages = self._start("write_functor", op=request.op, family=request.family,
                               dtypes=request.dtypes, plan_summary=request.plan_summary,
                               kernel_file=request.kernel_file, functor_name=request.functor_name,
                               feedback=request.feedback, diagnostics=shown, omitted=omitted,
                               example=sibling_example(tools.read_text(request.kernel_file), request.family, op),
                               macro=MACROS.get(request.family, "REGISTER_*_OP"), helpers=helpers_for(tools.root),
                               params_type=request.params_type, params_fields=request.params_fields)
        answer = self._loop(messages, tools, FunctorAnswer, offered=READ_ONLY_TOOLS)
        return FunctorResult(functor_source=answer.functor_source, summary=answer.summary,
                             usage=self.budget.usage())

    def write_kernel(self, request: KernelRequest, tools: ToolBox, accept: KernelCheck) -> KernelResult:
        """Run the read-only tool loop until the model answers with a kernel and a launch spec that
        `accept` takes; each refusal goes back as one line and costs a turn."""
        shown, omitted = select_diagnostics(request.diagnostics)
        messages = self._start("write_kernel", op=request.op, kind=request.kind, kind_reason=request.kind_reason,
                               schemas=request.schemas, plan_summary=request.plan_summary,
                               feedback=request.feedback, diagnostics=shown, omitted=omitted)
        answer = self._loop(messages, tools, KernelAnswer, offered=KERNEL_TOOLS,
                            validate=lambda a: accept(a.spec_yaml, a.kernel_source))
        return KernelResult(spec_text=answer.spec_yaml, kernel_source=answer.kernel_source, summary=answer.summary,
                            usage=self.budget.usage())

    def fix(self, request: FixRequest, tools: ToolBox) -> FixResult:
        """Run the tool loop until `finish` is accepted (which needs a passing `check()`)."""
        shown, omitted = select_diagnostics(request.diagnostics)
        messages = self._start("fix_failure", op=request.op, failure_stage=request.failure_stage,
                               diagnostics=shown, omitted=omitted, allowed_paths=request.allowed_paths,
                               plan_summary=request.plan_summary)
        self._loop(messages, tools, None)
        return FixResult(summary=tools.finished or "", usage=self.budget.usage())

    def plan(self, request: PlanRequest, tools: ToolBox) -> PlanResult:
        """Ask for a plan (read-only tools only), validated by schema and by `_check_plan`."""
        messages = self._start("plan", op=request.op, family=request.family, rows=request.rows,
                               current_impl=request.current_impl, dtypes=request.dtypes)
        answer = self._loop(messages, tools, PlanAnswer, validate=_check_plan(request), offered=READ_ONLY_TOOLS)
        return PlanResult(plan=answer.model_dump(exclude={"summary"}), summary=answer.summary,
                          usage=self.budget.usage())

    def usage(self) -> dict:
        """The run's model usage so far (calls, tokens, cost, wall time)."""
        return self.budget.usage()

    def describe_pr(self, request: PrRequest) -> str:
        """One request without tools; the reply text is the PR body.

        The body is untrusted output bound for GitHub: secrets are redacted, and the run's usage is
        appended by us (the model may drop it)."""
        messages = self._start("pr_description", op=request.op, plan_summary=request.plan_summary,
                               diff_stat=request.diff_stat, verdicts=request.verdicts, usage=request.usage)
        text = self._complete(messages, None, None).content.strip()
        if not text or len(text) > self.config.provider.max_reply_chars:
            raise AgentError(f"the model's PR description is {'empty' if not text else 'over the size cap'}",
                             hint="retry, or write the description by hand at the gate")
        return self.transcript.redactor.text(text) + _usage_footer(request.usage)

    def _start(self, prompt: str, **variables: Any) -> list[dict]:
        return [{"role": "system", "content": render_prompt("system")},
                {"role": "user", "content": render_prompt(prompt, **variables)}]

    def _loop(self, messages: list[dict], tools: ToolBox, schema: type[pydantic.BaseModel] | None, *,
              validate: Callable[[Any], str | None] | None = None, offered: frozenset[str] | None = None) -> Any:
        """Tool loop: run tool calls (from `tool_calls` or written in the text), feed every refusal
        back, stop at a valid answer or `finish`. On a server that cannot take tools and a schema in
        one request, a reply that is neither a call nor a valid answer is followed by an answer
        request that carries the schema and no tools."""
        cap, strikes = self.config.provider, Counter()
        answer_now = False
        names = tools.names()
        for _ in range(cap.max_turns):
            reply = self.endpoint.complete(messages, tools.specs(offered), schema, answer_now=answer_now)
            answer_now = False
            calls, from_text = reply.tool_calls, False
            if not calls:
                calls = [ToolCall(f"text_call_{i}", "function", c.name, c.arguments, c.form)
                         for i, c in enumerate(tool_calls_in_text(reply.content, names))]
                from_text = bool(calls)
            size = len(reply.content) + sum(len(c.name) + len(c.arguments) for c in calls)
            if size > cap.max_reply_chars:
                messages.append({"role": "assistant", "content": f"[reply of {size} chars withheld]"})
                error = render_prompt("correction", kind="oversized", size=size, cap=cap.max_reply_chars)
            elif calls and not (from_text and schema is not None and _is_answer(schema, reply.content)):
                self._run_tools(messages, reply, calls, tools, strikes, offered, from_text)
                if schema is None and tools.finished is not None:
                    return None
                continue
            elif schema is None:
                messages.append({"role": "assistant", "content": reply.content})
                error = render_prompt("correction", kind="no_finish")
            else:
                messages.append({"role": "assistant", "content": reply.content})
                error = _parse(schema, reply.content, validate)
                if not isinstance(error, str):
                    return error
                answer_now = not _is_answer(schema, reply.content)  # no JSON answer yet: ask with the schema
            if reply.finish_reason == "length":
                error = render_prompt("correction", kind="truncated", max_tokens=cap.max_tokens) + "; " + error
            self._strike(strikes, error.split(":")[0], {"error": error})
            messages.append({"role": "user", "content": error})
        raise AgentError(f"the model gave no accepted answer in {cap.max_turns} turns",
                         hint="raise provider.max_turns or inspect the transcript")

    def _run_tools(self, messages: list[dict], reply: Reply, calls: list[ToolCall], tools: ToolBox,
                   strikes: Counter, offered: frozenset[str] | None, from_text: bool) -> None:
        """Run `calls` and append the results: as `tool` messages after API calls, or as one user
        message after calls written in the text (no `tool_calls` exist for them to answer)."""
        if from_text:
            messages.append({"role": "assistant", "content": reply.content})
        else:
            messages.append({"role": "assistant", "content": reply.content or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in calls]})
        results = []
        for call in calls:
            result = (tools.call(call.name, call.arguments, offered=offered) if call.kind == "function" else
                      {"ok": False, "error": f"{call.kind} tool calls are not supported; call one of the offered "
                                             "functions", "tools": sorted(offered or tools.names())})
            self.transcript.write("tool_call", {"name": call.name, "arguments": call.arguments, "form": call.form,
                                                "result": result})
            if not result.get("ok"):
                self._strike(strikes, f"{call.name}({call.arguments})", result)
            if from_text:
                results.append(f"<tool_response name=\"{call.name}\">\n{json.dumps(result)}\n</tool_response>")
            else:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        if from_text:
            messages.append({"role": "user", "content": "\n".join([TEXT_RESULTS, *results])})

    def _strike(self, strikes: Counter, key: str, result: dict) -> None:
        strikes[key] += 1
        if strikes[key] >= self.config.provider.max_repeats:
            self.transcript.write("error", {"loop_bound": key, "count": strikes[key]})
            raise AgentError(f"the model repeated the same failing step {strikes[key]} times: "
                             f"{result.get('error', key)}"[:300],
                             hint="inspect the transcript; the run stops instead of looping")

    def _complete(self, messages: list[dict], tools: list[dict] | None,
                  schema: type[pydantic.BaseModel] | None) -> Reply:
        """One model reply (see `Endpoint.complete`)."""
        return self.endpoint.complete(messages, tools, schema)


def _is_answer(schema: type[pydantic.BaseModel], content: str) -> bool:
    """`content` holds a valid `schema` answer (then a call-shaped JSON inside it is not a call)."""
    try:
        schema.model_validate_json(answer_json(content))
    except pydantic.ValidationError:
        return False
    return True


def _parse(schema: type[pydantic.BaseModel], content: str,
           validate: Callable[[Any], str | None] | None) -> Any:
    """The validated answer, or the sentence telling the model what is wrong with it."""
    try:
        answer = schema.model_validate_json(answer_json(content))
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        detail = f"{first['msg']} at {'.'.join(map(str, first['loc'])) or 'top level'}"
        return render_prompt("correction", kind="invalid", schema=schema.__name__, detail=detail,
                             fields=list(schema.model_fields))
    problem = validate(answer) if validate else None
    if problem:
        return render_prompt("correction", kind="refused", schema=schema.__name__, detail=problem)
    return answer


def _usage_footer(usage: dict) -> str:
    """The PR body's last lines: the run's model usage, as evidence for the reviewer."""
    if not usage:
        return "\n"
    return (f"\n\n---\nModel usage of this port: {usage.get('calls', 0)} calls, "
            f"{usage.get('input_tokens', 0)} input and {usage.get('output_tokens', 0)} output tokens, "
            f"${float(usage.get('cost_usd', 0.0)):.4f}.\n")


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def build_provider(config: AgentConfig, transcript_path: Path | None,
                   limits: BudgetLimits | None = None) -> OpenAIProvider:
    """The provider for one run: client from config/env, a budget, a redacting transcript.

    The redactor knows the API key, every `secret_env` value and the default secret variables.
    When the transcript already exists (a resumed run), the budget starts from its last usage.
    """
    client = make_client(config)
    key = config.provider.api_key(None)
    redactor = Redactor(secret_env=(config.provider.api_key_env, *config.secret_env), values=[key or ""])
    budget = Budget(limits or config.budget, config.price())
    if transcript_path is not None and transcript_path.is_file():
        spent = [e["data"] for e in read_transcript(transcript_path) if e["kind"] == "usage"]
        if spent:
            budget.restore(spent[-1])
    return OpenAIProvider(config, client, budget, Transcript(transcript_path, redactor))
