"""The custom-kernel spec recipes of issue 13 (hash_tensor: all-reduce with threadgroup memory and
simd collectives; _adaptive_avg_pool3d: windowed; take: gather; logspace: factory; _foreach_exp:
one launch over a tensor list): each fits the wheel's schema and passes emulated conformance for
every dtype it registers (OpInfo samples, random and held-out cases); one mutated kernel per
recipe fails it. The held-out case past 2^31 elements runs in its own test."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import torch

from metalport.checks.specconformance import LOW_PRECISION_CPU, run_spec_conformance
from metalport.emulate import ShaderLibrary, compile_shader
from metalport.port.spec import LaunchSpec, check_schema, load_spec
from metalport.port.spec_recipes import spec_recipes

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
RECIPES = ("hash_tensor", "_adaptive_avg_pool3d", "take", "logspace", "_foreach_exp")
# One single-bug mutant per recipe: (recipe, the dtype row it is judged at, text, replacement).
MUTANTS = {
    "hash_tensor": ("int64", "  halves.y = simd_xor(halves.y);\n", ""),  # high words never meet
    "_adaptive_avg_pool3d": ("float32", "((o + 1) * in_size + out_size - 1) / out_size",
                             "((o + 1) * in_size) / out_size"),  # window end rounded down
    "take": ("float32", "    flat += numel;\n", ""),  # negative indices not wrapped
    "logspace": ("int64", "static_cast<T>(static_cast<long>(value))", "static_cast<T>(round(value))"),
    "_foreach_exp": ("float32", "chunks[pos.y].y + long(pos.x)", "long(pos.x)"),  # chunk offset lost
}
# Names a recipe's kernel file defines besides its kernel, renamed in its mutant's copy.
HELPERS = {"hash_tensor": ("hash_widen_float_bits", "hash_bits"),
           "_adaptive_avg_pool3d": ("pool_window_start", "pool_window_end"),
           "_foreach_exp": ("ForeachAddress",)}


def _mutant_source(op: str) -> str:
    """The recipe's kernel with its mutation; its kernel, helpers and macros renamed `mut_...`."""
    recipe = spec_recipes()[op]
    _, old, new = MUTANTS[op]
    assert recipe.kernel_source.count(old) == 1, op
    text = recipe.kernel_source.replace(old, new)
    name = recipe.spec.kernel_name
    for ident in (name, *HELPERS.get(op, ())):
        text = re.sub(rf"\b{ident}\b", f"mut_{ident}", text)
    return text.replace(f'"{name}_"', f'"mut_{name}_"').replace("REGISTER_", "REGISTER_MUT_")


def _mutant_spec(op: str) -> LaunchSpec:
    data = spec_recipes()[op].spec.to_dict()
    data["kernel"]["name"] = f"mut_{data['kernel']['name']}"
    return load_spec(data)


@pytest.fixture(scope="session")
def recipe_library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShaderLibrary]:
    """Every recipe and every mutant in one library (one compile)."""
    recipes = spec_recipes()
    source = HEADER + "".join(recipes[op].kernel_source for op in RECIPES)
    source += "".join(_mutant_source(op) for op in RECIPES)
    library = compile_shader(source, cache_dir=tmp_path_factory.mktemp("recipes13"), filename="recipes.metal")
    yield library
    library.close()


@pytest.mark.parametrize("op", RECIPES)
def test_recipe_fits_the_schema_and_passes_conformance_for_every_dtype(recipe_library: ShaderLibrary,
                                                                        op: str) -> None:
    spec = spec_recipes()[op].spec
    func = getattr(getattr(torch.ops.aten, op), spec.overload or "default")
    check_schema(spec, str(func._schema).removeprefix("aten::"))
    report = run_spec_conformance(None, spec, library=recipe_library, seed=13, include_large=False)
    assert report.status == "pass", [f.message for d in report.dtypes for f in d.failures]
    assert report.skipped == 0
    assert {d.dtype for d in report.dtypes} == {dict(float="float32", half="float16", bfloat="bfloat16",
                                                     long="int64", int="int32", short="int16", char="int8",
                                                     uchar="uint8", bool="bool", float2="complex64")[t[0]]
                                                for t in spec.dtypes}
    for verdict in report.dtypes:
        assert verdict.tallies["opinfo"].samples > 0, verdict.dtype
        assert verdict.tallies["random"].samples > 0, verdict.dtype
        assert verdict.tallies["held-out"].samples > 0, verdict.dtype
        # The only accepted divergence is torch's own low-precision CPU result (bfloat16 pooling).
        assert all(LOW_PRECISION_CPU in w for w in verdict.warnings), verdict.warnings


@pytest.mark.parametrize("op", RECIPES)
def test_mutated_kernel_fails_conformance(recipe_library: ShaderLibrary, op: str) -> None:
    row = MUTANTS[op][0]
    report = run_spec_conformance(None, _mutant_spec(op), library=recipe_library, seed=13, dtypes=[row],
                                  include_large=False)
    assert report.status == "fail"
    failures = [f.message for d in report.dtypes for f in d.failures]
    assert failures and all(row in m for m in failures), failures


def test_take_reads_past_two_to_the_31_elements(recipe_library: ShaderLibrary) -> None:
    spec = spec_recipes()["take"].spec
    report = run_spec_conformance(None, spec, library=recipe_library, seed=13, dtypes=["bool"])
    assert report.status == "pass", [f.message for d in report.dtypes for f in d.failures]
    held = report.dtypes[0].tallies["held-out"]
    assert held.samples == held.passed == 3  # two small held-out cases and the large one
