"""The macOS executor off-Mac: its build/test argv (defaults, ccache, metalport.yaml overrides,
grad tests from OpInfo), its test path on real unittest sessions, and what it reports without MPS."""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from pathlib import Path

import pytest

from metalport.port.plan.launch import LaunchKind
from metalport.port.plan.planner import PortPlan
from metalport.config import AgentConfig, ExecutorConfig, load_config
from metalport.errors import UsageError
from metalport.executors import MacosExecutor, select_executor
from metalport.executors.macos import build_failures, failing_tests, opinfo_for
from metalport.failure import Failure
from metalport.sandbox import run_command
from tests.executors.test_macos_parsers import BROKEN, TESTS

PLAN = PortPlan(
    op="heaviside", status="missing", family="binary-pointwise", rows=(),
    kernel_file="aten/src/ATen/native/mps/kernels/BinaryKernel.metal", functor="heaviside_functor",
    functor_source="struct heaviside_functor {};\n", dtypes=("float",), registrations=(),
    host_file="aten/src/ATen/native/mps/operations/BinaryKernel.mm", register_dispatch=None,
    kernel_name="heaviside", legacy=None, legacy_include=None, xfail_keys=("heaviside",),
    allowed_paths=(), needs_llm=False, migrate=False, launch_kind=LaunchKind.ELEMENTWISE, stub="heaviside_stub")


def _fake_ccache(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "ccache"
    exe.write_text("#!/bin/sh\nexec \"$@\"\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def test_default_build_argv_first_time_then_ninja(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no ccache here
    executor = MacosExecutor()
    assert executor.build_argv(tmp_path) == ([sys.executable, "setup.py", "develop"], {})
    (tmp_path / "build").mkdir()
    (tmp_path / "build/build.ninja").write_text("")
    assert executor.build_argv(tmp_path) == (["ninja", "-C", "build", "torch_cpu"], {})


def test_ccache_on_path_sets_its_base_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(_fake_ccache(tmp_path)))
    assert MacosExecutor().build_argv(tmp_path)[1] == {"CCACHE_BASEDIR": str(tmp_path)}
    configured = MacosExecutor(ExecutorConfig(build=("make", "torch_cpu")))
    assert configured.build_argv(tmp_path) == (["make", "torch_cpu"], {"CCACHE_BASEDIR": str(tmp_path)})


def test_test_argv_runs_grad_tests_only_for_ops_with_a_backward() -> None:
    executor = MacosExecutor()
    assert executor.test_argv(PLAN) == [sys.executable, "test/test_mps.py", "-v", "-k", "test_output_match_heaviside"]
    mish = dataclasses.replace(PLAN, op="mish", xfail_keys=())
    assert opinfo_for(mish) == ("nn.functional.mish", True)
    assert executor.test_argv(mish)[-4:] == ["-k", "test_output_match_nn_functional_mish",
                                             "-k", "test_output_grad_match_nn_functional_mish"]
    backward = dataclasses.replace(PLAN, op="sigmoid_backward", xfail_keys=())
    assert executor.test_argv(backward)[-4:] == ["-k", "test_output_match_sigmoid",
                                                 "-k", "test_output_grad_match_sigmoid"]


def test_metalport_yaml_overrides_both_commands(tmp_path: Path) -> None:
    config = tmp_path / "metalport.yaml"
    config.write_text("executor:\n  build: [ninja, -C, build, torch_cpu]\n"
                      "  test: [python, test/test_mps.py, -k, 'test_output_match_{op}']\n  test_timeout_s: 90\n")
    loaded = load_config(config)
    assert loaded.executor == ExecutorConfig(build=("ninja", "-C", "build", "torch_cpu"),
                                             test=("python", "test/test_mps.py", "-k", "test_output_match_{op}"),
                                             test_timeout_s=90.0)
    assert MacosExecutor(loaded.executor).test_argv(PLAN)[-1] == "test_output_match_heaviside"
    assert select_executor("emulated", loaded).name == "emulated"
    config.write_text("executor:\n  test: python test/test_mps.py\n")
    with pytest.raises(UsageError) as err:
        load_config(config)
    assert str(err.value) == (f"{config}:2: executor.test must be a non-empty list of strings (an argv); "
                              'e.g. ["ninja", "-C", "build", "torch_cpu"]')


def test_test_reports_failing_tests_from_a_real_unittest_session(tmp_path: Path) -> None:
    (tmp_path / "test_ops.py").write_text(TESTS)
    executor = MacosExecutor(ExecutorConfig(test=(sys.executable, "-m", "unittest", "-v", "test_ops")))
    report, failures = executor.test(tmp_path, PLAN, held_out=False)
    assert (report.op, report.backend, report.status) == ("aten::heaviside", "mps", "fail")
    assert report.reason == "test_mps.py: 1 passed, 1 failed, 1 errors, 1 unexpected successes"
    assert [f.file for f in failures] == ["test_ops.TestOps.test_error", "test_ops.TestOps.test_fail",
                                          "test_ops.TestOps.test_xpass"]
    (tmp_path / "test_ok.py").write_text("import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n"
                                         "        pass\n")
    passing = MacosExecutor(ExecutorConfig(test=(sys.executable, "-m", "unittest", "test_ok")))
    report, failures = passing.test(tmp_path, PLAN, held_out=False)
    assert (report.status, failures) == ("pass", [])


def test_no_matching_test_is_a_failure(tmp_path: Path) -> None:
    (tmp_path / "test_ops.py").write_text(TESTS)
    argv = [sys.executable, "-m", "unittest", "-k", "test_output_match_nothing", "test_ops"]
    result = run_command(argv, tmp_path, timeout_s=60)
    from metalport.executors.macos import parse_test_output

    failures = failing_tests(result, parse_test_output(result.stdout + result.stderr))
    assert [f.kind for f in failures] == ["test-error"] and failures[0].message.endswith("no test matched")


def test_build_failures_from_a_real_compiler_and_a_silent_one(tmp_path: Path) -> None:
    (tmp_path / "BinaryOps.cpp").write_text(BROKEN)
    result = run_command(["/usr/bin/g++", "-fsyntax-only", "BinaryOps.cpp"], tmp_path, timeout_s=120)
    failures = build_failures(result)
    assert failures[0] == Failure("compile-error", "BinaryOps.cpp", 5, 44, "expected ';' before '}' token")
    silent = run_command(["sh", "-c", "echo building; exit 3"], tmp_path, timeout_s=30)
    assert build_failures(silent) == [Failure("build-step", None, None, None, "sh -c echo building; exit 3 "
                                              "exited 3: building")]


def test_off_mac_the_compile_shader_pass_fails_before_the_build(tmp_path: Path) -> None:
    marker = tmp_path / "built"
    kernels = tmp_path / "aten/src/ATen/native/mps/kernels"
    kernels.mkdir(parents=True)
    (kernels / "BinaryKernel.metal").write_text("REGISTER_BINARY_OP(heaviside, float, float);\n")
    executor = MacosExecutor(ExecutorConfig(build=("touch", str(marker))))
    failures = executor.build(tmp_path, PLAN)
    assert failures and failures[0].kind == "conformance"
    assert "torch.backends.mps.is_available() is False" in failures[0].message
    assert not marker.exists()  # the full build never ran
    assert isinstance(AgentConfig().executor, ExecutorConfig)


@pytest.mark.macos
@pytest.mark.skipif(not os.environ.get("METALPORT_PYTORCH_CHECKOUT"),
                    reason="opt-in: needs macOS with MPS and METALPORT_PYTORCH_CHECKOUT=<a built PyTorch checkout>")
def test_heaviside_on_a_real_checkout(tmp_path: Path) -> None:
    """On a Mac: plan and apply heaviside in a clone of a real checkout, then build and run its tests."""
    from metalport.port.plan.planner import apply_port, plan_port
    from metalport.checkout import find_checkout
    from metalport.checks.contract.rules import check_contract
    from tests.recipes.porting import clone

    checkout = find_checkout(Path(os.environ["METALPORT_PYTORCH_CHECKOUT"]))
    plan = plan_port(checkout, "heaviside")
    wt = clone(checkout, tmp_path / "wt")
    apply_port(plan, wt)
    assert check_contract(checkout.root, wt, plan) == []
    executor = select_executor("auto")
    assert executor.name == "macos"
    assert executor.build(wt, plan) == []
    report, failures = executor.test(wt, plan, held_out=True)
    assert (report.status, failures) == ("pass", [])
