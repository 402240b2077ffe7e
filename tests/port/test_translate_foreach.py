"""`_foreach_<name>` rows on the real corpus: the tree's `<name>_functor` launched over the tensor
list by the `_foreach_exp` recipe's per-chunk launch, to the gate; other rows declined with why."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.cli import main
from metalport.port.plan.planner import plan_port
from tests.real_tree import overlay_real_tree

UNARY = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory):
    return overlay_real_tree(tmp_path_factory.mktemp("real") / "tree")


def test_a_foreach_op_launches_the_trees_functor(real) -> None:
    plan = plan_port(real, "_foreach_sin")
    assert plan.functor_step == "translate" and not plan.needs_llm and plan.kind == "multi-tensor"
    assert plan.kernel_file == UNARY and plan.host_file == "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
    assert plan.reuse[0].startswith(f"reuses sin_functor ({UNARY}, the tree's) in the _foreach_exp recipe's")
    source = plan.functor_source or ""
    assert "out0[tensor].data[i] = static_cast<T>(sin_functor()(self[tensor].data[i]));" in source
    assert "struct SinForeachAddress {" in source and "ForeachAddress<" not in source.replace("SinForeachAddress<", "")
    assert [r for r in source.splitlines() if r.startswith("REGISTER_FOREACH_SIN(")] == [
        "REGISTER_FOREACH_SIN(float);", "REGISTER_FOREACH_SIN(half);", "REGISTER_FOREACH_SIN(bfloat);"]


def test_foreach_rows_without_a_functor_are_declined_with_why(real) -> None:
    plan = plan_port(real, "_foreach_zero")
    assert plan.needs_llm
    assert plan.translate_declined == ("no kernel file of the tree registers a unary zero_functor (REGISTER_UNARY_OP), "
                                       "and the recipe table has no one-operand zero functor")


@pytest.mark.parametrize(("op", "operands"), [
    ("_foreach_add", "Scalar: scalar; List: other, alpha; ScalarList: scalars; Tensor: other, alpha"),
    ("_foreach_maximum", "Scalar: scalar; List: other; ScalarList: scalars"),
])
def test_binary_and_scalar_foreach_rows_are_declined_with_their_operands(real, op: str, operands: str) -> None:
    plan = plan_port(real, op)
    assert plan.needs_llm
    assert plan.translate_declined == (
        f"every overload of {op} takes a second operand ({operands}): the _foreach_exp launch the tree's functors "
        "are reused through runs one tensor list through a one-operand functor, with no slot for another list, "
        "tensor or scalar")


def test_a_functor_a_c10_metal_macro_writes_is_the_trees(real) -> None:
    # UnaryKernel.metal writes erf_functor with DEFINE_UNARY_FLOATING_FUNCTOR(erf);
    plan = plan_port(real, "_foreach_erf")
    assert plan.functor_step == "translate" and not plan.needs_llm and plan.kernel_file == UNARY
    assert "out0[tensor].data[i] = static_cast<T>(erf_functor()(self[tensor].data[i]));" in (plan.functor_source or "")


def test_backlog_counts_the_foreach_rows_the_tree_serves(real, capsys: pytest.CaptureFixture) -> None:
    assert main(["backlog", "--repo", str(real.root), "--kind", "multi-tensor", "--porter", "translate",
                 "--format", "tsv"]) == 0
    ops = {row.split("\t")[1] for row in capsys.readouterr().out.splitlines()[1:]}
    assert {"_foreach_sin", "_foreach_tanh", "_foreach_sigmoid", "_foreach_log1p", "_foreach_floor"} <= ops
    assert "_foreach_exp" not in ops and "_foreach_add" not in ops  # a recipe; no unary functor


def test_a_foreach_port_passes_emulated_conformance_at_the_gate(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    root = overlay_real_tree(tmp_path / "tree", writable=True).root
    code = main(["run", "aten::_foreach_tanh", "--repo", str(root), "--executor", "emulated", "--no-input",
                 "--run-id", "fe-1"])
    err = capsys.readouterr().err
    assert code == 0 and "run fe-1 is waiting for review at the gate" in err, err


def test_a_foreach_row_the_tree_has_no_functor_for_takes_the_recipe_tables(real) -> None:
    # Note [foreach from the recipe table]: the tree has no frac_functor; the recipe table's frac
    # math is defined in the kernel under a name of its own and launched over the list
    plan = plan_port(real, "_foreach_frac")
    assert plan.functor_step == "translate" and not plan.needs_llm and plan.kernel_file == UNARY
    assert plan.reuse[0].startswith("adds the recipe table's frac functor as foreach_frac_functor to ")
    source = plan.functor_source or ""
    assert source.startswith("struct foreach_frac_functor {") and "return x - ::metal::trunc(x);" in source
    assert "out0[tensor].data[i] = static_cast<T>(foreach_frac_functor()(self[tensor].data[i]));" in source
    assert "struct frac_functor" not in source  # a later frac port adds its own without a clash


def test_a_foreach_row_from_the_recipe_table_passes_emulated_conformance(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture) -> None:
    root = overlay_real_tree(tmp_path / "tree", writable=True).root
    code = main(["run", "aten::_foreach_sign", "--repo", str(root), "--executor", "emulated", "--no-input",
                 "--run-id", "fe-sign"])
    err = capsys.readouterr().err
    assert code == 0 and "run fe-sign is waiting for review at the gate" in err, err
    assert main(["runs", "show", "fe-sign", "--repo", str(root), "--json"]) == 0
    import json

    test = json.loads(capsys.readouterr().out)["verdicts"]["test"]
    assert test["ok"] and test["judged"] and test["failures"] == 0, test
