"""Reuse lines, legacy macros that go with their last user, and what the tree lacks (issue 20)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from metalport.checkout import Checkout
from metalport.port.plan.functors import recipe_table
from metalport.port.tree.reuse import macro_of, missing_legacy, orphaned_macros, remove_macro, reuse_lines

MM = """#define CREATE_X_FUNC(func_out, stub) \\
  Tensor& func_out(const Tensor& self) {  \\
    return self;                          \\
  }

#define CREATE_Y_FUNC(func_out) \\
  Tensor& func_out(const Tensor& self) { return self; }

CREATE_X_FUNC(a_out_mps, a);
CREATE_X_FUNC(b_out_mps, b);
CREATE_Y_FUNC(c_out_mps);
"""


def test_a_macro_goes_only_with_its_last_invocation() -> None:
    assert macro_of(MM, 9) == "CREATE_X_FUNC" and macro_of(MM, 1) is None
    one_gone = MM.replace("CREATE_X_FUNC(a_out_mps, a);\n", "")
    assert orphaned_macros(MM, one_gone) == ()
    both_gone = one_gone.replace("CREATE_X_FUNC(b_out_mps, b);\n", "")
    assert orphaned_macros(MM, both_gone) == ("CREATE_X_FUNC",)
    after = remove_macro(both_gone, "CREATE_X_FUNC")
    assert "CREATE_X_FUNC" not in after and after.startswith("#define CREATE_Y_FUNC(func_out)")
    assert "CREATE_Y_FUNC(c_out_mps);" in after


def test_logical_recipes_reuse_cast_to_and_register_castout_kernels(tmp_path: Path) -> None:
    recipe = recipe_table()["logical_or"]
    assert "c10::metal::cast_to<bool>(a)" in recipe.source and "a.x" not in recipe.source
    regs = recipe.registrations(("float", "float2"))
    assert regs == ("REGISTER_BINARY_OP(logical_or, float, bool);", "REGISTER_BINARY_CASTOUT_OP(logical_or, float, bool);",
                    "REGISTER_BINARY_OP(logical_or, float2, bool);",
                    "REGISTER_BINARY_CASTOUT_OP(logical_or, float2, bool);")
    assert not recipe_table()["heaviside"].castout
    lines = reuse_lines(Checkout(tmp_path), functor_source=recipe.source, registrations=regs,
                        host_call="exec_binary_kernel kBool", kernel_file="k.metal", functor=recipe.functor)
    assert lines[0].startswith("reuses c10::metal::cast_to<bool>") and "(c10/metal/utils.h)" in lines[0]
    assert any(line.startswith("reuses REGISTER_BINARY_CASTOUT_OP (c10/metal/indexing.h)") for line in lines)
    assert any("exec_binary_kernel with natural_output_dtype=kBool" in line for line in lines)
    assert lines[-1] == "adds logical_or_functor to k.metal: no kernel in the tree computes it"


def test_a_row_naming_an_mps_function_no_file_defines_is_said(tmp_path: Path) -> None:
    checkout = Checkout(tmp_path)
    assert missing_legacy(checkout, ("x_out_mps", "y_out_mps"), {"y_out_mps"}) == (
        "legacy `x_out_mps` not found in the tree (it has no mps/operations/*.mm): remove it by hand",)
    ops = tmp_path / "aten/src/ATen/native/mps/operations"
    ops.mkdir(parents=True)
    (ops / "A.mm").write_text("// nothing\n")
    assert missing_legacy(checkout, ("x_out_mps",), set()) == (
        "legacy `x_out_mps` not found in any scanned .mm file: remove it by hand",)


def test_clang_format_is_a_runtime_dependency() -> None:
    meta = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("clang-format") for d in meta["dependencies"])
    assert not any(d.startswith("clang-format") for d in meta["optional-dependencies"]["test"])
