"""plan_port / apply_port on the wheel workspace (heaviside missing) and the fixture checkout
(heaviside on MPSGraph): exact row changes, files written, legacy and xfail removal, idempotence."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from metalport.port.plan.planner import PortPlan, RowChange, apply_port, plan_port
from metalport.checkout import Checkout
from metalport.errors import PipelineError, RecipeError, SandboxError, UnknownOpError
from tests.fixture_repo import make_fixture_checkout
from tests.recipes.porting import clone, commit_all, git, read, write

YAML = "aten/src/ATen/native/native_functions.yaml"
KERNEL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
HOST = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
LEGACY = "aten/src/ATen/native/mps/operations/BinaryOps.mm"
COMMON = "torch/testing/_internal/common_mps.py"
INVOCATIONS = "torch/testing/_internal/common_methods_invocations.py"
ALL_TYPES = ("float", "half", "bfloat", "long", "int", "short", "char", "uchar", "bool")


@pytest.fixture(scope="module")
def fixture_checkout(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    return make_fixture_checkout(tmp_path_factory.mktemp("fixture"))


@pytest.fixture(scope="module")
def wheel_plan(wheel_workspace: Checkout) -> PortPlan:
    return plan_port(wheel_workspace, "aten::heaviside")


@pytest.fixture(scope="module")
def fixture_plan(fixture_checkout: Checkout) -> PortPlan:
    return plan_port(fixture_checkout, "heaviside")


def _diff(root: Path) -> str:
    return git(root, "diff", "-U0", "--no-color")


def test_wheel_plan_adds_mps_to_the_shared_row(wheel_workspace: Checkout, wheel_plan: PortPlan) -> None:
    plan = wheel_plan
    line = next(n for n, t in enumerate(read(wheel_workspace.root, YAML).splitlines(), 1)
                if t == "    CPU, CUDA: heaviside_out")
    assert plan.rows == (RowChange("heaviside.out", line, "    CPU, CUDA: heaviside_out",
                                   "    CPU, CUDA, MPS: heaviside_out"),)
    assert (plan.status, plan.family, plan.migrate, plan.needs_llm) == ("missing", "binary-pointwise", False, False)
    assert (plan.kernel_file, plan.host_file) == (KERNEL, HOST)
    assert plan.functor == "heaviside_functor" and plan.kernel_name == "heaviside"
    assert plan.dtypes == ALL_TYPES
    assert plan.registrations[0] == "REGISTER_BINARY_OP(heaviside, float, float);"
    assert plan.register_dispatch == "REGISTER_DISPATCH(heaviside_stub, &heaviside_mps_kernel);"
    assert plan.legacy is None and plan.legacy_include is None
    assert plan.xfail_keys == ("heaviside",)
    assert plan.allowed_paths == (KERNEL, HOST, YAML, INVOCATIONS, COMMON)
    # TestCommon expectedFailures on MPS: five of the OpInfo, two of the PythonRefInfo `_refs.heaviside`
    assert len(plan.decorator_entries) == 7


def test_plan_round_trips_through_json_and_is_frozen(wheel_plan: PortPlan, fixture_plan: PortPlan) -> None:
    for plan in (wheel_plan, fixture_plan):
        again = PortPlan.from_dict(json.loads(json.dumps(plan.to_dict())))
        assert again == plan
    with pytest.raises(dataclasses.FrozenInstanceError):
        wheel_plan.op = "other"  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown PortPlan field"):
        PortPlan.from_dict({**wheel_plan.to_dict(), "surprise": 1})


def test_wheel_apply_writes_five_files_then_nothing(wheel_workspace: Checkout, wheel_plan: PortPlan,
                                                    tmp_path: Path) -> None:
    wt = clone(wheel_workspace, tmp_path / "wt")
    assert apply_port(wheel_plan, wt) == (KERNEL, HOST, YAML, INVOCATIONS, COMMON)
    diff = _diff(wt)
    assert "-    CPU, CUDA: heaviside_out\n+    CPU, CUDA, MPS: heaviside_out\n" in diff
    assert '-            "heaviside": None,\n' in diff
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    # one row rewritten, one xfail line, five decorator lines and the comment heading them gone, and
    # _refs.heaviside's two MPS decorators with their comment
    assert len(changed) == 12
    assert "-                        # NotImplementedError: The operator 'aten::heaviside.out' is not currently " \
           "implemented for the MPS device" in changed
    kernel = read(wt, KERNEL)
    assert kernel.startswith("#include <c10/metal/indexing.h>\n") and "struct heaviside_functor {" in kernel
    assert kernel.endswith("".join(f"REGISTER_BINARY_OP(heaviside, {t}, {t});\n" for t in ALL_TYPES))
    host = read(wt, HOST)
    assert "#include <ATen/native/BinaryOps.h>\n" in host
    assert 'lib.exec_binary_kernel(iter, "heaviside");' in host and wheel_plan.register_dispatch in host
    before = {p: read(wt, p) for p in wheel_plan.allowed_paths}
    assert apply_port(wheel_plan, wt) == ()
    assert {p: read(wt, p) for p in wheel_plan.allowed_paths} == before


def test_fixture_plan_collapses_rows_and_removes_legacy(fixture_checkout: Checkout, fixture_plan: PortPlan) -> None:
    plan = fixture_plan
    assert plan.rows == (RowChange("heaviside.out", 8, "    CPU, CUDA: heaviside_out",
                                   "    CPU, CUDA, MPS: heaviside_out"),
                         RowChange("heaviside.out", 9, "    MPS: heaviside_out_mps", ""))
    assert (plan.status, plan.migrate) == ("mps-graph", True)
    assert plan.legacy == (LEGACY, "heaviside_out_mps") and plan.legacy_others == ()
    assert plan.legacy_include == "#include <ATen/ops/heaviside_native.h>"
    assert plan.xfail_entries == (("UNIMPLEMENTED_XFAILLIST", "heaviside", 8),)
    assert plan.allowed_paths == (KERNEL, HOST, LEGACY, YAML, COMMON)


def test_fixture_apply_migrates_then_changes_nothing(fixture_checkout: Checkout, fixture_plan: PortPlan,
                                                     tmp_path: Path) -> None:
    wt = clone(fixture_checkout, tmp_path / "wt")
    assert apply_port(fixture_plan, wt) == (KERNEL, HOST, LEGACY, YAML, COMMON)
    yaml = read(wt, YAML)
    assert "    CPU, CUDA, MPS: heaviside_out\n  tags: pointwise" in yaml and "heaviside_out_mps" not in yaml
    legacy = read(wt, LEGACY)
    assert "heaviside_out_mps" not in legacy and "MPSGraph*" not in legacy
    assert "#include <ATen/ops/heaviside_native.h>" not in legacy
    assert "TORCH_IMPL_FUNC(logaddexp_out_mps)" in legacy and "#include <ATen/ops/logaddexp_native.h>" in legacy
    kernel = read(wt, KERNEL)
    assert kernel.index("struct logaddexp_functor") < kernel.index("struct heaviside_functor")
    functor = kernel.index("struct heaviside_functor")
    assert kernel.index("};\n\nREGISTER_BINARY_OP(heaviside, float, float);", functor) == kernel.index("};", functor)
    host = read(wt, HOST)
    assert host.index("REGISTER_DISPATCH(atan2_stub") < host.index("REGISTER_DISPATCH(heaviside_stub")
    common = read(wt, COMMON)
    assert '"heaviside"' not in common and '"hypot": [torch.float16, torch.bfloat16],' in common
    snapshot = {p: read(wt, p) for p in fixture_plan.allowed_paths}
    assert apply_port(fixture_plan, wt) == ()
    assert {p: read(wt, p) for p in fixture_plan.allowed_paths} == snapshot


def test_include_stays_when_the_file_still_names_the_op(fixture_checkout: Checkout, tmp_path: Path) -> None:
    repo = clone(fixture_checkout, tmp_path / "repo")
    text = read(repo, LEGACY).replace("} // namespace at::native",
                                      "// heaviside_out is also reached from here.\n} // namespace at::native")
    write(repo, LEGACY, text)
    commit_all(repo, "legacy file names heaviside_out elsewhere")
    plan = plan_port(Checkout(repo), "heaviside")
    assert plan.legacy_include is None
    apply_port(plan, repo)
    assert "#include <ATen/ops/heaviside_native.h>" in read(repo, LEGACY)
    assert "TORCH_IMPL_FUNC(heaviside_out_mps)" not in read(repo, LEGACY)


def test_already_native_ops_are_refused_unless_forced(fixture_checkout: Checkout) -> None:
    with pytest.raises(PipelineError) as err:
        plan_port(fixture_checkout, "aten::atan2")
    assert str(err.value) == (f"{HOST}:10: aten::atan2 is already native (shared); pass --force to plan it anyway")
    with pytest.raises(PipelineError, match=r"aten::square is already native \(composite\)"):
        plan_port(fixture_checkout, "square")
    forced = plan_port(fixture_checkout, "atan2", force=True)
    assert forced.rows == () and forced.status == "shared"


def test_unknown_op_names_close_ones(fixture_checkout: Checkout) -> None:
    with pytest.raises(UnknownOpError, match="unknown op 'aten::heavisid'.*did you mean 'heaviside'"):
        plan_port(fixture_checkout, "aten::heavisid")


def test_op_outside_the_table_needs_an_llm(fixture_checkout: Checkout, tmp_path: Path) -> None:
    plan = plan_port(fixture_checkout, "hypot")
    assert plan.needs_llm and plan.functor_step == "needs an LLM (--model openai:...)"
    assert plan.functor_source is None and plan.functor == "hypot_functor" and plan.kernel_file == KERNEL
    assert plan.rows[0].after == "    CPU, CUDA, MPS: hypot_out"
    wt = clone(fixture_checkout, tmp_path / "wt")
    with pytest.raises(RecipeError, match="hypot is not in the recipe table: its functor needs an LLM"):
        apply_port(plan, wt)
    assert git(wt, "status", "--porcelain") == ""
    functor = ("struct hypot_functor {\n  template <typename T>\n  inline float operator()(const T a, const T b) {\n"
               "    return ::metal::precise::sqrt(float(a) * float(a) + float(b) * float(b));\n  }\n};\n\n"
               "REGISTER_BINARY_OP(hypot, float, float);\nREGISTER_BINARY_OP(hypot, int, float);\n")
    apply_port(plan, wt, functor_source=functor)
    kernel = read(wt, KERNEL)
    assert "  }\n};\n\nREGISTER_BINARY_OP(hypot, float, float);\nREGISTER_BINARY_OP(hypot, int, float);\n" in kernel
    assert "REGISTER_BINARY_OP(hypot, half, half);" not in kernel  # the model's registrations win
    with pytest.raises(RecipeError, match="does not define 'struct hypot_functor'"):
        apply_port(plan, clone(fixture_checkout, tmp_path / "wt2"), functor_source="struct other_functor {};\n")


def test_a_missing_anchor_is_an_error_and_writes_nothing(fixture_checkout: Checkout, fixture_plan: PortPlan,
                                                         tmp_path: Path) -> None:
    wt = clone(fixture_checkout, tmp_path / "wt")
    write(wt, YAML, read(wt, YAML).replace("    CPU, CUDA: heaviside_out\n", "    CPU: heaviside_out\n"))
    with pytest.raises(RecipeError) as err:
        apply_port(fixture_plan, wt)
    assert str(err.value) == (f"{YAML}:3: heaviside.out: no dispatch line reads 'CPU, CUDA: heaviside_out'; "
                              "re-plan the op on the current tree")
    assert git(wt, "status", "--porcelain") == f" M {YAML}\n"  # only our own edit


def test_paths_off_the_allow_list_are_refused_before_any_write(fixture_checkout: Checkout, fixture_plan: PortPlan,
                                                               tmp_path: Path) -> None:
    wt = clone(fixture_checkout, tmp_path / "wt")
    narrowed = dataclasses.replace(fixture_plan, allowed_paths=tuple(p for p in fixture_plan.allowed_paths
                                                                      if p != LEGACY))
    with pytest.raises(SandboxError, match="BinaryOps.mm' is not on the plan's allow-list"):
        apply_port(narrowed, wt)
    assert git(wt, "status", "--porcelain") == ""


def test_new_code_follows_the_trees_clang_format(fixture_checkout: Checkout, fixture_plan: PortPlan,
                                                 tmp_path: Path) -> None:
    wt = clone(fixture_checkout, tmp_path / "wt")
    write(wt, ".clang-format", "BasedOnStyle: LLVM\nColumnLimit: 60\n")
    apply_port(fixture_plan, wt)
    kernel = read(wt, KERNEL)
    functor = kernel[kernel.index("struct heaviside_functor"):kernel.index("REGISTER_BINARY_OP(atan2")]
    assert max(len(line) for line in functor.splitlines()) <= 60
    assert "struct atan2_functor {\n  template <typename T>\n  inline T operator()" in kernel  # old code kept
    unformatted = read(clone(fixture_checkout, tmp_path / "plain"), KERNEL)
    assert unformatted == read(fixture_checkout.root, KERNEL)


def test_dtype_limited_xfails_stay_when_the_port_does_not_cover_them(wheel_workspace: Checkout) -> None:
    plan = plan_port(wheel_workspace, "mish")  # floats only; the wheel xfails mish for integer dtypes
    assert plan.dtypes == ("float", "half", "bfloat")
    assert plan.xfail_entries == () and plan.xfail_keys == ()
    assert plan.rows[-1] == RowChange("mish.out", plan.rows[-1].line, "    MPS: mish_out_mps", "")


def test_separate_cpu_and_cuda_lines_collapse_into_one_shared_row(wheel_workspace: Checkout) -> None:
    plan = plan_port(wheel_workspace, "signbit")
    assert [(r.before.strip(), r.after.strip()) for r in plan.rows] == [
        ("CPU: signbit_out", "CPU, CUDA, MPS: signbit_out"), ("CUDA: signbit_out", ""),
        ("MPS: signbit_out_mps", "")]


def test_a_port_that_would_drop_complex_is_refused_with_the_reason(wheel_workspace: Checkout,
                                                                   tmp_path: Path) -> None:
    # Every recipe MPS runs for complex has a complex branch now; signbit's has none, so a tree that
    # runs signbit for complex on MPS refuses its port.
    repo = clone(wheel_workspace, tmp_path / "repo")
    write(repo, COMMON, read(repo, COMMON).replace("SUPPORTED_COMPLEX_OPS = {\n",
                                                   'SUPPORTED_COMPLEX_OPS = {\n            "signbit",\n', 1))
    commit_all(repo, "MPS runs signbit for complex")
    with pytest.raises(PipelineError) as err:
        plan_port(Checkout(repo), "signbit")
    message = str(err.value)
    assert message.startswith(f"{COMMON}:23: ")
    assert ("aten::signbit runs on MPS for complex64 today ('signbit' is in SUPPORTED_COMPLEX_OPS) and the recipe's "
            "functor has no complex branch, so the port would drop complex support; port it by hand") in message


@pytest.mark.parametrize(("op", "out"), [("logical_xor", "bool"), ("acosh", None), ("atanh", None),
                                         ("addcdiv", None)])
def test_complex_capable_recipes_keep_complex_registered(wheel_workspace: Checkout, op: str, out: str | None) -> None:
    plan = plan_port(wheel_workspace, op)
    if op == "addcdiv":  # `value` goes to the kernel as float2 for complex32 too (at::toOpMathType)
        assert plan.registrations == tuple(f"REGISTER_TERNARY_ALPHA_OP(addcdiv, {t}, {a}, {t});" for t, a in (
            ("float", "float"), ("half", "float"), ("bfloat", "float"), ("float2", "float2"), ("half2", "float2")))
        return
    macro = "REGISTER_BINARY_OP" if out else "REGISTER_UNARY_OP"
    regs = [r for r in plan.registrations if not r.startswith("REGISTER_BINARY_CASTOUT_OP(")]
    assert regs[-2:] == [f"{macro}({op}, float2, {out or 'float2'});", f"{macro}({op}, half2, {out or 'half2'});"]
    if out == "bool":  # one template for every dtype: c10::metal::cast_to<bool> tests complex truthiness
        assert "c10::metal::cast_to<bool>" in (plan.functor_source or "")
        assert f"REGISTER_BINARY_CASTOUT_OP({op}, half2, bool);" in plan.registrations
    else:
        assert "is_complex_v<T>" in (plan.functor_source or "")


def test_partly_covered_xfails_are_narrowed_to_what_still_fails(fixture_checkout: Checkout, tmp_path: Path) -> None:
    repo = clone(fixture_checkout, tmp_path / "repo")
    write(repo, COMMON, read(repo, COMMON).replace('"heaviside": None,',
                                                   '"heaviside": [torch.float16, torch.complex64],'))
    commit_all(repo, "heaviside fails for half and complex64 only")
    plan = plan_port(Checkout(repo), "heaviside")
    assert plan.xfail_entries == () and plan.xfail_keys == ("heaviside",)
    assert plan.xfail_narrowed == (("UNIMPLEMENTED_XFAILLIST", "heaviside", 8, ("complex64",)),)
    assert PortPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    apply_port(plan, repo)
    assert '            "heaviside": [torch.complex64],\n            "hypot"' in read(repo, COMMON)
    assert apply_port(plan, repo) == ()
