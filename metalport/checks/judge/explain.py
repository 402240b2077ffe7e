"""`metalport conformance --explain`: one failing element of a case laid out for a reviewer.

For a failing case the explanation names the input, torch CPU's value, the truth's (the op in
float64, or mpmath where refined), the kernel's output and which part of the acceptance standard
the element broke. The part is the judgement's own `rule` when it names one; otherwise it is read
off the values (a NaN where the value is defined, a lost NaN, a wrong infinity, the sign of a zero,
an inexact integer, a value outside both tolerances), never off the op's name.
"""

from __future__ import annotations

import math
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


def _value(t: torch.Tensor | None, idx: int) -> Any:
    if t is None or t.numel() <= idx:
        return None
    return t.reshape(-1)[idx].item()


def _elementwise(op: torch.Tensor, out: torch.Tensor) -> torch.Tensor | None:
    import torch

    if op.numel() == out.numel() and op.shape == out.shape:
        return op.reshape(-1)
    try:
        if torch.broadcast_shapes(op.shape, out.shape) == out.shape:
            return op.expand(out.shape).reshape(-1)
    except RuntimeError:
        pass
    return None


def _is_nan(v: Any) -> bool:
    if isinstance(v, complex):
        return math.isnan(v.real) or math.isnan(v.imag)
    return isinstance(v, float) and math.isnan(v)


def _is_inf(v: Any) -> bool:
    if isinstance(v, complex):
        return math.isinf(v.real) or math.isinf(v.imag)
    return isinstance(v, float) and math.isinf(v)


def _neg_zero(v: Any) -> bool:
    return isinstance(v, float) and v == 0.0 and math.copysign(1.0, v) < 0


def derived_rule(kernel: Any, cpu: Any, truth: Any, integer: bool) -> str:
    """The part of the standard one element broke, read off its values (when the judgement names none)."""
    reference = truth if truth is not None else cpu
    if integer:
        return "exact: an integer or bool result must equal torch CPU's"
    if _is_nan(kernel) and not (_is_nan(cpu) or _is_nan(reference)):
        return "special values (IEEE 754): NaN where the result is defined"
    if not _is_nan(kernel) and _is_nan(cpu) and (truth is None or _is_nan(truth)):
        return "special values (IEEE 754): a NaN operand or invalid operation must give NaN"
    if _is_inf(kernel) or _is_inf(cpu) or _is_inf(reference):
        return "special values (IEEE 754 / C99 Annex G): an infinity where the value is finite, or the wrong one"
    if isinstance(kernel, float) and kernel == 0.0 and cpu == 0.0 and _neg_zero(kernel) != _neg_zero(cpu):
        return "signed zero: the sign of a zero result where torch CPU defines it"
    if isinstance(reference, float) and reference == math.floor(reference) and isinstance(kernel, float) \
            and kernel != reference and kernel == math.floor(kernel):
        return "exact where the op is exact: an integer-valued result off by a whole step"
    return "value: outside test_mps's tolerance of CPU and the dtype's tolerance of the truth"


def _shown(v: Any) -> str:
    return "n/a" if v is None else repr(v)


def explain(case: str, output: torch.Tensor, cpu: torch.Tensor, truth: torch.Tensor | None, bad: torch.Tensor,
            operands: Sequence[torch.Tensor] = (), rule: str | None = None) -> Explanation | None:
    """The first bad element of `output` explained, or None when none is bad."""
    flat = bad.reshape(-1)
    if not bool(flat.any()):
        return None
    idx = int(flat.nonzero()[0])
    inputs = []
    for op in operands:
        col = _elementwise(op, output)
        inputs.append("?" if col is None else repr(col[idx].item()))
    kernel, ref, true = _value(output, idx), _value(cpu, idx), _value(truth, idx)
    integer = not (output.is_floating_point() or output.is_complex())
    return Explanation(case, idx, tuple(inputs), _shown(kernel), _shown(ref), _shown(true),
                       rule or derived_rule(kernel, ref, true, integer))


__all__ = ["Explanation", "derived_rule", "explain"]
