"""`metalport doctor --probe`: what an endpoint honours, found with a few tiny requests.

Three requests of at most `PROBE_MAX_TOKENS` output tokens each: a tool call (does the server
return OpenAI `tool_calls`, or does the model write the call in its text?), a json_schema answer
(honoured, refused, or ignored? on a refusal, JSON mode is tried), and both in one request (are
the tools still usable beside a schema?). The result is the `provider:` settings to use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import openai

from metalport.agent.refusals import classify
from metalport.agent.replies import tool_calls_in_text
from metalport.config import AgentConfig

PROBE_MAX_TOKENS = 48
_PING = [{"type": "function", "function": {
    "name": "ping", "description": "Answer a ping.",
    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}]
_SCHEMA = {"type": "json_schema", "json_schema": {"name": "Probe", "schema": {
    "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}}}
_CALL = [{"role": "user", "content": "Call the tool ping with n=1. Write nothing else."}]
# Asked for a word, not JSON: only an enforced format makes the reply a JSON object.
_ANSWER = [{"role": "user", "content": "Say hello in one word."}]


@dataclass
class ProbeReport:
    """What the endpoint did with each probe, and the settings that follow."""

    tool_calls: str = "unknown"  # api, text, none, refused
    structured_output: str = "prompt"  # json_schema, json_object or prompt
    schema_with_tools: bool = False
    notes: list[str] = field(default_factory=list)
    tokens: int = 0

    def lines(self) -> list[str]:
        said = {"api": "returned as OpenAI tool_calls", "text": "written in the reply's text (metalport reads them there)",
                "none": "not made (the model answered in prose)", "refused": "refused by the server",
                "unknown": "not probed"}[self.tool_calls]
        return [f"probe: tool calls {said}",
                f"probe: structured output: {self.structured_output}",
                f"probe: tools beside a schema: {'kept' if self.schema_with_tools else 'not usable (sent apart)'}",
                *(f"probe: {n}" for n in self.notes),
                f"probe: {self.tokens} tokens spent; set in metalport.yaml -> provider: {{structured_output: "
                f"{self.structured_output}, schema_with_tools: {str(self.schema_with_tools).lower()}}}"]


def probe_capabilities(client: openai.OpenAI, config: AgentConfig) -> ProbeReport:
    """Run the three probes against `client` for the configured model."""
    report = ProbeReport()
    model = config.provider.model
    reply, problem = _ask(client, report, model=model, messages=_CALL, tools=_PING)
    if reply is None:
        report.tool_calls = "refused" if problem.startswith("refused") else "unknown"
        report.notes.append(f"tool call probe: {problem}")
    else:
        message = reply.choices[0].message
        report.tool_calls = ("api" if message.tool_calls else
                             "text" if tool_calls_in_text(message.content or "", ["ping"]) else "none")
    for mode, response_format in (("json_schema", _SCHEMA), ("json_object", {"type": "json_object"})):
        reply, problem = _ask(client, report, model=model, messages=_ANSWER, response_format=response_format)
        if reply is None:
            report.notes.append(f"{mode} probe: {problem}")
            continue
        content = reply.choices[0].message.content or ""
        try:
            value = json.loads(content)
            honoured = isinstance(value, dict) and (mode == "json_object" or isinstance(value.get("ok"), bool))
        except json.JSONDecodeError:
            honoured = False
        if honoured:
            report.structured_output = mode
            break
        report.notes.append(f"{mode} probe: the server ignores it (the reply was {content[:40]!r})")
    if report.structured_output == "json_schema" and report.tool_calls == "api":
        reply, _ = _ask(client, report, model=model, messages=_CALL, tools=_PING, response_format=_SCHEMA)
        report.schema_with_tools = bool(reply is not None and reply.choices[0].message.tool_calls)
    return report


def _ask(client: openai.OpenAI, report: ProbeReport, **body: object) -> tuple[object | None, str]:
    try:
        reply = client.chat.completions.create(max_tokens=PROBE_MAX_TOKENS, temperature=0, **body)
    except openai.APIStatusError as err:
        refusal = classify(err.status_code, getattr(err, "body", None), getattr(err.response, "headers", None))
        what = f"refused `{refusal.field}`" if refusal.kind == "field" else refusal.kind
        return None, f"{what} (HTTP {err.status_code}: {refusal.detail[:160]})"
    except (openai.APITimeoutError, openai.APIConnectionError) as err:
        return None, f"no reply ({type(err).__name__})"
    usage = getattr(reply, "usage", None)
    report.tokens += int(getattr(usage, "total_tokens", 0) or 0)
    if not getattr(reply, "choices", None):
        return None, "no usable choice"
    return reply, ""
