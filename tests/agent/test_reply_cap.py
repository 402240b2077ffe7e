"""A model reply is read with a byte cap: an oversized one is refused without being read whole,
and the transcript keeps a cut copy with the original size."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from metalport.agent.transcript import read_transcript
from metalport.errors import AgentError
from tests.agent.test_openai_provider import ANSWER, _functor
from tests.llm_server import Huge, json_reply, text_reply

SIXTY_MB = 60_000_000


@pytest.mark.parametrize("content_length", [True, False], ids=["content-length", "streamed-to-close"])
def test_a_60_mb_reply_is_refused_early_and_memory_stays_bounded(tmp_path: Path, content_length: bool) -> None:
    huge = Huge(SIXTY_MB, content_length=content_length)
    tracemalloc.start()
    try:
        with pytest.raises(AgentError) as err:
            _functor(tmp_path, [huge, json_reply(ANSWER)], timeout_s=30.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(err.value)
    assert "\n" not in message
    if content_length:
        assert "the endpoint's reply is 60000000 bytes, over the cap of 2000000 bytes" in message
    else:
        assert "the endpoint's reply is over " in message and "(cut off there), over the cap of 2000000" in message
    assert "the rest of the reply was not read" in message
    assert huge.sent < 12_000_000, f"the server got {huge.sent} bytes out: the client read on"
    assert peak < 24_000_000, f"peak Python memory {peak} bytes while refusing the reply"
    transcript = tmp_path / "transcript.jsonl"
    assert transcript.stat().st_size < 64_000
    errors = [e["data"] for e in read_transcript(transcript) if e["kind"] == "error"]
    assert errors[-1]["cap_bytes"] == 2_000_000 and errors[-1]["retryable"] is False
    assert errors[-1]["reply_bytes"] == (SIXTY_MB if content_length else None)
    if not content_length:
        assert errors[-1]["head"].startswith('{"id": "chatcmpl-huge"')
        assert 2_000_000 < errors[-1]["bytes_read"] < 12_000_000


def test_a_long_reply_under_the_caps_is_cut_in_the_transcript_with_its_size(tmp_path: Path) -> None:
    result, _, _ = _functor(tmp_path, [text_reply("y" * 30_000), json_reply(ANSWER)])
    assert result.summary == ANSWER["summary"]
    replies = [e["data"] for e in read_transcript(tmp_path / "transcript.jsonl") if e["kind"] == "reply"]
    assert replies[0]["content"] == "y" * 16_000 + "[... cut: 30000 chars in all]"
    assert (tmp_path / "transcript.jsonl").stat().st_mode & 0o777 == 0o600
