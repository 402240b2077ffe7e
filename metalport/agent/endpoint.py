"""One model reply from an OpenAI-compatible endpoint, as real servers behave.

`Endpoint.complete` builds the request from the provider's capabilities (never `tools` and a schema
together unless `schema_with_tools`; the schema as `json_schema`, JSON mode or not at all; a
`max_tokens` within what the budget has left), retries only what is transient (429, 5xx that names no
request field, timeouts, dropped connections; `Retry-After` honoured), drops structured output for
the rest of the run when the server refuses it (one line, no retry spent), trims the oldest tool
results when the context is full, and streams when asked, printing a progress line while a slow
server writes. Every failure ends as an `AgentError` that names its cause.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

import httpx
import openai
import pydantic

from metalport.agent.budget import Budget
from metalport.agent.capped_http import ReplyTooLarge
from metalport.agent.refusals import Refusal, classify
from metalport.agent.transcript import Transcript
from metalport.config import ProviderConfig
from metalport.errors import AgentError

try:  # the openai SDK's own HTTP stack (httpx2 in openai 3.x); errors inside a stream come from it
    import httpx2 as _httpx2

    _TRANSPORT = (httpx.TransportError, _httpx2.TransportError)
    _TIMEOUT = (httpx.TimeoutException, _httpx2.TimeoutException)
except ImportError:  # pragma: no cover - openai 1.x uses httpx
    _TRANSPORT = (httpx.TransportError,)
    _TIMEOUT = (httpx.TimeoutException,)

TEXT_RESULTS = "Results of the tool calls you wrote:"  # opens the user message that answers calls found in text
DROPPED_RESULT = "[tool result dropped to fit the model's context; call the tool again if you need it]"
PROGRESS_EVERY_S = 10.0
MAX_WAIT_S = 120.0  # the longest Retry-After we honour


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply, normalized: a custom (non-function) call or a missing name is data,
    never an AttributeError. `form` says where it came from: `api` (OpenAI `tool_calls`) or how it was
    written in the text (`tagged`, `fenced`, `bare`)."""

    id: str
    kind: str
    name: str
    arguments: str
    form: str = "api"

    @classmethod
    def of(cls, call: Any) -> ToolCall:
        function = getattr(call, "function", None)
        if function is not None:
            return cls(str(call.id), "function", str(function.name or ""), str(function.arguments or ""))
        custom = getattr(call, "custom", None)
        return cls(str(getattr(call, "id", "")), str(getattr(call, "type", "unknown")),
                   str(getattr(custom, "name", "") or ""), str(getattr(custom, "input", "") or ""))


@dataclass
class Reply:
    """The first choice of a completion: text, API tool calls, why it stopped, and its record."""

    content: str
    tool_calls: list[ToolCall]
    finish_reason: str
    record: dict = field(default_factory=dict)


class Endpoint:
    """Sends chat requests for one run; `structured` may be lowered to "prompt" by a refusal."""

    def __init__(self, config: ProviderConfig, client: openai.OpenAI, budget: Budget, transcript: Transcript,
                 sleep: Callable[[float], None], notify: Callable[[str], None]) -> None:
        self.config = config
        self.client = client
        self.budget = budget
        self.transcript = transcript
        self.structured = config.structured_output
        self._sleep = sleep
        self._notify = notify

    @property
    def where(self) -> str:
        return str(self.client.base_url)

    def body(self, messages: list[dict], tools: list[dict] | None, schema: type[pydantic.BaseModel] | None,
             *, answer_now: bool = False) -> dict:
        """The request body. With tools and a schema on a server that cannot combine them, the tools
        go alone, unless `answer_now` (the closing answer request), when the schema goes alone."""
        cap = self.config
        body: dict[str, Any] = {"model": cap.model, "temperature": cap.temperature,
                                "messages": self.transcript.redactor.any(messages)}
        send_schema = schema is not None and self.structured != "prompt"
        send_tools = bool(tools)
        if send_schema and send_tools and not cap.schema_with_tools:
            send_schema, send_tools = answer_now, not answer_now
        if send_tools:
            body["tools"] = tools
        if send_schema and self.structured == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": schema.__name__, "schema": schema.model_json_schema()}}
        elif send_schema:
            body["response_format"] = {"type": "json_object"}
        left = self.budget.limits.max_output_tokens - self.budget.total_usage()["output_tokens"]
        body["max_tokens"] = max(1, min(cap.max_tokens, left)) if self.budget.limits.max_output_tokens else cap.max_tokens
        return body

    def complete(self, messages: list[dict], tools: list[dict] | None, schema: type[pydantic.BaseModel] | None,
                 *, answer_now: bool = False) -> Reply:
        """One reply, with retries of transient failures, the budget checked before every request."""
        attempt = 0
        while True:
            body = self.body(messages, tools, schema, answer_now=answer_now)
            self.budget.start_call()
            self.transcript.write("request", {"attempt": attempt, "messages": body["messages"][-2:],
                                              "n_messages": len(body["messages"]), "max_tokens": body["max_tokens"],
                                              "tools": len(body.get("tools", [])),
                                              "response_format": body.get("response_format", {}).get("type")})
            started = time.monotonic()
            try:
                return self._send(body)
            except ReplyTooLarge as err:
                self._refuse_oversized(err)
            except openai.APIStatusError as err:
                attempt = self._after_refusal(err, messages, body, attempt)
            except (openai.APITimeoutError, *_TIMEOUT):
                attempt = self._after_timeout(attempt, time.monotonic() - started)
            except (openai.APIConnectionError, *_TRANSPORT) as err:
                if isinstance(err.__cause__, ReplyTooLarge):  # openai 1.x wraps the transport's error
                    self._refuse_oversized(err.__cause__)
                self.transcript.write("error", {"attempt": attempt, "class": "connection", "error": str(err)[:300]})
                attempt = self._back_off(attempt, type(err).__name__, None)
            except (ValueError, openai.APIResponseValidationError) as err:  # a 200 whose body is not JSON
                self.transcript.write("error", {"attempt": attempt, "retryable": False, "error": str(err)[:500]})
                raise AgentError(f"the endpoint's reply is not a chat completion ({type(err).__name__})",
                                 location=self.where, hint="check that base_url ends in /v1 and the server speaks "
                                                           "chat completions") from None

    def _after_refusal(self, err: openai.APIStatusError, messages: list[dict], body: dict, attempt: int) -> int:
        """Handle an HTTP refusal: trim or lower and resend (same attempt), back off a transient one
        (the next attempt), or raise the one-line error of a refusal no retry mends."""
        refusal = classify(err.status_code, getattr(err, "body", None) or _text(err.response),
                           getattr(err.response, "headers", None))
        self.transcript.write("error", {"attempt": attempt, "status": err.status_code,
                                        "class": refusal.kind, "field": refusal.field,
                                        "error": refusal.detail[:800]})
        if refusal.kind == "context":
            if not _trim(messages):
                raise AgentError(f"context-length: the prompt does not fit the model's context even "
                                 f"without tool results ({refusal.detail[:200]})", location=self.where,
                                 hint="start the server with a larger context (llama-server -c)") from None
            self._notify(f"the model's context is full: dropped the oldest tool result and resent "
                         f"({refusal.detail[:120]})")
            self.transcript.write("context_trim", {"dropped": 1, "detail": refusal.detail[:300]})
            return attempt
        if refusal.kind == "field" and refusal.structured_output and body.get("response_format"):
            self._lower_structured(refusal)
            return attempt
        if refusal.kind == "field":
            raise AgentError(f"endpoint refused the request field `{refusal.field}` (HTTP {err.status_code}: "
                             f"{refusal.detail[:200]})", location=self.where,
                             hint=_field_hint(refusal.field)) from None
        if refusal.kind != "transient":
            raise AgentError(f"endpoint refused the request: HTTP {err.status_code}"
                             f"{': ' + refusal.detail[:200] if refusal.detail else ''}", location=self.where,
                             hint="check the model name and the key (not retried)") from None
        return self._back_off(attempt, f"HTTP {err.status_code}", refusal.retry_after_s)

    def _after_timeout(self, attempt: int, waited: float) -> int:
        """A timed-out request times out again: retry it once, then raise."""
        cap = self.config
        self.transcript.write("error", {"attempt": attempt, "class": "timeout", "waited_s": round(waited, 1)})
        if attempt >= min(1, cap.max_retries):  # a timed-out request times out again: retry once
            raise AgentError(f"timeout: the endpoint sent no reply within {cap.timeout_s:g} s "
                             f"({attempt + 1} attempt(s), {waited:.1f} s on the last)", location=self.where,
                             hint="the server is too slow for provider.timeout_s: lower provider.max_tokens, "
                                  "set provider.stream: true, or raise provider.timeout_s") from None
        return self._back_off(attempt, f"timeout after {waited:.0f} s", None)

    def _back_off(self, attempt: int, what: str, retry_after_s: float | None) -> int:
        cap = self.config
        if attempt >= cap.max_retries:
            raise AgentError(f"endpoint failed after {attempt + 1} attempts: {what}", location=self.where,
                             hint="check the server, or raise provider.max_retries")
        delay_s = cap.backoff_s * 2 ** attempt
        if retry_after_s is not None:
            delay_s = min(max(delay_s, retry_after_s), MAX_WAIT_S)
        self._notify(f"retrying ({attempt + 1}/{cap.max_retries}) in {delay_s:g} s: {what}")
        self._sleep(delay_s)
        return attempt + 1

    def _lower_structured(self, refusal: Refusal) -> None:
        """The server cannot serve a schema (or JSON mode): ask in the prompt from now on."""
        before, self.structured = self.structured, "prompt"
        self._notify(f"the endpoint refused `{refusal.field}` (HTTP {refusal.status}); asking for JSON in the prompt "
                     f"from now on (set provider.structured_output: prompt to skip this)")
        self.transcript.write("capability", {"structured_output": {"from": before, "to": "prompt"},
                                             "refusal": refusal.detail[:300]})

    def _send(self, body: dict) -> Reply:
        if self.config.stream:
            return self._stream(body)
        reply = self.client.chat.completions.create(**body)
        usage = getattr(reply, "usage", None)
        choices = getattr(reply, "choices", None)
        message = getattr(choices[0], "message", None) if isinstance(choices, list) and choices else None
        self._record_usage(body, usage)
        if message is None or not hasattr(message, "tool_calls"):
            raise AgentError("the endpoint returned no usable choice", location=self.where,
                             hint="check that the server speaks chat completions")
        record = message.model_dump(exclude_none=True)
        self.transcript.write("reply", record)
        self.transcript.write("usage", self.budget.total_usage())
        return Reply(message.content or "", [ToolCall.of(c) for c in message.tool_calls or []],
                     str(getattr(choices[0], "finish_reason", "") or ""), record)

    def _stream(self, body: dict) -> Reply:
        stream = self.client.chat.completions.create(**body, stream=True, stream_options={"include_usage": True})
        text: list[str] = []
        calls: dict[int, dict] = {}
        finish, usage = "", None
        started = last = time.monotonic()
        for chunk in stream:
            usage = getattr(chunk, "usage", None) or usage
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is not None and delta.content:
                    text.append(delta.content)
                for part in (delta.tool_calls or []) if delta is not None else []:
                    slot = calls.setdefault(part.index or 0, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = part.id or slot["id"]
                    if part.function is not None:
                        slot["name"] += part.function.name or ""
                        slot["arguments"] += part.function.arguments or ""
                finish = choice.finish_reason or finish
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY_S:
                last = now
                self._notify(f"model writing: {sum(map(len, text)) + sum(len(c['arguments']) for c in calls.values())}"
                             f" chars in {now - started:.0f} s")
        self._record_usage(body, usage, fallback_chars=sum(map(len, text)))
        tool_calls = [ToolCall(c["id"] or f"call_{i}", "function", c["name"], c["arguments"]) for i, c in sorted(calls.items())]
        record = {"role": "assistant", "content": "".join(text), "streamed": True,
                  **({"tool_calls": [{"id": c.id, "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in tool_calls]} if tool_calls else {})}
        self.transcript.write("reply", record)
        self.transcript.write("usage", self.budget.total_usage())
        return Reply("".join(text), tool_calls, finish, record)

    def _record_usage(self, body: dict, usage: Any, fallback_chars: int = 0) -> None:
        """Count the reply's tokens (estimated as characters / 4 when the server reports none)."""
        prompt_tokens = _tokens(usage, "prompt_tokens")
        completion_tokens = _tokens(usage, "completion_tokens")
        self.budget.record(_estimate(body) if prompt_tokens is None else prompt_tokens,
                           fallback_chars // 4 if completion_tokens is None else completion_tokens)

    def _refuse_oversized(self, err: ReplyTooLarge) -> NoReturn:
        """Record the head and size of a reply refused over the byte cap, then end the run."""
        self.transcript.write("error", {"retryable": False, "error": str(err), "reply_bytes": err.size,
                                        "bytes_read": err.read, "cap_bytes": err.cap,
                                        "head": err.head.decode("utf-8", errors="replace")})
        raise AgentError(str(err), location=self.where,
                         hint="the rest of the reply was not read; raise provider.max_reply_bytes if the "
                              "server is right") from None


def _trim(messages: list[dict]) -> bool:
    """Drop the oldest tool result still in `messages` (after the prompt); False when none is left."""
    for message in messages[2:]:
        text_results = message.get("role") == "user" and str(message.get("content", "")).startswith(TEXT_RESULTS)
        if message.get("role") == "tool" or text_results:
            if message.get("content") not in (DROPPED_RESULT, f"{TEXT_RESULTS}\n{DROPPED_RESULT}"):
                message["content"] = f"{TEXT_RESULTS}\n{DROPPED_RESULT}" if text_results else DROPPED_RESULT
                return True
    return False


def _field_hint(field_name: str) -> str:
    if field_name == "tools":
        return "the server or model cannot take tools: use a model that can, or a server started with tool support"
    if field_name == "tool_choice":
        return "the server needs its tool-call options (vLLM: --enable-auto-tool-choice --tool-call-parser hermes)"
    if field_name in ("max_tokens", "max_completion_tokens"):
        return "lower provider.max_tokens"
    return "not retried: the same request would be refused again"


def _text(response: Any) -> str:
    try:
        return response.text
    except Exception:  # noqa: BLE001 - a body we cannot read is just no detail
        return ""


def _tokens(usage: Any, name: str) -> int | None:
    value = getattr(usage, name, None) if usage is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _estimate(body: dict) -> int:
    """Input tokens estimated as characters / 4 when the server reports no usage."""
    return len(json.dumps(body["messages"])) // 4
