"""Iterator bodies (Note [iterator bodies], port/bodies.py) on the pre-port activation files over the
real tree: log_sigmoid_forward/backward keep their `MPS:` rows and their MPSGraph bodies become
TensorIterator launches of a functor in ActivationKernel.metal; conformance judges them as the host's
iterator sees them (Note [iterator operands]) and fails plausible bugs; glu_backward, whose grad_output
is half of self, is refused that shape with the reason."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.checks.conformance import op_conformance
from metalport.port.port import apply_port, plan_port

HOST = "aten/src/ATen/native/mps/operations/Activation.mm"
KERNELS = "aten/src/ATen/native/mps/kernels/ActivationKernel.metal"
FORWARD = """struct log_sigmoid_forward_functor {
  template <typename T>
  inline T operator()(const T x) {
    const float v = float(x);
    return static_cast<T>(%s);
  }
};
"""
BACKWARD = """struct log_sigmoid_backward_functor {
  template <typename T>
  inline T operator()(const T grad_output, const T self) {
    const float z = ::metal::exp(-::metal::abs(float(self)));
    const float t = z / (1.0f + z);
    return static_cast<T>(float(grad_output) * (%s));
  }
};
"""
STABLE = "::metal::min(v, 0.0f) - ::c10::metal::log1p(::metal::exp(-::metal::abs(v)))"
RIGHT_SLOPE = "float(self) < 0.0f ? 1.0f - t : t"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.graph.activation_tree import activation_tree

    return activation_tree(tmp_path_factory.mktemp("activation") / "tree")


def _clone(base: Path, tmp_path: Path) -> Path:
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(base), str(work)], check=True, capture_output=True, timeout=300)
    return work


def _ported(base: Path, tmp_path: Path, forward: str, slope: str) -> Path:
    work = _clone(base, tmp_path)
    apply_port(plan_port(Checkout(work), "aten::log_sigmoid_forward"), work, functor_source=FORWARD % forward)
    apply_port(plan_port(Checkout(work), "aten::log_sigmoid_backward"), work, functor_source=BACKWARD % slope)
    return work


def test_log_sigmoid_keeps_its_rows_and_plans_iterator_bodies(base: Path) -> None:
    forward = plan_port(Checkout(base), "aten::log_sigmoid_forward")
    assert forward.kind == "iterator-bodies" and forward.rows == () and forward.legacy is None
    assert forward.host_file == HOST and forward.kernel_file == KERNELS and forward.host_family == "unary"
    assert forward.registrations == tuple(f"REGISTER_UNARY_OP(log_sigmoid_forward, {t}, {t});"
                                          for t in ("float", "half", "bfloat"))
    assert [b[1] for b in forward.bodies] == ["log_sigmoid_forward_out_mps"]
    assert "buffer returned as given" in forward.placement[0]
    backward = plan_port(Checkout(base), "aten::log_sigmoid_backward")
    assert backward.host_family == "binary" and "buffer not read" in backward.placement[0]
    assert ".add_output(grad_input).add_input(grad_output).add_input(self)" in backward.bodies[0][2]


def test_glu_backward_is_refused_iterator_bodies_with_the_reason(base: Path) -> None:
    plan = plan_port(Checkout(base), "aten::glu_backward")
    assert plan.kind == "custom-kernel" and plan.bodies == ()
    assert "not iterator bodies" in (plan.kind_reason or "")
    assert "refuses tensors of one shape" in (plan.kind_reason or "")


def test_upstreams_log_sigmoid_passes_and_is_judged_as_the_iterator_sees_it(base: Path, tmp_path: Path) -> None:
    work = _ported(base, tmp_path, STABLE, RIGHT_SLOPE)
    host = (work / HOST).read_text()
    assert 'lib.exec_unary_kernel(iter, "log_sigmoid_forward");' in host
    assert "std::tuple<Tensor&, Tensor&> log_sigmoid_forward_out_mps(" in host  # the row's function stays
    forward = op_conformance(work, "aten::log_sigmoid_forward", backend="emulated", seed=5)
    assert forward.status == "pass", forward.reason
    assert "not judged: buffer (returned as given)" in (forward.reason or "")
    backward = op_conformance(work, "aten::log_sigmoid_backward", backend="emulated", seed=5)
    assert backward.status == "pass", backward.reason
    assert "buffer from log_sigmoid_forward's return 1" in (backward.reason or "")


@pytest.mark.parametrize(("forward", "slope", "failing"), [
    ("::metal::log(1.0f / (1.0f + ::metal::exp(-v)))", RIGHT_SLOPE, "aten::log_sigmoid_forward"),  # overflows
    (STABLE, "float(self) < 0.0f ? t : 1.0f - t", "aten::log_sigmoid_backward"),  # sigmoid(x) for sigmoid(-x)
])
def test_plausible_log_sigmoid_bugs_fail(base: Path, tmp_path: Path, forward: str, slope: str, failing: str) -> None:
    work = _ported(base, tmp_path, forward, slope)
    report = op_conformance(work, failing, backend="emulated", seed=7)
    assert report.status == "fail", report.reason
