"""Redaction of secrets in transcripts."""

from __future__ import annotations

from pathlib import Path

from metalport.agent.transcript import Redactor, Transcript, read_transcript


def test_secret_env_values_and_key_shapes_are_redacted(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "plainkeyvalue", "MY_VAULT": "hunter2-long", "PATH": "/usr/bin"}
    redactor = Redactor(secret_env=["MY_VAULT"], environ=env)
    transcript = Transcript(tmp_path / "run" / "t.jsonl", redactor)
    transcript.write("request", {"messages": [
        {"content": "key plainkeyvalue vault hunter2-long path /usr/bin"},
        {"content": "ghp_abcdefghijklmnopqrstuvwx and sk-proj-abcdefghijkl and Bearer abc.def.ghi.jkl"}],
        "api_key": "whatever"})
    text = (tmp_path / "run" / "t.jsonl").read_text()
    for secret in ("plainkeyvalue", "hunter2-long", "ghp_abc", "sk-proj", "abc.def", "whatever"):
        assert secret not in text
    event = read_transcript(tmp_path / "run" / "t.jsonl")[0]
    assert event["kind"] == "request" and "/usr/bin" in event["data"]["messages"][0]["content"]


def test_no_path_writes_nothing(tmp_path: Path) -> None:
    Transcript(None, Redactor(environ={})).write("reply", {"x": 1})
    assert list(tmp_path.iterdir()) == []
