import math

import torch

from metalport.checks.tolerances import Tolerance, mismatch, tolerance_for


def test_defaults_follow_assert_close():
    assert tolerance_for("aten::neg", torch.float32) == Tolerance(1e-5, 1.3e-6)
    assert tolerance_for("neg", torch.int32) == Tolerance(0.0, 0.0)


def test_fp16_low_precision_and_overrides():
    assert tolerance_for("aten::add.Tensor", torch.float16) == Tolerance(1e-2, 1e-2)
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
