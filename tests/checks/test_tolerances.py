import math

import torch

from metalport.checks.judge.tolerances import Tolerance, largest_error, mismatched, tolerance_for


def mismatch(actual: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> float | None:
    """The worst error when any element is out of tolerance (test_mps's comparison), else None."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return math.inf
    return largest_error(actual, expected) if bool(mismatched(actual, expected, tol).any()) else None


def test_defaults_follow_assert_close():
    assert tolerance_for("aten::neg", torch.float32) == Tolerance(1e-5, 1.3e-6)
    assert tolerance_for("neg", torch.int32) == Tolerance(0.0, 0.0)


def test_fp16_low_precision_and_overrides():
    assert tolerance_for("aten::add.Tensor", torch.float16) == Tolerance(2e-2, 1e-2)
    assert tolerance_for("aten::add.Tensor", torch.bfloat16) == Tolerance(5e-2, 5e-2)
    assert tolerance_for("aten::add.Tensor", torch.float32) == Tolerance(1e-5, 1.3e-6)
    assert tolerance_for("aten::pow.Tensor_Tensor", torch.float32) == Tolerance(1e-6, 4e-6)


def test_match_within_tolerance():
    e = torch.tensor([1.0, float("nan"), float("inf"), -2.0])
    a = e.clone()
    a[0] += 1e-7
    assert mismatch(a, e, tolerance_for("neg", torch.float32)) is None


def test_nan_position_and_inf_and_error_are_caught():
    tol = tolerance_for("neg", torch.float32)
    e = torch.tensor([1.0, float("nan"), float("inf")])
    assert mismatch(torch.tensor([float("nan"), 1.0, float("inf")]), e, tol) == math.inf
    assert mismatch(torch.tensor([1.0, float("nan"), -float("inf")]), e, tol) == math.inf
    worst = mismatch(torch.tensor([1.5, float("nan"), float("inf")]), e, tol)
    assert worst == 0.5


def test_integer_exact_and_shape():
    tol = tolerance_for("bitwise_xor", torch.uint8)
    e = torch.tensor([0, 255], dtype=torch.uint8)
    assert mismatch(e.clone(), e, tol) is None
    assert mismatch(torch.tensor([1, 255], dtype=torch.uint8), e, tol) == 1.0
    assert mismatch(e[:1], e, tol) == math.inf


def test_mismatch_text_is_right_when_the_expected_value_is_infinite() -> None:
    from metalport.checks.judge.outputs import judge_outputs

    tol = tolerance_for("neg", torch.float32)
    e = torch.tensor([1.0, float("inf"), -float("inf"), 2.0])
    a = torch.tensor([1.0, 3.0e38, -float("inf"), 2.0])
    assert mismatch(a, e, tol) == math.inf
    problem = judge_outputs([a], [e], [tol], "neg_dense_float", named=False).problem
    assert problem is not None and problem.startswith("1 of 4 elements wrong; at output element 1 kernel "
                                                      "3.0000000054977558e+38, CPU inf"), problem


def test_opinfo_precision_overrides_raise_the_floor() -> None:
    from metalport.checks.cases.samples import find_opinfo

    plain = tolerance_for("acos", torch.complex64)
    raised = tolerance_for("acos", torch.complex64, find_opinfo("acos"))
    assert plain == Tolerance(1e-5, 1.3e-6) and raised == Tolerance(1e-2, 1.3e-6)


def test_strict_judges_small_magnitudes_relatively() -> None:
    from metalport.checks.judge.tolerances import strict

    tol = strict(tolerance_for("log1p", torch.float32), torch.float32)
    x = torch.tensor([1e-7, -3e-9], dtype=torch.float32)
    assert mismatch(torch.log1p(x), torch.log1p(x), tol) is None
    assert mismatch(torch.log(1 + x), torch.log1p(x), tol) is not None  # the cancellation bug
    assert mismatch(torch.log(1 + x), torch.log1p(x), tolerance_for("log1p", torch.float32)) is None
