"""Secrets never reach the Metal-on-CPU tier: compilers and kernel workers run without them.

Shader code compiled here runs as native code on the host, and with `--model openai:…` the model
wrote it, so a kernel must not be able to read the API key or the GitHub token.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from metalport.emulate import compile_shader

PROBE = """
#include <metal_stdlib>
extern "C" char* getenv(const char* name);

kernel void env_probe(device int* seen [[buffer(0)]], uint index [[thread_position_in_grid]]) {
  if (index == 0) {
    seen[0] = getenv("OPENAI_API_KEY") != nullptr;
    seen[1] = getenv("GITHUB_TOKEN") != nullptr;
    seen[2] = getenv("MY_SERVICE_PASSWORD") != nullptr;
    seen[3] = getenv("PATH") != nullptr;
  }
}
"""


def test_a_kernel_sees_no_secret_variables(monkeypatch: pytest.MonkeyPatch, shader_cache: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-must-not-leak")
    monkeypatch.setenv("MY_SERVICE_PASSWORD", "hunter2")
    lib = compile_shader(PROBE, cache_dir=shader_cache)
    seen = torch.full((4,), -1, dtype=torch.int32)
    lib.env_probe(seen, threads=1)
    assert seen.tolist() == [0, 0, 0, 1]
