"""Conformance of spec-launched kernels: the shipped recipes pass over OpInfo samples, random and
held-out cases; a mutated kernel, a wrong grid, a kernel writing past its output or leaving an
output element unwritten and a grid larger than the data fail, each with its one-line reason."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import torch

from metalport.checks.cases.numerics import draw
from metalport.checks.host.backend import KernelFile, KernelSet
from metalport.checks.host.spec import bind_call, plan_launch, run_launch
from metalport.checks.cases.case import build_cases
from metalport.checks.cases.spec import SpecCases
from metalport.checks.conformance import run_conformance
from metalport.emulate import compile_shader
from metalport.errors import SpecError
from metalport.port.spec.model import Grid, load_spec
from metalport.port.spec.recipes import spec_recipes

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def _mutant(op: str, name: str, old: str, new: str) -> str:
    """The recipe's kernel with one edit, its kernel and host names renamed to `name`."""
    recipe = spec_recipes()[op]
    source = recipe.kernel_source
    assert old in source
    kernel = recipe.spec.kernel_name
    return source.replace(old, new).replace(f"{kernel}(", f"{name}(").replace(f"{kernel}<", f"{name}<") \
        .replace(f'"{kernel}_"', f'"{name}_"').replace("struct PowSumParams", f"struct PowSumParams_{name}") \
        .replace("PowSumParams&", f"PowSumParams_{name}&").replace("PowSumParams &", f"PowSumParams_{name} &") \
        .replace("ForeachAddress", f"ForeachAddress_{name}")


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> object:
    recipes = spec_recipes()
    source = HEADER + recipes["mode"].kernel_source + recipes["linalg__powsum"].kernel_source
    source += _mutant("linalg__powsum", "powsum_sq", "params.ord)", "2.0f)")  # ignores ord
    source += _mutant("linalg__powsum", "powsum_drift", "output[slice] = static_cast<O>(partial[0]);",
                      "output[slice] = static_cast<O>(partial[0] * 1.000005f);")  # 5e-6 relative, every sum
    term = "acc += ::metal::pow(::metal::abs(static_cast<float>(row[i])), params.ord);"
    source += _mutant("linalg__powsum", "powsum_nan", term,  # a NaN element skipped: the norm loses it
                      term.replace("acc += ", "acc += row[i] != row[i] ? 0.0f : "))
    source += _mutant("linalg__powsum", "powsum_inf", term,  # each term clamped: an infinity never reaches the sum
                      term.replace("acc += ::metal::pow(", "acc += ::metal::min(3.0e38f, ::metal::pow(")
                      .replace("params.ord);", "params.ord));"))
    source += _mutant("mode", "mode_big", "v < row[best]", "v > row[best]")  # ties to the larger value
    source += _mutant("mode", "mode_oob", "values[slice] = row[best];", "values[slice + 1] = row[best];")
    source += _mutant("mode", "mode_under", "values[slice] = row[best];", "values[long(slice) - 1] = row[best];")
    source += _mutant("mode", "mode_skip", "values[slice] = row[best];",
                      "if (slice != 1) { values[slice] = row[best]; }")  # the second slice's value never written
    source += _mutant("_foreach_exp", "foreach_skip", "if (i >= numels[tensor])",
                      "if (i + 1 >= numels[tensor])")  # each tensor's last element never written
    source += _mutant("_foreach_exp", "foreach_past", "out0[tensor].data[i] =", "out0[tensor].data[i + 1] =")
    library = compile_shader(source, cache_dir=tmp_path_factory.mktemp("spec-conf"))
    yield library
    library.close()


def _kernels(lib: object) -> KernelSet:
    return KernelSet("emulated", [KernelFile(Path("lib.metal"), lib)])


def _spec(op: str, **changes: object):
    data = spec_recipes()[op].spec.to_dict()
    for key, value in changes.items():
        if key == "kernel_name":
            data["kernel"]["name"] = value
        else:
            data[key] = value
    return load_spec(data)


@pytest.mark.parametrize("op, rows", [("mode", ("float32", "int64", "bool")),
                                      ("linalg__powsum", None)])
def test_shipped_recipe_passes_every_case_kind(lib: object, op: str, rows: tuple[str, ...] | None) -> None:
    report = run_conformance(None, spec_recipes()[op].spec, library=lib, seed=7, dtypes=rows)
    assert report.status == "pass", [f.message for d in report.dtypes for f in d.failures]
    assert report.skipped == 0
    for verdict in report.dtypes:
        assert verdict.tally("random").samples >= 12
        floating = not verdict.dtype.startswith(("int", "bool"))  # two more: special values (Note [special values in spec cases])
        assert verdict.held_out_samples == (9 if floating else 7)
    if op == "mode":
        assert all(d.tally("opinfo").samples >= 7 for d in report.dtypes)
        assert {d.dtype for d in report.dtypes} == {"float32", "int64", "bool"}
    else:
        assert {d.dtype for d in report.dtypes} == {"float32", "float16", "bfloat16", "float16->float32",
                                                   "bfloat16->float32"}


def test_kernel_ignoring_a_scalar_fails(lib: object) -> None:
    report = run_conformance(None, _spec("linalg__powsum", kernel_name="powsum_sq"), library=lib, seed=3,
                                  dtypes=("float32",))
    assert report.status == "fail"
    assert "output 0" in report.dtypes[0].failures[0].message


def test_a_spec_kernel_is_judged_at_test_mps_tolerance_not_a_looser_table_of_its_own(lib: object) -> None:
    # 5e-6 relative on every float32 sum: inside the 1e-5 a launch spec once had for itself, outside
    # test_mps's 1.3e-6 (and the float64 truth's) that an elementwise port is judged by.
    report = run_conformance(None, _spec("linalg__powsum", kernel_name="powsum_drift"), library=lib, seed=3,
                                  dtypes=("float32",))
    assert report.status == "fail"
    assert "output 0" in report.dtypes[0].failures[0].message


@pytest.mark.parametrize("seed", [5, 7, 11])
@pytest.mark.parametrize("kernel", ["powsum_nan", "powsum_inf"])
def test_a_reduction_mishandling_nan_or_inf_fails_at_every_seed(lib: object, kernel: str, seed: int) -> None:
    """Note [special values in spec cases]: reductions see NaN and infinities, so these bugs fail."""
    report = run_conformance(None, _spec("linalg__powsum", kernel_name=kernel), library=lib, seed=seed,
                                  dtypes=("float32",))
    assert report.status == "fail", kernel


def test_kernel_breaking_count_ties_the_wrong_way_fails(lib: object) -> None:
    report = run_conformance(None, _spec("mode", kernel_name="mode_big"), library=lib, seed=3,
                                  dtypes=("int32",))
    assert report.status == "fail"
    assert "output 0" in report.dtypes[0].failures[0].message


def test_wrong_grid_fails(lib: object) -> None:
    # The powsum kernel reduces one slice per threadgroup: one thread per output element misses
    # every slice element but the first of each thread's group.
    spec = _spec("linalg__powsum", geometry={"grid": "per-output-element", "threadgroup": 32})
    report = run_conformance(None, spec, library=lib, seed=3, dtypes=("float32",))
    assert report.status == "fail"


def test_kernel_writing_past_its_output_is_caught_by_the_guard_band(lib: object) -> None:
    report = run_conformance(None, _spec("mode", kernel_name="mode_oob"), library=lib, seed=3,
                                  dtypes=("float32",))
    assert report.status == "fail"
    message = report.dtypes[0].failures[0].message
    assert "writes outside its output 'values'" in message


def test_kernel_writing_before_its_output_is_caught_by_the_leading_guard_band(lib: object) -> None:
    spec = _spec("mode", kernel_name="mode_under")  # slice 0 writes values[-1]
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(0))
    for limit in (2**31 - 1, 2):  # one launch, and whole-slice chunks bound at their first element
        launch = plan_launch(spec, bind_call(torch.ops.aten.mode.default, (x, 1), {}))
        with pytest.raises(SpecError) as err:
            run_launch(spec, _kernels(lib), launch, index_limit=limit * 5)
        assert err.value.message == ("spec mode: outputs: kernel mode_under_float_float_long writes outside its "
                                  "output 'values' (1 element(s) of the guard band before it changed)")
    report = run_conformance(None, spec, library=lib, seed=3, dtypes=("float32",))
    assert report.status == "fail"
    assert "writes outside its output 'values' (1 element(s) of the guard band before it changed)" in \
        report.dtypes[0].failures[0].message


def test_kernel_writing_past_a_list_output_is_caught_by_the_guard_band(lib: object) -> None:
    report = run_conformance(None, _spec("_foreach_exp", kernel_name="foreach_past"), library=lib, seed=3,
                                  dtypes=("float32",))
    assert report.status == "fail"
    assert "kernel foreach_past_float_float writes outside an output of list 'out0'" in \
        report.dtypes[0].failures[0].message


@pytest.mark.parametrize("row", ["float32", "int64"])
def test_kernel_leaving_an_output_element_unwritten_fails_naming_it(lib: object, row: str) -> None:
    metal = {"float32": "float", "int64": "long"}[row]
    report = run_conformance(None, _spec("mode", kernel_name="mode_skip"), library=lib, seed=3, dtypes=(row,))
    assert report.status == "fail"
    messages = [f.message for f in report.dtypes[0].failures if "held-out cases fail" not in f.message]
    pattern = rf"output 0: 1 of \d+ output elements never written by mode_skip_{metal}_{metal}_long$"
    assert messages and all(re.search(pattern, m) for m in messages), messages


def test_kernel_leaving_a_list_output_element_unwritten_fails_naming_it(lib: object) -> None:
    report = run_conformance(None, _spec("_foreach_exp", kernel_name="foreach_skip"), library=lib, seed=3,
                                  dtypes=("float32",))
    assert report.status == "fail"
    messages = [f.message for f in report.dtypes[0].failures if "held-out cases fail" not in f.message]
    assert messages and all(re.search(r"output \d+: 1 of \d+ output elements never written by "
                                      r"foreach_skip_float_float$", m) for m in messages), messages


def test_complex_random_inputs_have_nonzero_imaginary_parts() -> None:
    gen = torch.Generator().manual_seed(0)
    for ties in (False, True):
        x = draw((200,), torch.complex64, gen, ties=ties)
        assert bool((x.imag != 0).any()) and bool((x.real != 0).any())
    assert len(set(draw((200,), torch.complex64, gen, ties=True).tolist())) <= 49  # few values: counts tie
    # Both the spec's own random calls (take) and the drawn reductions (mode, with ties) get them.
    take = spec_recipes()["take"].spec
    mode = _spec("mode", dtypes=[["float2", "float2", "long"]])
    for spec, types in ((take, ("float2", "long", "float2")), (mode, ("float2", "float2", "long"))):
        cases, _ = build_cases(SpecCases(spec, types, torch.Generator().manual_seed(1), include_large=False), True)
        drawn = [a for c in cases if c.kind != "opinfo" for a in c.call.args
                 if isinstance(a, torch.Tensor) and a.is_complex() and a.numel() >= 6]  # (ties: 1/7 are real)
        assert drawn and all(bool((a.imag != 0).any()) for a in drawn), spec.op


def test_grid_larger_than_the_data_is_a_spec_error(lib: object) -> None:
    spec = _spec("mode", geometry={"grid": "per-output-element", "threads": "numel * 2"})
    x = torch.arange(12.0).reshape(3, 4)
    with pytest.raises(SpecError, match=r"^spec mode: geometry.threads: 24 threads for 12 elements: the grid is "
                                        r"larger than the data$"):
        plan_launch(spec, bind_call(torch.ops.aten.mode.default, (x, 1), {}))


def test_32bit_split_gives_the_same_result(lib: object) -> None:
    spec = spec_recipes()["linalg__powsum"].spec
    x = torch.randn(50, 300, generator=torch.Generator().manual_seed(0))
    call = bind_call(torch.ops.aten.linalg__powsum.default, (x, 3.0, [1]), {})
    whole = run_launch(spec, _kernels(lib), plan_launch(spec, call))[0]
    split = run_launch(spec, _kernels(lib), plan_launch(spec, call), index_limit=1000)[0]  # 3 slices a launch
    assert torch.equal(whole, split)
    torch.testing.assert_close(whole, torch.ops.aten.linalg__powsum(x, 3.0, [1]), rtol=1e-5, atol=1e-5)


def test_mode_index_of_a_repeated_value_passes_with_a_note_only_when_it_names_an_equal_element(
        lib: object) -> None:
    report = run_conformance(None, spec_recipes()["mode"].spec, library=lib, seed=5, dtypes=("int32",))
    verdict = report.dtypes[0]
    assert report.status == "pass" and verdict.tally("held-out").out_of_scope == 0
    assert "index of a repeated value is unspecified" in (report.reason or "")
    assert dataclasses.replace(spec_recipes()["mode"].spec).geometry.grid is Grid.PER_OUTPUT_ELEMENT


def test_a_tensor_list_launch_on_mps_is_a_call_skipped_with_its_reason_not_a_failure() -> None:
    # torch.mps.compile_shader binds no argument buffers: on a Mac a tensor-list spec's cases are
    # skipped (counted, the report partial), never failed for a harness limit.
    from metalport.checks.host.backend import UnmodelledCall

    spec = spec_recipes()["_foreach_exp"].spec
    launch = plan_launch(spec, bind_call(torch.ops.aten._foreach_exp.default, ([torch.ones(3), torch.ones(300)],), {}))
    with pytest.raises(UnmodelledCall, match="Tensor\\[\\] launches run on the emulated backend only"):
        run_launch(spec, KernelSet("mps", []), launch)
