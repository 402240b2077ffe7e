"""Reading tool calls and answers out of what small models write, and error replies of real servers."""

from __future__ import annotations

from metalport.agent.refusals import classify, retry_after
from metalport.agent.replies import answer_json, tool_calls_in_text

NAMES = ("read_file", "check", "finish")


def test_calls_in_text_in_every_form_and_only_known_tools() -> None:
    two = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.metal"}}\n</tool_call>\n' \
          '<tool_call>\n{"name": "check", "arguments": {}}\n</tool_call>'
    assert [(c.name, c.arguments, c.form) for c in tool_calls_in_text(two, NAMES)] == [
        ("read_file", '{"path": "a.metal"}', "tagged"), ("check", "{}", "tagged")]
    listed = '```json\n[{"name": "check", "parameters": {}}, {"name": "finish", "arguments": {"summary": "ok"}}]\n```'
    assert [c.name for c in tool_calls_in_text(listed, NAMES)] == ["check", "finish"]
    openai_shaped = 'Calling: {"type": "function", "function": {"name": "check", "arguments": "{}"}} now'
    assert [(c.name, c.form) for c in tool_calls_in_text(openai_shaped, NAMES)] == [("check", "bare")]
    assert tool_calls_in_text('{"name": "rm", "arguments": {}}', NAMES) == []
    # An answer that happens to have a `name` is not a call; half-written JSON is not a call either.
    assert tool_calls_in_text('{"name": "finish", "functor_source": "x", "summary": "y"}', NAMES) == []
    assert tool_calls_in_text('{"name": "check", "arguments": {', NAMES) == []


def test_answers_read_through_fences_and_prose() -> None:
    assert answer_json('Sure!\n```json\n{"a": 1}\n```\nDone.') == '{"a": 1}'
    assert answer_json('The answer is {"a": {"b": 2}} and {"c": 3}.') == '{"a": {"b": 2}}'
    assert answer_json("no json here") == "no json here"


def test_error_replies_are_classified_by_what_they_say() -> None:
    assert classify(500, {"error": {"message": "Unexpected token", "type": "server_error"}}).kind == "transient"
    schema = classify(500, {"error": {"message": "response_format type must be one of \"text\" or \"json_object\""}})
    assert (schema.kind, schema.field, schema.structured_output) == ("field", "response_format", True)
    assert classify(400, {"error": "model does not support tools"}).field == "tools"
    assert classify(400, {"detail": "Not Found"}).kind == "other"
    assert classify(503, {"error": {"message": "Loading model"}}).kind == "transient"
    assert retry_after({"retry-after": "7"}) == 7.0 and retry_after({"retry-after-ms": "1500"}) == 1.5
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0 and retry_after({}) is None
