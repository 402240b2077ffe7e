"""Shader code is host code here: secrets never reach it, and host-only C++ is refused.

Shader code compiled by the emulated tier runs as native code on this machine, and with
`--model openai:…` the model wrote part of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from metalport.emulate import compile_shader
from metalport.errors import CompileError

COPY = """
#include <metal_stdlib>

kernel void copy_one(device int* out [[buffer(0)]], constant int* inp [[buffer(1)]],
                     uint index [[thread_position_in_grid]]) {
  out[index] = inp[index];
}
"""


def test_the_kernel_worker_runs_without_secret_variables(monkeypatch: pytest.MonkeyPatch,
                                                         shader_cache: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-must-not-leak")
    monkeypatch.setenv("MY_SERVICE_PASSWORD", "hunter2")
    lib = compile_shader(COPY, cache_dir=shader_cache)
    out = torch.zeros(4, dtype=torch.int32)
    lib.copy_one(out, torch.arange(4, dtype=torch.int32), threads=4)
    assert out.tolist() == [0, 1, 2, 3]
    worker_pid = lib._worker._proc.pid  # the process that ran the kernel
    environ = Path(f"/proc/{worker_pid}/environ").read_bytes().split(b"\0")
    names = {entry.split(b"=", 1)[0] for entry in environ if entry}
    assert b"PATH" in names
    assert not names & {b"OPENAI_API_KEY", b"GITHUB_TOKEN", b"MY_SERVICE_PASSWORD"}


@pytest.mark.parametrize("line, snippet, message", [
    (3, 'extern "C" char* getenv(const char* name);', "'extern' is host-only C++"),
    (3, "#include <cstdlib>", "#include <cstdlib> is not a Metal or c10/metal header"),
    (6, '  out[index] = ::getenv ("HOME") != nullptr;', "'getenv(' is host-only C++"),
    (6, "  std::system(\"true\");", "'std::' is host-only C++"),
    (6, '  asm volatile("nop");', "'asm' is host-only C++"),
])
def test_host_only_cpp_is_refused_at_its_line(shader_cache: Path, line: int, snippet: str, message: str) -> None:
    body = ["#include <metal_stdlib>", "", "", "kernel void probe(device int* out [[buffer(0)]],",
            "                  uint index [[thread_position_in_grid]]) {", "", "}"]
    body[line - 1] = snippet
    with pytest.raises(CompileError) as err:
        compile_shader("\n".join(body) + "\n", filename="probe.metal", cache_dir=shader_cache)
    assert str(err.value).startswith(f"probe.metal:{line}:")
    assert message in str(err.value)


def test_words_in_comments_strings_and_names_are_not_refused(shader_cache: Path) -> None:
    source = COPY.replace("uint index", "uint index /* never call system() or std::getenv */") \
                 .replace("out[index] = inp[index];", "const int open_count = inp[index];  // \"extern\" words\n"
                          "  out[index] = open_count;")
    lib = compile_shader(source, cache_dir=shader_cache)
    out = torch.zeros(2, dtype=torch.int32)
    lib.copy_one(out, torch.tensor([7, 9], dtype=torch.int32), threads=2)
    assert out.tolist() == [7, 9]
