"""The plan of a table op (real registry dtypes and headers from the wheel) and of one outside the
table: `plan_port` on the wheel workspace, the one plan type every port kind produces."""

from __future__ import annotations

from pathlib import Path

from metalport.port import NEEDS_LLM, HostTemplate, recipe_table
from metalport.port.plan.planner import plan_port


def test_heaviside_plan_from_the_wheel(wheel_workspace) -> None:
    plan = plan_port(wheel_workspace, "heaviside")
    assert not plan.needs_llm
    assert plan.kernel_file == "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    assert plan.host_file == "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
    assert plan.functor == "heaviside_functor" and plan.macro == "REGISTER_BINARY_OP"
    assert plan.dtypes == ("float", "half", "bfloat", "long", "int", "short", "char", "uchar", "bool")
    assert plan.registrations[0] == "REGISTER_BINARY_OP(heaviside, float, float);"
    assert plan.register_dispatch == "REGISTER_DISPATCH(heaviside_stub, &heaviside_mps_kernel);"
    assert plan.stub_header == "ATen/native/BinaryOps.h"
    assert plan.xfail_keys == ("heaviside",)


def test_output_types_follow_the_op() -> None:
    table = recipe_table()
    assert table["logical_and"].registrations(["half"]) == ("REGISTER_BINARY_OP(logical_and, half, bool);",
                                                            "REGISTER_BINARY_CASTOUT_OP(logical_and, half, bool);")
    assert table["acosh"].registrations(["int", "half"]) == (
        "REGISTER_UNARY_OP(acosh, int, float);", "REGISTER_UNARY_OP(acosh, half, half);")
    assert table["sub"].registrations(["long"]) == ("REGISTER_BINARY_ALPHA_OP(sub, long, long, long);",)


def test_stub_parameters_come_from_the_declared_type(wheel_workspace) -> None:
    assert plan_port(wheel_workspace, "sub").stub_params == "TensorIteratorBase& iter, const Scalar& alpha"
    assert plan_port(wheel_workspace, "logical_or").stub_params == "TensorIterator& iter"


def test_backward_ops_register_floats_only_and_keep_forward_xfails(wheel_workspace) -> None:
    plan = plan_port(wheel_workspace, "sigmoid_backward")
    assert plan.dtypes == ("float", "half", "bfloat", "float2", "half2")
    assert plan.xfail_keys == ()


def test_op_outside_the_table_needs_an_llm(wheel_workspace) -> None:
    plan = plan_port(wheel_workspace, "special_airy_ai")
    assert plan.needs_llm and plan.functor_step == NEEDS_LLM == "needs an LLM (--model openai:...)"
    # The family's files are sketched for the model; the functor itself is the model's to write.
    assert plan.functor == "special_airy_ai_functor" and plan.functor_source is None


def test_table_has_twenty_real_ops_in_every_covered_family() -> None:
    table = recipe_table()
    # sub is the alpha family's example, but MPS already runs it on Metal behind `sub_out_mps`
    real = [op for op in table if op != "sub"]
    assert len(real) >= 20 and "heaviside" in table
    assert {r.family for r in table.values()} == {HostTemplate.UNARY, HostTemplate.BINARY, HostTemplate.ALPHA, HostTemplate.TERNARY_ALPHA}


def test_every_table_op_lacks_a_native_mps_kernel_in_the_wheel_registry() -> None:
    import os

    import torchgen
    import yaml

    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native",
                        "native_functions.yaml")
    with open(path, encoding="utf-8") as f:
        entries = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    rows: dict[str, list[str]] = {}
    for entry in entries:
        name = entry["func"].split("(")[0].split(".")[0]
        for keys, kernel in entry.get("dispatch", {}).items():
            dense = [k.strip() for k in keys.split(",")]
            if "MPS" in dense:
                rows.setdefault(name, []).append(kernel)
    for op in recipe_table():
        # missing (no MPS row) or mps-graph (an MPS-only `*_mps` kernel), never shared with CPU
        assert all(k.endswith(("_mps", "_mps_out")) for k in rows.get(op, [])), (op, rows[op])


def test_edits_from_a_plan_create_both_files() -> None:
    from metalport.port.write.host import HostStub, find_stub_declaration, insert_stub
    from metalport.port.write.metal import insert_functor
    from metalport.torch_facts import torch_include_dir

    recipe = recipe_table()["heaviside"]
    kernel = insert_functor(None, recipe.functor, recipe.source, recipe.registrations(["float", "bool"]))
    assert "struct heaviside_functor {" in kernel
    assert kernel.endswith("REGISTER_BINARY_OP(heaviside, float, float);\n"
                           "REGISTER_BINARY_OP(heaviside, bool, bool);\n")
    decl = find_stub_declaration(recipe.stub, torch_include_dir())
    host = insert_stub(None, HostStub("heaviside", recipe.family.value, recipe.stub, decl.header, decl.params),
                       kernel_basename=Path(recipe.kernel_file).stem)
    assert "#include <ATen/native/mps/BinaryKernel_metallib.h>\n" in host
    assert "REGISTER_DISPATCH(heaviside_stub, &heaviside_mps_kernel);\n" in host


def test_edits_refuse_a_plan_that_needs_an_llm(wheel_workspace, tmp_path: Path) -> None:
    import shutil

    import pytest

    from metalport.errors import RecipeError
    from metalport.port.plan.model import NATIVE_FUNCTIONS
    from metalport.port.plan.planner import apply_port

    (tmp_path / NATIVE_FUNCTIONS).parent.mkdir(parents=True)
    shutil.copy(wheel_workspace.root / NATIVE_FUNCTIONS, tmp_path / NATIVE_FUNCTIONS)
    with pytest.raises(RecipeError) as err:
        apply_port(plan_port(wheel_workspace, "special_airy_ai"), tmp_path)
    assert str(err.value) == ("special_airy_ai is not in the recipe table: its functor needs an LLM "
                              "(--model openai:...); rerun with --model openai:<model>")
    assert not any(p.is_file() and p.name != "native_functions.yaml" for p in tmp_path.rglob("*"))
