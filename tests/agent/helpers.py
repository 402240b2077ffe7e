"""Builders for agent tests: a worktree with a kernel file, a toolbox and a provider on a server."""

from __future__ import annotations

from pathlib import Path

from metalport.agent.budget import Budget
from metalport.budget_limits import BudgetLimits, Price
from metalport.agent.openai_provider import OpenAIProvider, make_client
from metalport.agent.tools import ToolBox
from metalport.agent.transcript import Redactor, Transcript
from metalport.config import AgentConfig, ProviderConfig

KERNEL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
KERNEL_TEXT = """#include <c10/metal/indexing.h>
using namespace c10::metal;

struct copysign_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return ::metal::copysign(a, b);
  }
};

REGISTER_BINARY_OP(copysign, float, float);
"""
SECRET = "sk-test-SECRETVALUE-0123456789"


class Checks:
    """Scripted check/conformance results: the kernel passes once it mentions `fixed`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls = 0

    def check(self) -> dict:
        self.calls += 1
        text = (self.root / KERNEL).read_text()
        if "fixed" in text:
            return {"ok": True, "diagnostics": []}
        return {"ok": False, "diagnostics": [{"file": KERNEL, "line": 7, "message": "wrong branch"}]}

    def conformance(self) -> dict:
        return {"ok": "fixed" in (self.root / KERNEL).read_text(), "passed": 10, "failed": 0}


def make_tree(root: Path) -> Path:
    (root / KERNEL).parent.mkdir(parents=True)
    (root / KERNEL).write_text(KERNEL_TEXT)
    (root / "README.txt").write_text("notes\n")
    return root


def make_toolbox(root: Path, *, max_result_chars: int = 8000,
                 allowed: tuple[str, ...] = (KERNEL,)) -> tuple[ToolBox, Checks]:
    checks = Checks(root)
    box = ToolBox(root, allowed, check=checks.check, conformance=checks.conformance,
                  show_op=lambda op: {"ok": True, "op": op, "rows": [f"{op}.out: MPS: {op}_out_mps"]},
                  show_examples=lambda family: {"ok": True, "family": family, "examples": [KERNEL_TEXT]},
                  redactor=Redactor(values=[SECRET]), max_result_chars=max_result_chars)
    return box, checks


def make_provider(base_url: str, tmp_path: Path, *, limits: BudgetLimits | None = None,
                  max_retries: int = 3, timeout_s: float = 5.0, **provider: object) -> OpenAIProvider:
    config = AgentConfig(provider=ProviderConfig(model="scripted-model", base_url=base_url,
                                                 timeout_s=timeout_s, max_retries=max_retries,
                                                 backoff_s=0.0, **provider),
                         prices={"scripted-model": Price(1.0, 2.0)}, budget=limits or BudgetLimits())
    client = make_client(config, key=SECRET)
    transcript = Transcript(tmp_path / "transcript.jsonl", Redactor(values=[SECRET]))
    return OpenAIProvider(config, client, Budget(config.budget, config.price()), transcript,
                          sleep=lambda s: None)
