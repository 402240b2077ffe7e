"""Ports with scalar arguments and ops outside the recipe tables, end to end (issue 31): a scripted
model answers with a correct functor and the run reaches the approval gate on the real tree
($METALPORT_REAL_TREE over a wheel workspace) with the change upstream writes: softplus's scalars in
a params struct launched through exec_unary_kernel_with_params, nan_to_num's own params kernel
launched without a model, pow.Tensor_Tensor as a binary functor on its own stub with the Scalar
overload's row kept."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from metalport.graph.runs import RunOptions, start_run
from tests.llm_server import ScriptedLLM, json_reply
from tests.real_tree import overlay_real_tree

KERNELS = "aten/src/ATen/native/mps/kernels"
OPERATIONS = "aten/src/ATen/native/mps/operations"
SOFTPLUS = """struct softplus_functor {
  template <typename T>
  inline T operator()(const T x, const SoftplusParams params) {
    const float scaled = float(x) * params.beta;
    return static_cast<T>(scaled > params.threshold
                              ? float(x)
                              : ::c10::metal::log1p(::metal::exp(scaled)) / params.beta);
  }
};
"""
POW = """struct pow_functor {
  template <typename T, ::metal::enable_if_t<::metal::is_floating_point_v<T>, bool> = true>
  inline T operator()(const T a, const T b) {
    return static_cast<T>(::c10::metal::pow(float(a), float(b)));
  }
  template <typename T, ::metal::enable_if_t<::metal::is_integral_v<T>, bool> = true>
  inline T operator()(const T a, const T b) {
    return ::c10::metal::pow(a, b);
  }
};
"""


def _options(tmp_path: Path, server: ScriptedLLM | None) -> RunOptions:
    if server is None:
        return RunOptions(executor="emulated")
    config = tmp_path / "metalport.yaml"
    config.write_text(f"provider:\n  model: ignored\n  base_url: {server.base_url}\n  timeout_s: 30\n")
    return RunOptions(model="openai:scripted-model", executor="emulated", config_path=str(config))


def _diff(worktree: Path) -> str:
    return subprocess.run(["git", "diff", "HEAD"], cwd=worktree, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    root = overlay_real_tree(tmp_path / "real", writable=True).root
    for key, value in (("user.name", "Reviewer"), ("user.email", "reviewer@localhost")):
        subprocess.run(["git", "config", key, value], cwd=root, check=True)
    return root


def test_softplus_reaches_the_gate_with_its_scalars_in_a_params_struct(real: Path, tmp_path: Path) -> None:
    with ScriptedLLM([json_reply({"functor_source": SOFTPLUS, "summary": "softplus through log1p"})]) as server:
        record = start_run(real, "aten::softplus", _options(tmp_path, server))
    assert record.status == "awaiting-review", record.reason
    assert all(record.verdicts[n]["ok"] for n in ("check", "build", "test"))
    prompt = server.prompt_text()
    assert "SoftplusParams" in prompt and "beta" in prompt and "threshold" in prompt
    diff = _diff(Path(record.worktree))
    assert "+struct SoftplusParams {" in diff and "+  float beta;" in diff and "+  float threshold;" in diff
    assert "+REGISTER_UNARY_ALPHA_OP(softplus, float, SoftplusParams, float);" in diff
    assert "+  const SoftplusParams params{beta.to<float>(), threshold.to<float>()};" in diff
    assert '+  lib.exec_unary_kernel_with_params(iter, "softplus", params, "SoftplusParams");' in diff
    assert "+    CPU, CUDA, MPS: softplus_out" in diff and "-    MPS: softplus_out_mps" in diff


def test_nan_to_num_reaches_the_gate_reusing_the_trees_params_kernel(real: Path, tmp_path: Path) -> None:
    record = start_run(real, "aten::nan_to_num", _options(tmp_path, None))
    assert record.status == "awaiting-review", record.reason
    diff = _diff(Path(record.worktree))
    assert f"{KERNELS}/UnaryKernel.metal" not in diff  # the tree's nan_to_num_functor, not a new one
    assert 'lib.exec_unary_kernel_with_params(iter, "nan_to_num", params, "NanToNumParams_float");' in diff
    assert "+    CPU, CUDA, MTIA, MPS: nan_to_num_out" in diff


def test_pow_tensor_tensor_reaches_the_gate_with_the_scalar_overload_kept(real: Path, tmp_path: Path) -> None:
    with ScriptedLLM([json_reply({"functor_source": POW, "summary": "pow via c10::metal::pow"})]) as server:
        record = start_run(real, "aten::pow", _options(tmp_path, server))
    assert record.status == "awaiting-review", record.reason
    diff = _diff(Path(record.worktree))
    assert "+REGISTER_DISPATCH(pow_tensor_tensor_stub, &pow_mps_kernel)" in diff  # the file's idiom: no `;`
    assert "+REGISTER_BINARY_OP(pow, float, float);" in diff and f"{KERNELS}/BinaryKernel.metal" in diff
    assert "+    CPU, CUDA, MPS: pow_Tensor_Tensor_out" in diff
    assert "pow_Scalar_out" not in "\n".join(l for l in diff.splitlines() if l.startswith(("+", "-")))
    assert "-CREATE_MPS_STRUCTURED_BINARY_OP_FUNC(pow_tensor_tensor_out_mps, power, Tensor);" in diff


SOFTPLUS_BACKWARD = """struct softplus_backward_functor {
  template <typename T>
  inline T operator()(const T grad_output, const T self, const SoftplusParams params) {
    const float scaled = float(self) * params.beta;
    if (scaled > params.threshold) {
      return grad_output;
    }
    const float e = ::metal::exp(scaled);
    return static_cast<T>(float(grad_output) * e / (e + 1.0f));
  }
};
"""


@pytest.fixture
def activation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from tests.graph.activation_tree import activation_tree

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return activation_tree(tmp_path / "activation")


def test_softplus_family_is_one_change_with_the_model_asked_per_member(activation: Path, tmp_path: Path) -> None:
    answers = [json_reply({"functor_source": SOFTPLUS, "summary": "forward"}),
               json_reply({"functor_source": SOFTPLUS_BACKWARD, "summary": "backward"})]
    with ScriptedLLM(answers) as server:
        options = replace(_options(tmp_path, server), family_ops=["aten::softplus_backward"])
        record = start_run(activation, "aten::softplus", options)
    assert record.status == "awaiting-review", record.reason
    assert record.verdicts["test"]["members"] == {"softplus": "pass", "softplus_backward": "pass"}
    asked = [r["messages"][1]["content"] for r in server.requests]
    assert len(asked) == 2 and "softplus_functor" in asked[0] and "softplus_backward_functor" in asked[1]
    diff = _diff(Path(record.worktree))
    header = f"{KERNELS}/Activation.h"
    assert diff.count("+struct SoftplusParams {") == 1 and f"b/{header}" in diff  # one struct, shared
    assert "+REGISTER_UNARY_ALPHA_OP(softplus, float, SoftplusParams, float);" in diff
    assert "+REGISTER_BINARY_ALPHA_OP(softplus_backward, bfloat, SoftplusParams, bfloat);" in diff
    assert '+  lib.exec_binary_kernel_with_params(iter, "softplus_backward", params, "SoftplusParams");' in diff
    assert f"b/{OPERATIONS}/ActivationKernel.mm" in diff and f"b/{KERNELS}/ActivationKernel.metal" in diff
    removed = "\n".join(line for line in diff.splitlines() if line.startswith("-"))
    assert "-TORCH_IMPL_FUNC(softplus_out_mps)" in removed and "-TORCH_IMPL_FUNC(softplus_backward_out_mps)" in removed
    assert "-#include <ATen/ops/softplus_native.h>" in removed


def test_nan_to_num_replaces_tensor_compares_graph(activation: Path, tmp_path: Path) -> None:
    record = start_run(activation, "aten::nan_to_num", _options(tmp_path, None))
    assert record.status == "awaiting-review", record.reason
    diff = _diff(Path(record.worktree))
    assert "-Tensor& nan_to_num_out_mps(const Tensor& self," in diff
    assert f"b/{OPERATIONS}/UnaryKernel.mm" in diff and f"b/{KERNELS}/UnaryKernel.metal" not in diff


GLU = """struct glu_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return static_cast<T>(float(a) / (1.0f + ::metal::exp(-float(b))));
  }
};
"""


def test_glu_is_a_binary_functor_over_the_halves(activation: Path, tmp_path: Path) -> None:
    with ScriptedLLM([json_reply({"functor_source": GLU, "summary": "a * sigmoid(b)"})]) as server:
        record = start_run(activation, "aten::glu", _options(tmp_path, server))
    assert record.status == "awaiting-review", record.reason
    assert "two values" in server.requests[0]["messages"][1]["content"]  # asked for a binary functor
    diff = _diff(Path(record.worktree))
    assert "+REGISTER_BINARY_OP(glu, float, float);" in diff
    assert '+  lib.exec_binary_kernel(iter, "glu");' in diff and "+REGISTER_DISPATCH(glu_stub, glu_mps_kernel);" in diff
    assert "-TORCH_IMPL_FUNC(glu_out_mps)" in diff and "+    CPU, CUDA, MPS: glu_out" in diff


LOG_SIGMOID = """struct log_sigmoid_forward_functor {
  template <typename T>
  inline T operator()(const T x) {
    const float v = float(x);
    return static_cast<T>(::metal::min(v, 0.0f) - ::c10::metal::log1p(::metal::exp(-::metal::abs(v))));
  }
};
"""
LOG_SIGMOID_BACKWARD = """struct log_sigmoid_backward_functor {
  template <typename T>
  inline T operator()(const T grad_output, const T self) {
    const float z = ::metal::exp(-::metal::abs(float(self)));
    const float t = z / (1.0f + z);
    return static_cast<T>(float(grad_output) * (float(self) < 0.0f ? 1.0f - t : t));
  }
};
"""


def test_log_sigmoid_family_keeps_its_rows_and_rewrites_the_bodies(activation: Path, tmp_path: Path) -> None:
    answers = [json_reply({"functor_source": LOG_SIGMOID, "summary": "min(0, x) - log1p(exp(-|x|))"}),
               json_reply({"functor_source": LOG_SIGMOID_BACKWARD, "summary": "sigmoid(-x) as (x<0) ? 1-t : t"})]
    with ScriptedLLM(answers) as server:
        options = replace(_options(tmp_path, server), family_ops=["aten::log_sigmoid_backward"])
        record = start_run(activation, "aten::log_sigmoid_forward", options)
    assert record.status == "awaiting-review", record.reason
    assert record.verdicts["test"]["members"] == {"log_sigmoid_forward": "pass", "log_sigmoid_backward": "pass"}
    asked = [r["messages"][1]["content"] for r in server.requests]
    assert len(asked) == 2 and "log_sigmoid_forward_functor" in asked[0] and "two values" in asked[1]
    diff = _diff(Path(record.worktree))
    assert "native_functions.yaml" not in diff  # the MPS rows stay
    assert "+REGISTER_UNARY_OP(log_sigmoid_forward, half, half);" in diff
    assert "+REGISTER_BINARY_OP(log_sigmoid_backward, bfloat, bfloat);" in diff
    assert "+  auto iter = at::TensorIteratorConfig().add_output(output).add_input(self).build();" in diff
    assert '+  lib.exec_unary_kernel(iter, "log_sigmoid_forward");' in diff
    assert '+  lib.exec_binary_kernel(iter, "log_sigmoid_backward");' in diff
    assert " std::tuple<Tensor&, Tensor&> log_sigmoid_forward_out_mps(" in diff  # kept, body rewritten
    assert "-      MPSGraphTensor* softTensor = mps::log1p(mpsGraph, expTensor);" in diff
    removed = "\n".join(line for line in diff.splitlines() if line.startswith("-"))
    assert "log_sigmoid_forward_mps(const Tensor& self)" not in removed  # the functional still calls the out
    assert "TORCH_IMPL_FUNC(glu_out_mps)" not in removed and "log_sigmoid_backward_mps(" not in removed
