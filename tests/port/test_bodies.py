"""Iterator bodies (Note [iterator bodies], port/plan/bodies.py) on the pre-port activation files over the
real tree: log_sigmoid_forward/backward keep their `MPS:` rows and their MPSGraph bodies become
TensorIterator launches of a functor in ActivationKernel.metal; conformance judges them as the host's
iterator sees them (Note [iterator operands]) and fails plausible bugs; glu_backward, whose grad_output
is half of self, keeps its row too, its body one launch of a kernel over the halves (Note [grad over
halves], port/write/halves.py), judged as that host launches it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.checks.conformance import op_conformance
from metalport.port.plan.planner import apply_port, plan_port

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


def test_glu_backward_keeps_its_row_and_launches_one_kernel_over_the_halves(base: Path) -> None:
    plan = plan_port(Checkout(base), "aten::glu_backward")
    assert plan.kind == "iterator-bodies" and plan.rows == () and plan.host_family == "halves"
    assert plan.registrations == tuple(f"REGISTER_HALVES_BACKWARD_OP(glu_backward, {t});"
                                       for t in ("float", "half", "bfloat"))
    assert [b[1] for b in plan.bodies] == ["glu_backward_mps_out"]
    assert "grad_output of half self's shape along dim" in plan.placement[0]
    body = plan.bodies[0][2]
    assert ".add_output(grad_input)" in body and ".declare_static_shape(half_shape)" in body
    assert '"glu does not support 0-dimensional tensors"' in body  # the old body's own message


# Note [grad over halves]: grads of (a, b) at one position from a, b = the halves of self, g = grad_output
GLU_BACKWARD = """struct glu_backward_functor {
  template <typename T>
  inline vec2type_t<T> operator()(const T a, const T b, const T grad) {
    const float x = float(b);
    const float h = ::metal::precise::exp(-0.5f * ::metal::abs(x));
    const float d = 1.0f + h * h;
    const float g = float(grad);
    const float first = x >= 0.0f ? g / d : (g * h) * h / d;
    return {static_cast<T>(%s), static_cast<T>(%s)};
  }
};
"""
FIRST, SECOND = "first", "(g * h) * (float(a) * h) / (d * d)"


def _glu_backward(base: Path, tmp_path: Path, first: str, second: str) -> Path:
    work = _clone(base, tmp_path)
    apply_port(plan_port(Checkout(work), "aten::glu_backward"), work, functor_source=GLU_BACKWARD % (first, second))
    return work


def test_a_right_glu_backward_passes_as_its_host_launches_it(base: Path, tmp_path: Path) -> None:
    work = _glu_backward(base, tmp_path, FIRST, SECOND)
    host = (work / HOST).read_text()
    assert 'lib.getPipelineStateForFunc(fmt::format("glu_backward_halves_{}"' in host
    assert 'lib.getPipelineStateForFunc(fmt::format("glu_backward_dense_{}"' in host  # the contiguous path
    assert "mtl_dispatch2DJob(encoder, pso, run, rows);" in host
    assert "REGISTER_HALVES_BACKWARD_OP(glu_backward, half);" in (work / KERNELS).read_text()
    report = op_conformance(work, "aten::glu_backward", backend="emulated", seed=11)
    assert report.status == "pass", report.reason
    summary = report.summary_for_model()
    assert "glu_backward(float32[" in summary and "opinfo 0/0" not in summary  # judged on glu's samples


@pytest.mark.parametrize("kernel", ["halves_backward_dense", "halves_backward"])
def test_a_wrong_second_half_store_fails_on_the_path_that_has_it(base: Path, tmp_path: Path, kernel: str) -> None:
    # both host paths are judged: the contiguous one (samples' `x.chunk(2, dim)`) and the strided one
    work = _glu_backward(base, tmp_path, FIRST, SECOND)
    text = (work / KERNELS).read_text()
    start = text.index(f"kernel void {kernel}(")
    end = text.index("\n}\n", start)
    body = text[start:end]
    wrong = body.replace("= grads.y;", "= grads.x;")
    assert wrong != body
    (work / KERNELS).write_text(text[:start] + wrong + text[end:])
    report = op_conformance(work, "aten::glu_backward", backend="emulated", seed=5)
    assert report.status == "fail", report.reason
    if kernel.endswith("dense"):  # OpInfo samples take it, so a shown failure names it
        assert "glu_backward_dense_" in report.summary_for_model()


@pytest.mark.parametrize(("first", "second"), [
    (FIRST, "(g * h) * h / (d * d)"),  # the second half's gradient without a
    (SECOND, FIRST),  # the halves' gradients swapped
    (FIRST, "0.0f"),  # the second half left unwritten in effect
])
def test_plausible_glu_backward_bugs_fail(base: Path, tmp_path: Path, first: str, second: str) -> None:
    work = _glu_backward(base, tmp_path, first, second)
    report = op_conformance(work, "aten::glu_backward", backend="emulated", seed=5)
    assert report.status == "fail", report.reason


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


TOLERANCE = ("DecorateInfo(toleranceOverride({torch.float16: tol(atol=5e-3, rtol=1e-3)}), "
             "'TestModule', 'test_forward', device_type='mps')")


def _log_sigmoid_module(text: str, decorator: str) -> str:
    """common_modules.py with LogSigmoid's MPS test_forward decorator (the xfail, or the override the
    port wrote in its place) replaced by `decorator`."""
    start = text.index("ModuleInfo(torch.nn.LogSigmoid,")
    at = text.index("DecorateInfo(", start)
    depth, end = 0, at
    for end in range(at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0 and text[end] == ")":
            break
    return text[:at] + decorator + text[end + 1:]


def test_the_port_writes_the_module_tolerance_it_derives_from_torch(base: Path, tmp_path: Path) -> None:
    # Note [module tolerances]: torch 2.13's LogSigmoid ModuleInfo has no toleranceOverride of its own;
    # its float16 test_forward compares with reference_fn (sigmoid, then log, each rounded to half),
    # 2^-8 off a result rounded once on its own samples: atol 4e-3 (upstream wrote 5e-3), rtol 1e-3
    from metalport.checks.contract.rules import check_contract
    from metalport.port.write.decorators import MODULES_FILE, module_failures

    work = _clone(base, tmp_path)
    plan = plan_port(Checkout(work), "aten::log_sigmoid_forward")
    assert [v[:5] for v in plan.module_tolerance_values] == [
        ("torch.nn.LogSigmoid", "test_forward", "float16", 0.004, 0.001)]
    assert "reference_fn" in plan.module_tolerance_values[0][5]
    apply_port(plan, work, functor_source=FORWARD % STABLE)
    text = (work / MODULES_FILE).read_text()
    info = text[text.index("ModuleInfo(torch.nn.LogSigmoid,"):]
    info = info[:info.index("ModuleInfo(", 1)]
    assert ("DecorateInfo(toleranceOverride({torch.float16: tol(atol=0.004, rtol=0.001)}), \"TestModule\", "
            "\"test_forward\", device_type='mps'),)") in info
    assert "unittest.expectedFailure" not in info
    assert not [f for f in module_failures(text) if f.module == "torch.nn.LogSigmoid"]
    assert check_contract(base, work, plan) == []
    apply_port(plan, work, functor_source=FORWARD % STABLE)  # a second apply leaves the file as it is
    assert (work / MODULES_FILE).read_text() == text


@pytest.mark.parametrize(("module", "decorator", "accepted"), [
    ("LogSigmoid", TOLERANCE, True),  # upstream's replacement
    ("LogSigmoid", TOLERANCE.replace("torch.float16", "torch.float32"), False),  # a dtype the xfail did not name
    ("LogSigmoid", TOLERANCE.replace("test_forward", "test_cpu_gpu_parity"), False),  # another test
])
def test_the_contract_accepts_upstreams_module_tolerance_and_nothing_looser(
        base: Path, tmp_path: Path, module: str, decorator: str, accepted: bool) -> None:
    from metalport.checks.contract.rules import check_contract
    from metalport.port.write.decorators import MODULES_FILE

    work = _clone(base, tmp_path)
    plan = plan_port(Checkout(work), "aten::log_sigmoid_forward")
    assert plan.module_tolerances == ((MODULES_FILE, "torch.nn.LogSigmoid", "test_forward", ("float16",)),)
    assert MODULES_FILE in plan.allowed_paths
    apply_port(plan, work, functor_source=FORWARD % STABLE)
    path = work / MODULES_FILE
    path.write_text(_log_sigmoid_module(path.read_text(), decorator))
    failures = [f.message for f in check_contract(base, work, plan)]
    assert (failures == []) is accepted, failures
    if not accepted:
        assert any("only a toleranceOverride on MPS" in m for m in failures)


def test_other_ports_may_not_touch_module_decorators(base: Path, tmp_path: Path) -> None:
    from metalport.checks.contract.rules import check_contract
    from metalport.port.write.decorators import MODULES_FILE

    work = _clone(base, tmp_path)
    plan = plan_port(Checkout(work), "aten::log_sigmoid_backward")  # LogSigmoid's forward never calls it
    assert plan.module_tolerances == () and MODULES_FILE not in plan.allowed_paths
    apply_port(plan, work, functor_source=BACKWARD % RIGHT_SLOPE)
    path = work / MODULES_FILE
    path.write_text(_log_sigmoid_module(path.read_text(), TOLERANCE))
    assert any("not on the plan's allow-list" in f.message for f in check_contract(base, work, plan))
