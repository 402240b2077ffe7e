"""A scripted OpenAI-protocol HTTP server on 127.0.0.1:0 for every LLM test.

`ScriptedLLM(script)` serves `/v1/chat/completions` from a list of steps, one per request, and
`/v1/models`; it records every request body. A step is a reply dict (see `text_reply`,
`tool_reply`), a `Status`, a `Raw` body, a `Huge` streamed body, a `Delay`, `DROP` (close the
connection without answering) or a callable taking the request body and returning one of those.
A reply dict is sent as server-sent events when the request asks to `stream` (as llama-server, vLLM
and Ollama do: content and tool-call arguments in pieces, usage in the last chunk).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.local_http import JsonHandler


@dataclass(frozen=True)
class Status:
    """Answer with an HTTP error status and an OpenAI-shaped error body."""

    code: int
    message: str = "scripted error"


@dataclass(frozen=True)
class Error:
    """Answer with an HTTP status, this exact error body (as a real server shapes it) and headers."""

    code: int
    body: Any
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Delay:
    """Sleep `seconds`, then serve `then` (a timeout when the client gives up first)."""

    seconds: float
    then: Any


@dataclass(frozen=True)
class Raw:
    """Answer with these exact bytes (garbage, truncated JSON, a wrong shape) and a status."""

    body: bytes
    status: int = 200


@dataclass
class Huge:
    """Stream a chat completion whose content is `size_bytes` of filler, in 64 KiB writes, with or
    without a Content-Length; `sent` counts the bytes the client took before it hung up."""

    size_bytes: int
    content_length: bool = True
    sent: int = 0

    def body_parts(self) -> tuple[bytes, int, bytes]:
        """The JSON before the filler, the filler's length and the JSON after it."""
        head = b'{"id": "chatcmpl-huge", "object": "chat.completion", "created": 0, "model": "scripted", ' \
               b'"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "'
        tail = b'"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}'
        return head, self.size_bytes - len(head) - len(tail), tail


DROP = object()


def usage(prompt_tokens: int, completion_tokens: int) -> dict:
    """An OpenAI `usage` object."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def text_reply(content: str, *, prompt_tokens: int = 100, completion_tokens: int = 20,
               finish_reason: str = "stop") -> dict:
    """A chat completion whose message is plain text (or JSON text)."""
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content}}],
            "usage": usage(prompt_tokens, completion_tokens)}


def json_reply(value: Any, **kwargs: Any) -> dict:
    """A chat completion whose content is `value` as JSON."""
    return text_reply(json.dumps(value), **kwargs)


def tool_reply(*calls: tuple[str, Any], prompt_tokens: int = 100, completion_tokens: int = 20) -> dict:
    """A chat completion calling tools; an argument that is not a str is JSON-encoded."""
    tool_calls = [{"id": f"call_{i}", "type": "function",
                   "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                  for i, (name, args) in enumerate(calls)]
    reply = text_reply("", prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                       finish_reason="tool_calls")
    reply["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return reply


class ScriptedLLM:
    """The server; use as a context manager. `requests` holds every chat request body in order."""

    def __init__(self, script: list[Any], models: tuple[str, ...] = ("scripted-model",)) -> None:
        self.script = list(script)
        self.models = models
        self.requests: list[dict] = []
        self.model_list_calls = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The `base_url` for the openai client (ends in /v1)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def prompt_text(self) -> str:
        """Every message content and tool result sent to the model, joined (for secret checks)."""
        return json.dumps(self.requests)

    def _next_step(self, body: dict) -> Any:
        with self._lock:
            self.requests.append(body)
            if not self.script:
                return Status(500, "script exhausted")
            step = self.script.pop(0)
        return step(body) if callable(step) else step

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/v1/models":
                    self.reply_json(404, {"error": {"message": "not found"}})
                    return
                owner.model_list_calls += 1
                self.reply_json(200, {"object": "list", "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in owner.models]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/v1/chat/completions":
                    self.reply_json(404, {"error": {"message": "not found"}})
                    return
                step = owner._next_step(body)
                while isinstance(step, Delay):
                    time.sleep(step.seconds)
                    step = step.then
                if step is DROP:
                    self.close_connection = True
                    self.connection.close()
                    return
                if isinstance(step, Raw):
                    self.reply_bytes(step.status, step.body)
                    return
                if isinstance(step, Huge):
                    self._stream_huge(step)
                    return
                if isinstance(step, Error):
                    data = json.dumps(step.body).encode() if not isinstance(step.body, bytes) else step.body
                    self.send_response(step.code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in step.headers:
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if isinstance(step, Status):
                    self.reply_json(step.code, {"error": {"message": step.message, "type": "scripted",
                                                     "code": str(step.code)}})
                    return
                if body.get("stream"):
                    self._stream_events(sse_chunks(step))
                    return
                self.reply_json(200, step)

            def _stream_events(self, chunks: list[dict]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                for c in chunks:
                    self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")

            def _stream_huge(self, step: Huge) -> None:
                head, filler, tail = step.body_parts()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if step.content_length:
                    self.send_header("Content-Length", str(step.size_bytes))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                chunk = b"x" * 65536
                try:
                    self.wfile.write(head)
                    step.sent = len(head)
                    while filler > 0:
                        part = chunk[:filler]
                        self.wfile.write(part)
                        step.sent += len(part)
                        filler -= len(part)
                    self.wfile.write(tail)
                    step.sent += len(tail)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

        return Handler


def sse_chunks(reply: dict, piece: int = 7) -> list[dict]:
    """`reply` as the chunks of a streamed completion: the content and each tool call's arguments in
    `piece`-character deltas, then the finish reason, then a chunk with only the usage."""
    message = reply["choices"][0]["message"]
    base = {"id": reply.get("id", "chatcmpl-s"), "object": "chat.completion.chunk", "created": 0,
            "model": reply.get("model", "scripted")}
    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    out = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    out += [chunk({"content": text[i:i + piece]}) for i in range(0, len(text), piece)]
    for n, call in enumerate(message.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": n, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        args = call["function"]["arguments"]
        out += [chunk({"tool_calls": [{"index": n, "function": {"arguments": args[i:i + piece]}}]})
                for i in range(0, len(args), piece)]
    out.append(chunk({}, reply["choices"][0].get("finish_reason") or "stop"))
    if reply.get("usage"):
        out.append({**base, "choices": [], "usage": reply["usage"]})
    return out


ScriptStep = dict | Status | Error | Raw | Huge | Delay | Callable[[dict], Any] | object
