"""A NaN operand's value that torch CPU takes from the element before it is no truth (Note [a value its
neighbours wrote], checks/judge/neighbours.py): the oracle's truth there is NaN, so upstream's kernel
giving NaN passes, a kernel giving a number fails, and a defined number (fmax(NaN, 1)) stays required."""

from __future__ import annotations

import math

import pytest
import torch

from metalport.checks.cases.case import Case
from metalport.checks.cases.samples import Call
from metalport.checks.conformance import _truths
from metalport.checks.host.runner import Prepared, references
from metalport.checks.judge.neighbours import probe_calls, undefined_by_neighbours
from metalport.checks.judge.outputs import judge_outputs
from metalport.checks.judge.tolerances import tolerance_for

NAN = math.nan


def _leftover(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """A loop whose result variable a NaN operand leaves unassigned: the previous element's value."""
    out, left = torch.empty_like(x), torch.zeros((), dtype=x.dtype)
    for k in range(x.numel()):
        if torch.isnan(x[k]):
            out[k] = left
        else:
            left = x[k] * n[k] + 1.0
            out[k] = left
    return out


def _call(func, *operands) -> Call:
    return Call(func, tuple(operands), {}, tuple(range(len(operands))), None)


def _moved(call: Call) -> list[bool]:
    expected = call.run()
    truth = call.with_operands([o.double() for o in call.operands()]).run()
    probe = probe_calls(call, expected)
    if probe is None:
        return [False] * expected.numel()
    return undefined_by_neighbours(probe, expected, truth, references(list(probe.calls))).tolist()


def test_a_value_left_by_the_element_before_is_found() -> None:
    x = torch.tensor([0.5, NAN, 2.0, NAN, 3.0])
    n = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    assert _moved(_call(_leftover, x, n)) == [False, True, False, True, False]


def test_torch_cpus_chebyshev_at_nan_is_found_and_defined_numbers_are_not() -> None:
    x = torch.tensor([0.3, NAN, 0.7, NAN, 1.0])
    n = torch.tensor([3.0, 2.5, 4.0, 5.0, 1.0])
    cheb = torch.ops.aten.special_chebyshev_polynomial_u.default
    if torch.isnan(cheb(x, n)[1]):
        pytest.skip("this torch's chebyshev_polynomial_u gives NaN for a NaN x: nothing is left over")
    assert _moved(_call(cheb, x, n)) == [False, True, False, True, False]
    ones = torch.ones(5)
    assert not any(_moved(_call(torch.ops.aten.fmax.default, x, ones)))
    assert not any(_moved(_call(torch.ops.aten.nan_to_num.default, x)))
    inf = torch.tensor([math.inf] * 5)
    assert not any(_moved(_call(torch.ops.aten.hypot.default, inf, x)))


def test_a_kernel_giving_nan_there_passes_and_one_giving_a_number_fails() -> None:
    x = torch.tensor([0.5, NAN, 2.0, NAN, 3.0, -1.0])
    n = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    call = _call(_leftover, x, n)
    expected = call.run()
    truths = _truths([Case("nan paired", call, "held-out")], [Prepared(None, torch.empty_like(expected), expected)])
    truth, cond, reached = truths[0]
    assert torch.isnan(truth[[1, 3]]).all() and torch.equal(truth[[0, 2, 4, 5]], expected[[0, 2, 4, 5]].double())
    tol = tolerance_for("mul", torch.float32)
    right = expected.clone()
    right[[1, 3]] = NAN
    assert judge_outputs((right,), (expected,), (tol,), "k", truths=(truth,), conds=(cond,), operands=(x, n)).problem is None
    wrong = expected.clone()
    wrong[3] = 1.0  # neither CPU's left-over value nor NaN
    judged = judge_outputs((wrong,), (expected,), (tol,), "k", truths=(truth,), conds=(cond,), operands=(x, n))
    assert judged.problem is not None and "(nan, 4.0)" in judged.problem


def test_a_defined_number_for_a_nan_operand_stays_required() -> None:
    x = torch.tensor([0.5, NAN, 2.0, NAN])
    ones = torch.ones(4)
    call = _call(torch.ops.aten.fmax.default, x, ones)
    expected = call.run()
    truth, cond, _ = _truths([Case("nan", call, "held-out")], [Prepared(None, torch.empty_like(expected), expected)])[0]
    assert torch.equal(truth, expected.double())
    propagated = expected.clone()
    propagated[1] = NAN
    judged = judge_outputs((propagated,), (expected,), (tolerance_for("fmax", torch.float32),), "k",
                           truths=(truth,), conds=(cond,), operands=(x, ones))
    assert judged.problem is not None


def test_a_call_whose_operands_are_not_laid_element_by_element_is_not_probed() -> None:
    x = torch.tensor([[NAN, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]] * 2)
    glu = _call(torch.ops.aten.glu.default, x, 0)  # output over halves: [4, 2] from [8, 2]
    assert probe_calls(glu, glu.run()) is None
    total = _call(torch.ops.aten.sum.default, x)
    assert probe_calls(total, total.run()) is None
