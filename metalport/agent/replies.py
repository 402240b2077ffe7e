"""Reading what real models write: tool calls left in the text, answers wrapped in fences and prose.

Small open models served by llama.cpp, Ollama or `transformers serve` often return no OpenAI
`tool_calls` at all: they write the call into `content`, as bare JSON, in a ```json fence, or between
`<tool_call>` tags (the Qwen/Hermes chat templates), sometimes several in one reply and with prose
around them. Structured answers come back the same way. These functions find that JSON; what is
found is still only data, checked by the tool box and the schema like any other call or answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.S)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
_NAME_KEYS = ("name", "tool", "function")
_ARG_KEYS = ("arguments", "parameters", "args", "input")


@dataclass(frozen=True)
class TextToolCall:
    """A tool call found in a reply's text: the tool's name, its arguments as a JSON string, and
    how it was written (`tagged`, `fenced` or `bare`)."""

    name: str
    arguments: str
    form: str


def json_objects(text: str) -> Iterator[tuple[int, int, object]]:
    """Every top-level JSON value that starts with `{` or `[` in `text`, as (start, end, value), left
    to right; text that is not JSON is skipped."""
    decoder = json.JSONDecoder()
    i = 0
    while True:
        starts = [p for p in (text.find("{", i), text.find("[", i)) if p >= 0]
        if not starts:
            return
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            i = start + 1
            continue
        yield start, end, value
        i = end


def _as_call(value: object, names: frozenset[str]) -> tuple[str, str] | None:
    """(name, arguments JSON) when `value` reads as a call of one of `names`."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # {"type": "function", "function": {...}}
        return _as_call(value["function"], names)
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if name not in names:
        return None
    extra = set(value) - {*_NAME_KEYS, *_ARG_KEYS, "type", "id"}
    if extra:
        return None
    args = next((value[k] for k in _ARG_KEYS if k in value), {})
    if isinstance(args, str):
        return name, args  # already a JSON string (or not: the tool box says so)
    return name, json.dumps(args)


def _calls_in(text: str, names: frozenset[str]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for _, _, value in json_objects(text):
        for item in value if isinstance(value, list) else [value]:
            call = _as_call(item, names)
            if call:
                found.append(call)
    return found


def tool_calls_in_text(text: str, names: Iterable[str]) -> list[TextToolCall]:
    """The calls of known tools written in `text`: `<tool_call>` blocks first, else fenced blocks,
    else bare JSON objects. A JSON object whose name is not a known tool is not a call (it may be
    the answer), so an answer is never mistaken for a call."""
    known = frozenset(names)
    tagged = [TextToolCall(n, a, "tagged") for block in _TAGGED.findall(text) for n, a in _calls_in(block, known)]
    if tagged:
        return tagged
    fenced = [TextToolCall(n, a, "fenced") for _, body in _FENCE.findall(text) for n, a in _calls_in(body, known)]
    if fenced:
        return fenced
    return [TextToolCall(n, a, "bare") for n, a in _calls_in(text, known)]


def answer_json(text: str) -> str:
    """The JSON text of a structured answer inside `text`: the text itself when it parses; else the
    first fenced block that parses to an object; else the largest JSON object in the prose around
    it; else `text` unchanged (so the schema's error names what is wrong)."""
    stripped = text.strip()
    try:
        json.loads(stripped)
        return stripped
    except json.JSONDecodeError:
        pass
    for _, body in _FENCE.findall(text):
        try:
            if isinstance(json.loads(body), dict):
                return body.strip()
        except json.JSONDecodeError:
            continue
    objects = [(end - start, text[start:end]) for start, end, value in json_objects(text) if isinstance(value, dict)]
    return max(objects)[1] if objects else text
