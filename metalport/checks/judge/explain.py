"""`metalport conformance --explain`: one failing element of a case laid out for a reviewer.

For a failing case the explanation names the input, torch CPU's value, the truth's (the op in
float64, or mpmath where refined), the kernel's output and which part of the acceptance standard
the element broke: the judgement's own `rule` (Note [the oracle]), never read off the op's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the report imports Explanation; torch loads only when an element is explained
    import torch


@dataclass(frozen=True)
class Explanation:
    """One failing element: where, its inputs, and the four values with the part of the standard broken."""

    case: str  # the case label and call
    element: int
    inputs: tuple[str, ...]  # one per operand ("?" where the operand is not elementwise to the output)
    kernel: str
    cpu: str
    truth: str
    rule: str

    def lines(self) -> list[str]:
        """The explanation as indented lines under a FAIL line."""
        elementwise = self.inputs and any(i != "?" for i in self.inputs)
        shown = f"({', '.join(self.inputs)})" if elementwise else \
            f"output element {self.element} (no single input element: a reduction, window or gather)"
        return [f"  case:   {self.case}", f"  input:  {shown}", f"  CPU:    {self.cpu}", f"  truth:  {self.truth}",
                f"  kernel: {self.kernel}", f"  broke:  {self.rule}"]

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "element": self.element, "inputs": list(self.inputs), "kernel": self.kernel,
                "cpu": self.cpu, "truth": self.truth, "rule": self.rule}


def _shown(t: torch.Tensor | None, idx: int) -> str:
    return "n/a" if t is None or t.numel() <= idx else repr(t.reshape(-1)[idx].item())


def _elementwise(op: torch.Tensor, out: torch.Tensor) -> torch.Tensor | None:
    import torch

    try:
        if torch.broadcast_shapes(op.shape, out.shape) == out.shape:
            return op.expand(out.shape).reshape(-1)
    except RuntimeError:
        pass
    return None


def explain(case: str, output: torch.Tensor, cpu: torch.Tensor, truth: torch.Tensor | None, bad: torch.Tensor,
            operands: Sequence[torch.Tensor], rule: str) -> Explanation | None:
    """The first bad element of `output` explained (`rule`: the one the judgement says it broke), or
    None when none is bad."""
    flat = bad.reshape(-1)
    if not bool(flat.any()):
        return None
    idx = int(flat.nonzero()[0])
    inputs = []
    for op in operands:
        col = _elementwise(op, output)
        inputs.append("?" if col is None else repr(col[idx].item()))
    return Explanation(case, idx, tuple(inputs), _shown(output, idx), _shown(cpu, idx), _shown(truth, idx), rule)


__all__ = ["Explanation", "explain"]
