"""Ports of ops with scalar arguments on the real tree (Note [params route], Note [kept rows]):
softplus's beta/threshold and nan_to_num's replacement values reach the kernel as a params struct
through the tree's `exec_unary_kernel_with_params`; multi-line DECLARE_DISPATCH is read; pow's
Tensor_Tensor overload gets its stub and its Scalar overload keeps its row."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.port.write.host import find_stub_declaration
from metalport.port.plan.planner import apply_port, plan_port
from tests.real_tree import overlay_real_tree

KERNELS = "aten/src/ATen/native/mps/kernels"
HOST = "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
SOFTPLUS = """struct softplus_functor {
  template <typename T>
  inline T operator()(const T x, const SoftplusParams p) {
    const float v = float(x) * p.beta;
    return static_cast<T>(v > p.threshold ? float(x) : ::c10::metal::log1p(::metal::exp(v)) / p.beta);
  }
};
"""


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    return overlay_real_tree(tmp_path_factory.mktemp("real") / "tree")


def _applied(real: Checkout, tmp_path: Path, op: str, functor: str | None = None) -> tuple[object, Path]:
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(real.root), str(work)], check=True, capture_output=True, timeout=300)
    plan = plan_port(Checkout(work), f"aten::{op}")
    apply_port(plan, work, functor_source=functor)
    return plan, work


def test_a_multi_line_declare_dispatch_is_read(tmp_path: Path) -> None:
    native = tmp_path / "include/ATen/native"
    native.mkdir(parents=True)
    (native / "Ops.h").write_text("DECLARE_DISPATCH(\n    void (*)(\n        TensorIteratorBase&,\n"
                                  "        std::optional<double>),\n    wide_stub)\n")
    decl = find_stub_declaration("wide_stub", tmp_path / "include")
    assert decl.header == "ATen/native/Ops.h"
    assert decl.params == "TensorIteratorBase& iter, std::optional<double> arg1"


def test_softplus_carries_beta_and_threshold_in_a_params_struct(real: Checkout, tmp_path: Path) -> None:
    plan, work = _applied(real, tmp_path, "softplus", SOFTPLUS)
    assert plan.needs_llm and plan.stub == "softplus_stub"
    assert [p[0] for p in plan.params] == ["beta", "threshold"] and all(p[2] for p in plan.params)
    assert plan.params_type == "SoftplusParams"
    assert plan.registrations == tuple(f"REGISTER_UNARY_ALPHA_OP(softplus, {t}, SoftplusParams, {t});"
                                       for t in ("float", "half", "bfloat"))
    assert plan.launch["launcher"] == "exec_unary_kernel_with_params"
    host = (work / HOST).read_text()
    assert ("static void softplus_mps_kernel(TensorIteratorBase& iter, const c10::Scalar& beta, "
            "const c10::Scalar& threshold) {") in host
    assert "const SoftplusParams params{beta.to<float>(), threshold.to<float>()};" in host
    assert 'lib.exec_unary_kernel_with_params(iter, "softplus", params, "SoftplusParams");' in host
    assert "#include <ATen/native/mps/kernels/UnaryKernel.h>" in host
    header = (work / KERNELS / "UnaryKernel.h").read_text()
    assert "struct SoftplusParams {\n  float beta;\n  float threshold;\n};" in header
    assert "REGISTER_UNARY_ALPHA_OP(softplus, half, SoftplusParams, half);" in (work / KERNELS / "UnaryKernel.metal").read_text()


def test_nan_to_num_reuses_the_trees_params_functor(real: Checkout, tmp_path: Path) -> None:
    plan, work = _applied(real, tmp_path, "nan_to_num")
    assert plan.stub == "nan_to_num_stub" and plan.stub_header == "ATen/native/UnaryOps.h"  # multi-line declaration
    assert plan.functor_step == "reuse" and plan.reused_kernel == "nan_to_num" and not plan.needs_llm
    assert plan.dtypes == ("float", "half", "bfloat", "float2", "half2")  # what the tree registers: no int/bool
    assert plan.params_type == "NanToNumParams_float" and plan.params_struct == "NanToNumParams<float>"
    assert [p[0] for p in plan.params] == ["nan", "posinf", "neginf"]
    host = (work / HOST).read_text()
    for name in ("nan", "posinf", "neginf"):
        assert f"{name}.has_value() ? static_cast<real_t>(*{name})" in host
    assert "std::numeric_limits<real_t>::max()" in host and "std::numeric_limits<real_t>::lowest()" in host
    assert 'lib.exec_unary_kernel_with_params(iter, "nan_to_num", params, "NanToNumParams_float");' in host
    assert "REGISTER_DISPATCH(nan_to_num_stub, nan_to_num_mps_kernel);" in host
    assert (work / KERNELS / "UnaryKernel.metal").read_text() == (real.root / KERNELS / "UnaryKernel.metal").read_text()


def test_unset_optionals_mean_what_torchs_cpu_op_does_whatever_their_names() -> None:
    from metalport.port.plan.params import scalar_params

    # Note [unset optionals]: the stub's parameters are named otherwise (pos_inf, neg_inf); the
    # defaults come from torch's CPU nan_to_num, in the schema's names
    func = "nan_to_num.out(Tensor self, float? nan=None, float? posinf=None, float? neginf=None, *, Tensor(a!) out) -> Tensor(a!)"
    stub = "TensorIteratorBase& iter, std::optional<double> a, std::optional<double> pos_inf, std::optional<double> neg_inf"
    assert scalar_params(stub, func) == (
        ("nan", "std::optional<double>", True, "real_t(0)"),
        ("posinf", "std::optional<double>", True, "std::numeric_limits<real_t>::max()"),
        ("neginf", "std::optional<double>", True, "std::numeric_limits<real_t>::lowest()"))
    # clamp's unset bounds have no value of their own (CPU refuses both unset): no struct carries them
    clamp = "clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)"
    assert scalar_params("TensorIteratorBase& iter, std::optional<double> lo, std::optional<double> hi", clamp) is None


def test_pow_tensor_tensor_gets_its_stub_and_keeps_the_scalar_overload(real: Checkout) -> None:
    plan = plan_port(real, "aten::pow")
    # Note [complex siblings]: the tree's pow_scalar registers float2; upstream's pow port has complex rows
    assert plan.dtypes[-2:] == ("float2", "half2") and "REGISTER_BINARY_OP(pow, half2, half2);" in plan.registrations
    assert any("sibling kernel pow_scalar registers float2" in p for p in plan.placement)
    assert plan.stub == "pow_tensor_tensor_stub" and plan.stub_header == "ATen/native/Pow.h"
    assert plan.register_dispatch == "REGISTER_DISPATCH(pow_tensor_tensor_stub, &pow_mps_kernel);"
    assert {r.entry for r in plan.rows} == {"pow.Tensor_Tensor_out"}
    assert plan.legacy == ("aten/src/ATen/native/mps/operations/BinaryOps.mm", "pow_tensor_tensor_out_mps")
    assert "pow_Scalar_out_mps" not in str(plan.legacy_others)
    assert any(w.startswith("pow.Tensor_Tensor_out moves to `CPU, CUDA, MPS: pow_Tensor_Tensor_out`")
               for w in plan.rows_why)
    assert any(w.startswith("pow.Scalar_out keeps `MPS: pow_Scalar_out_mps`") and "calls at::pow again" in w
               for w in plan.rows_why)


def test_the_contract_refuses_a_host_stub_that_drops_a_scalar(real: Checkout, tmp_path: Path) -> None:
    from metalport.checks.contract.rules import check_contract

    plan, work = _applied(real, tmp_path, "softplus", SOFTPLUS)
    assert check_contract(real.root, work, plan) == []
    host = work / HOST
    host.write_text(host.read_text().replace("beta.to<float>()", "1.0f"))
    failures = check_contract(real.root, work, plan)
    assert [f.message for f in failures] == [
        "[params] softplus_mps_kernel takes beta but never passes it to the kernel: the params struct "
        "SoftplusParams must carry every scalar of softplus_stub"]


def test_the_contract_accepts_the_nan_to_num_port(real: Checkout, tmp_path: Path) -> None:
    from metalport.checks.contract.rules import check_contract

    plan, work = _applied(real, tmp_path, "nan_to_num")
    assert check_contract(real.root, work, plan) == []


def test_softplus_keeps_the_test_dtypes_xfail_of_dtypes_it_does_not_register(real: Checkout, tmp_path: Path) -> None:
    # Note [test_dtypes stays]: the OpInfo lists bool and integer types for MPS; the port registers
    # float/half/bfloat only, so test_dtypes still fails and its expectedFailure stays.
    plan, work = _applied(real, tmp_path, "softplus", SOFTPLUS)
    rel = "torch/testing/_internal/common_methods_invocations.py"
    assert all(d[0] != rel or d[1] != "_refs.nn.functional.softplus" for d in plan.decorator_entries)
    text = (work / rel).read_text()
    ref = text[text.index('"_refs.nn.functional.softplus"'):][:1500]
    assert "DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_dtypes', device_type='mps')" in ref


OWN_STRUCT = """struct SoftplusArgs {
  float beta;
  float threshold;
};

struct softplus_functor {
  template <typename T>
  inline T operator()(const T x, const SoftplusArgs p) {
    const float v = float(x) * p.beta;
    return static_cast<T>(v > p.threshold ? float(x) : ::c10::metal::log1p(::metal::exp(v)) / p.beta);
  }
};
"""


def test_a_model_struct_carrying_the_scalars_becomes_the_planned_one(real: Checkout, tmp_path: Path) -> None:
    plan, work = _applied(real, tmp_path, "softplus", OWN_STRUCT)
    kernels = (work / plan.kernel_file).read_text()
    assert "SoftplusArgs" not in kernels and "const SoftplusParams p" in kernels
    files = {plan.kernel_file, plan.params_header}
    assert sum((work / f).read_text().count("struct SoftplusParams {") for f in files) == 1  # the plan's, once


@pytest.mark.parametrize(("struct", "why"), [
    ("struct SoftplusArgs {\n  float beta;\n};\n", "SoftplusArgs (float beta)"),  # threshold dropped
    ("struct SoftplusArgs {\n  float threshold;\n  float beta;\n};\n", "(float threshold, float beta)"),  # reordered
    ("struct SoftplusArgs {\n  int beta;\n  int threshold;\n};\n", "(int beta, int threshold)"),  # not opmath
])
def test_a_model_struct_that_is_not_the_ops_scalars_is_refused_with_one_reason(
        real: Checkout, tmp_path: Path, struct: str, why: str) -> None:
    from metalport.errors import RecipeError

    source = OWN_STRUCT.replace("struct SoftplusArgs {\n  float beta;\n  float threshold;\n};\n", struct)
    with pytest.raises(RecipeError) as err:
        _applied(real, tmp_path, "softplus", source)
    assert why in err.value.message and "SoftplusParams (float beta, float threshold)" in err.value.message
    assert "\n" not in err.value.message
