"""The custom-kernel spec recipes of issue 13 (hash_tensor: all-reduce with threadgroup memory and
simd collectives; _adaptive_avg_pool3d: windowed; take: gather; logspace: factory; _foreach_exp:
one launch over a tensor list), each ported on a wheel workspace: plan, apply (rows, kernel and
host files), contract, emulated build of the applied kernel file and conformance for every dtype
it registers (OpInfo samples, random and held-out cases). One mutated kernel per recipe fails
conformance. The held-out case past 2^31 elements runs in its own test."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from collections.abc import Iterator

import pytest
import torch

from metalport.checkout import Checkout
from metalport.checks.contract.rules import check_contract
from metalport.checks.host.spec import HostCheckFailed, bind_call, plan_launch
from metalport.checks.conformance import _row_name, run_conformance
from metalport.emulate import ShaderLibrary, compile_shader
from metalport.port.plan.model import NATIVE_FUNCTIONS
from metalport.port.plan.planner import apply_port, plan_port
from metalport.port.spec.model import CheckSpec, LaunchSpec, load_spec
from metalport.port.spec.recipes import spec_recipes

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
OPINFO = "torch/testing/_internal/common_methods_invocations.py"
RECIPES = ("hash_tensor", "_adaptive_avg_pool3d", "take", "logspace", "_foreach_exp", "_ctc_loss")
# One single-bug mutant per recipe: (recipe, the dtype row it is judged at, text, replacement).
MUTANTS = {
    "hash_tensor": ("int64", "  halves.y = simd_xor(halves.y);\n", ""),  # high words never meet
    "_adaptive_avg_pool3d": ("float32", "((o + 1) * in_size + out_size - 1) / out_size",
                             "((o + 1) * in_size) / out_size"),  # window end rounded down
    "take": ("float32", "    flat += numel;\n", ""),  # negative indices not wrapped
    "logspace": ("int64", "static_cast<T>(static_cast<long>(value))", "static_cast<T>(round(value))"),
    "_foreach_exp": ("float32", "chunks[pos.y].y + long(pos.x)", "long(pos.x)"),  # chunk offset lost
    # The jump over a blank taken between two equal labels too.
    "_ctc_loss": ("float32,int64", "const bool skip = s > 1 && ctc_state_label(labels, s - 2, p.blank) != label;",
                  "const bool skip = s > 1;"),
}
# Rows no OpInfo sample reaches: ctc_loss's OpInfo gives int64 targets only.
NO_OPINFO_ROWS = {"_ctc_loss": {"float32,int32"}}
# Names a recipe's kernel file defines besides its kernel, renamed in its mutant's copy.
HELPERS = {"hash_tensor": ("hash_widen_float_bits", "hash_bits"),
           "_adaptive_avg_pool3d": ("pool_window_start", "pool_window_end"),
           "_foreach_exp": ("ForeachAddress",), "_ctc_loss": ("ctc_state_label", "ctc_log_sum3", "CtcLossParams")}


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
def mutant_library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShaderLibrary]:
    """Every recipe's mutant, and take (for the large case) and hash_tensor (for refused calls) as
    shipped, in one library."""
    source = HEADER + spec_recipes()["take"].kernel_source + spec_recipes()["hash_tensor"].kernel_source
    source += "".join(_mutant_source(op) for op in RECIPES)
    library = compile_shader(source, cache_dir=tmp_path_factory.mktemp("recipes13"), filename="mutants.metal")
    yield library
    library.close()


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    """A wheel workspace the ports branch from (one git worktree per op)."""
    from metalport.checkout import init_workspace

    return init_workspace(tmp_path_factory.mktemp("recipes13-ws") / "workspace")


@pytest.mark.parametrize("op", RECIPES)
def test_recipe_ports_keeps_the_contract_builds_and_passes_conformance_for_every_dtype(
        workspace: Checkout, op: str) -> None:
    spec = spec_recipes()[op].spec
    plan = plan_port(workspace, f"aten::{op}")
    assert not plan.needs_llm and plan.spec == spec.to_dict()
    worktree = workspace.root.parent / f"port-{op}"
    subprocess.run(["git", "worktree", "add", "-q", "-b", f"port-{op}", str(worktree)], cwd=workspace.root,
                   check=True, capture_output=True)
    changed = apply_port(plan, worktree)
    assert {NATIVE_FUNCTIONS, spec.kernel_file, spec.host_file} <= set(changed)
    registry = (worktree / NATIVE_FUNCTIONS).read_text()
    assert f"MPS: {spec.host_function}\n" in registry
    for extra in (spec.host_out_function, spec.host_inplace_function):
        assert extra is None or f"MPS: {extra}\n" in registry
    assert [f.message for f in check_contract(workspace.root, worktree, plan)] == []
    # The emulated build compiles the applied kernel file; conformance launches it from the spec.
    report = run_conformance(worktree, spec, seed=13, include_large=False)
    assert report.status == "pass", [f.message for d in report.dtypes for f in d.failures]
    assert report.skipped == 0
    assert [d.dtype for d in report.dtypes] == [_row_name(spec, t) for t in spec.dtypes]
    for verdict in report.dtypes:
        for kind in ("opinfo", "random", "held-out"):
            if kind == "opinfo" and verdict.dtype in NO_OPINFO_ROWS.get(op, ()):
                continue
            assert verdict.tallies[kind].samples > 0, (verdict.dtype, kind)
        # no case is out of scope: a spec kernel is right by CPU or by the float64 truth (Note [spec truth])
        assert verdict.out_of_scope_cases == (), verdict.out_of_scope_cases


def test_the_conformance_command_launches_a_spec_port_by_its_spec(workspace: Checkout, capsys: pytest.CaptureFixture) -> None:
    """`metalport conformance aten::take` on the ported tree runs the spec's launch (a pointwise
    host model knows no such kernel); a dtype the spec has no row for is one line, exit 2."""
    import json

    from metalport.cli import main

    worktree = workspace.root.parent / "cli-take"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "cli-take", str(worktree)], cwd=workspace.root,
                   check=True, capture_output=True)
    apply_port(plan_port(workspace, "aten::take"), worktree)
    code = main(["conformance", "aten::take", "--repo", str(worktree), "--dtypes", "float32,int64", "--seed", "5",
                 "--no-held-out", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["status"] == "pass", report
    assert [d["dtype"] for d in report["dtypes"]] == ["float32", "int64"]
    assert main(["conformance", "aten::take", "--repo", str(worktree), "--dtypes", "float64"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("metalport: error: spec take has no dtype row float64") and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("op", RECIPES)
def test_mutated_kernel_fails_conformance(mutant_library: ShaderLibrary, op: str) -> None:
    row = MUTANTS[op][0]
    report = run_conformance(None, _mutant_spec(op), library=mutant_library, seed=13, dtypes=[row],
                                  include_large=False)
    assert report.status == "fail"
    failures = [f.message for d in report.dtypes for f in d.failures]
    assert failures and all(row in m for m in failures), failures


def test_take_reads_past_two_to_the_31_elements(mutant_library: ShaderLibrary) -> None:
    spec = spec_recipes()["take"].spec
    report = run_conformance(None, spec, library=mutant_library, seed=13, dtypes=["bool"])
    assert report.status == "pass", [f.message for d in report.dtypes for f in d.failures]
    held = report.dtypes[0].tallies["held-out"]
    assert held.samples == held.passed == 3  # two small held-out cases and the large one


def test_hash_tensor_refuses_unknown_modes_with_torchs_message(mutant_library: ShaderLibrary) -> None:
    spec = spec_recipes()["hash_tensor"].spec
    report = run_conformance(None, spec, library=mutant_library, seed=13, dtypes=["int64"], include_large=False)
    assert report.status == "pass", [f.message for d in report.dtypes for f in d.failures]
    shipped = report.dtypes[0].tallies["held-out"]
    assert shipped.samples == shipped.passed >= 2  # the two refused modes among them
    # Without its check the kernel computes mode 0 for any mode: a silently wrong result, failed
    # (held-out inputs are withheld, so the two refused modes show as a count).
    report = run_conformance(None, dataclasses.replace(spec, checks=()), library=mutant_library, seed=13,
                                  dtypes=["int64"], include_large=False)
    held = report.dtypes[0].tallies["held-out"]
    assert report.status == "fail" and (held.samples, held.passed) == (shipped.samples, shipped.samples - 2)
    # The same calls as random cases show their reasons; a check worded unlike torch fails too.
    refused = {"random": [{"self": {"shape": [3, 4]}, "dim": [1], "mode": 1},
                          {"self": {"shape": [5]}, "mode": -1}]}
    for checks, reason in [((), "torch refuses the call (Unknown hash_tensor mode: 1), the host computes a result"),
                           ((CheckSpec("mode == 0", "bad mode {mode}"),),
                            "torch refuses the call with 'Unknown hash_tensor mode: -1', the host with 'bad mode -1'")]:
        probe = dataclasses.replace(spec, checks=checks, cases=refused)
        report = run_conformance(None, probe, library=mutant_library, seed=13, dtypes=["int64"],
                                      include_held_out=False)
        failures = [f.message for d in report.dtypes for f in d.failures]
        assert report.status == "fail" and any(reason in m for m in failures), failures
    with pytest.raises(HostCheckFailed, match="^Unknown hash_tensor mode: 2$"):
        plan_launch(spec, bind_call(torch.ops.aten.hash_tensor.default, (torch.ones(3),), {"mode": 2}))


def test_logspace_decorators_are_narrowed_to_the_dtypes_it_leaves_out(workspace: Checkout) -> None:
    plan = plan_port(workspace, "aten::logspace")
    assert plan.decorator_entries == ()  # none is made to pass for every dtype
    # test_out_requires_grad_error, test_noncontiguous_samples, test_out of both logspace OpInfos
    # (the plain one and the tensor-overload variant)
    assert len(plan.decorator_narrowed) == 6
    assert {kept for *_, kept in plan.decorator_narrowed} == {("complex64", "uint8")}
    assert {kept for *_, kept in plan.xfail_narrowed} == {("complex64", "uint8")}
    worktree = workspace.root.parent / "narrow-logspace"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "narrow-logspace", str(worktree)], cwd=workspace.root,
                   check=True, capture_output=True)
    rel, before = OPINFO, (workspace.root / OPINFO).read_text()
    assert rel in apply_port(plan, worktree)
    after = (worktree / rel).read_text()
    assert len(after.splitlines()) == len(before.splitlines())
    for test in ("test_out_requires_grad_error", "test_noncontiguous_samples", "test_out"):
        line = f"DecorateInfo(unittest.expectedFailure, 'TestCommon', '{test}', device_type='mps')"
        assert after.count(line) == before.count(line) - 2, test  # linspace keeps its own
        assert after.count(line[:-1] + ", dtypes=(torch.complex64, torch.uint8))") == 2, test
    assert apply_port(plan, worktree) == ()  # a second apply changes nothing
    assert [f.message for f in check_contract(workspace.root, worktree, plan)] == []
    # Removing a narrowed decorator whole (uint8 and complex tests would fail on a Mac) breaks the contract.
    text = after.replace(", device_type='mps', dtypes=(torch.complex64, torch.uint8))", ", device_type='mps')", 1)
    (worktree / rel).write_text(text)
    messages = [f.message for f in check_contract(workspace.root, worktree, plan)]
    assert any(m.startswith("[decorators] logspace's MPS decorator should list exactly the dtypes the port leaves "
                            "failing (complex64, uint8)") for m in messages), messages
