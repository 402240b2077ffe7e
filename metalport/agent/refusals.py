"""What an endpoint's error reply means for the next request: retry, change the request, or stop.

Real servers do not keep to OpenAI's status codes. llama-cpp-python answers HTTP 500
(`{"error": {"message": ..., "type": "internal_server_error", "param": null, "code": null}}`) for a
request it cannot serve at all, such as a `response_format` it does not know; retrying that spends
the budget on the same refusal. llama.cpp's `llama-server` reports a full context as
`exceed_context_size_error` (400, 500 in older builds) with `n_prompt_tokens` and `n_ctx`; vLLM as a
400 "This model's maximum context length is N tokens"; llama-cpp-python as 400 with code
`context_length_exceeded`; Ollama's OpenAI endpoint refuses tools with 400 "... does not support
tools". `classify` reads the status and the body and says which case a reply is.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from dataclasses import dataclass
from typing import Any

# Request fields a refusal may name; a reply naming one is about the request, not the server's health.
REQUEST_FIELDS = ("response_format", "json_schema", "json_object", "tool_choice", "tools", "max_tokens",
                  "max_completion_tokens", "stream_options", "stream", "temperature", "grammar", "parallel_tool_calls")
_STRUCTURED = frozenset({"response_format", "json_schema", "json_object", "grammar"})
_CONTEXT = re.compile(r"exceed_context_size|context_length_exceeded|maximum context length|exceeds? (?:the )?"
                      r"(?:available )?context (?:size|window|length)|context window|prompt is too long|"
                      r"too many tokens|n_ctx", re.I)
_UNAVAILABLE = re.compile(r"loading model|model is loading|unavailable|overloaded|try again", re.I)


@dataclass(frozen=True)
class Refusal:
    """One error reply, read: `kind` is `context` (the prompt does not fit), `field` (the server cannot
    serve a field of the request: not retried), `transient` (retry) or `other` (stop); `field` is the
    request field named; `retry_after_s` the server's Retry-After, if any; `detail` one line for people."""

    kind: str
    status: int | None
    field: str = ""
    retry_after_s: float | None = None
    detail: str = ""

    @property
    def structured_output(self) -> bool:
        """The refused field is the structured-output request (a schema or JSON mode)."""
        return self.field in _STRUCTURED


def error_text(body: Any, fallback: str = "") -> str:
    """The message of an error body in any of the shapes servers use, as one line."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            parts = [str(inner.get(k)) for k in ("message", "type", "code", "param") if inner.get(k) not in (None, "")]
            extra = [f"{k}={inner[k]}" for k in ("n_prompt_tokens", "n_ctx") if k in inner]
            text = "; ".join(parts + extra)
        else:
            text = str(inner)
        detail = body.get("detail")
        if detail and not text:
            text = json.dumps(detail) if not isinstance(detail, str) else detail
        return " ".join(text.split()) or fallback
    if isinstance(body, str):
        return " ".join(body.split())[:500] or fallback
    return fallback


def retry_after(headers: Any, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` (or `retry-after-ms`) header: seconds or an HTTP date."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def classify(status: int | None, body: Any, headers: Any = None) -> Refusal:
    """Read one error reply (HTTP status, parsed body, headers)."""
    text = error_text(body)
    wait = retry_after(headers)
    lowered = text.lower()
    if _CONTEXT.search(text):
        return Refusal("context", status, "messages", wait, text)
    if status in (429, 408) or (status == 503 and (wait is not None or _UNAVAILABLE.search(text) or not text)):
        return Refusal("transient", status, "", wait, text)
    named = next((f for f in REQUEST_FIELDS
                  if re.search(r"(?<![a-z_])" + f.replace("_", "[_ ]") + r"(?![a-z_])", lowered)), "")
    if status is not None and status >= 400 and named:
        return Refusal("field", status, named, wait, text)
    if status is not None and status >= 500:
        return Refusal("transient", status, "", wait, text)
    return Refusal("other", status, "", wait, text)
