"""The macOS-tier parsers on real output: g++, clang (ziglang), ninja, unittest and pytest sessions."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from metalport.executors import (
                                 Failure,
                                 TestReport,
                                 build_command,
                                 mps_test_command,
                                 parse_build_output,
                                 parse_test_output,
                                 report_failures,
                                 )
from metalport.sandbox import run_command

BROKEN = """\
#include <cstdint>

template <typename T>
T heaviside(T x, T v) {
  return x == 0 ? v : (x < 0 ? T(0) : T(1))
}

int main() { return undeclared_name; }
"""

# Installed plugins (benchmark, xdist) cost seconds per session and change nothing we parse.
NO_PLUGINS = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

TESTS = """\
import unittest


class TestOps(unittest.TestCase):
    def test_pass(self):
        self.assertEqual(1, 1)

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("kernel missing")

    @unittest.skip("needs a Mac")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_xfail(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_xpass(self):
        self.assertEqual(1, 1)


if __name__ == "__main__":
    unittest.main()
"""


def _compile(tmp_path: Path, compiler: list[str], name: str) -> tuple[Path, str]:
    source = tmp_path / name
    source.write_text(BROKEN)
    lang = ["-x", "c++"] if not name.endswith(".cpp") else []
    # zig's first call in a cold cache (the session's own XDG_CACHE_HOME) sets up its libc++ headers:
    # minutes on a loaded 2-core machine.
    result = run_command([*compiler, *lang, "-fsyntax-only", name], tmp_path, timeout_s=600)
    assert result.returncode != 0
    return source, result.stderr


def test_gcc_errors(tmp_path: Path) -> None:
    _, text = _compile(tmp_path, ["/usr/bin/g++"], "BinaryOps.cpp")
    failures = parse_build_output(text)
    assert failures[0] == Failure("compile-error", "BinaryOps.cpp", 5, 44,
                                  "expected ';' before '}' token")
    assert failures[-1].file == "BinaryOps.cpp" and failures[-1].line == 8
    assert "undeclared_name" in failures[-1].message


@pytest.mark.parametrize("name", ["BinaryOps.mm", "BinaryKernel.metal"])
def test_clang_errors_on_mm_and_metal_files(tmp_path: Path, name: str) -> None:
    _, text = _compile(tmp_path, [sys.executable, "-m", "ziglang", "c++"], name)
    failures = [f for f in parse_build_output(text) if f.kind == "compile-error"]
    assert failures[0] == Failure("compile-error", name, 5, 44, "expected ';' after return statement")
    assert failures[1] == Failure("compile-error", name, 8, 21,
                                  "use of undeclared identifier 'undeclared_name'")


@pytest.mark.skipif(shutil.which("ninja") is None, reason="ninja is not installed")
def test_ninja_failed_step(tmp_path: Path) -> None:
    (tmp_path / "BinaryOps.cpp").write_text(BROKEN)
    (tmp_path / "build.ninja").write_text(
        "rule cxx\n  command = /usr/bin/g++ -c $in -o $out\n"
        "build BinaryOps.o: cxx BinaryOps.cpp\n")
    result = run_command(["ninja"], tmp_path, timeout_s=120)
    assert result.returncode != 0
    failures = parse_build_output(result.stdout + result.stderr)
    assert Failure("build-step", "BinaryOps.o", None, None, "ninja build step failed") in failures
    assert any(f.kind == "compile-error" and f.line == 5 for f in failures)


def test_unittest_verbose_session(tmp_path: Path) -> None:
    (tmp_path / "test_ops.py").write_text(TESTS)
    result = run_command([sys.executable, "-m", "unittest", "-v", "test_ops"], tmp_path, timeout_s=60)
    report = parse_test_output(result.stdout + result.stderr)
    assert report == TestReport(1, 1, 1, 1, 1, 1, (
        "test_ops.TestOps.test_error", "test_ops.TestOps.test_fail", "test_ops.TestOps.test_xpass"))
    assert not report.ok
    assert report_failures(report)[0] == Failure("test-failure", "test_ops.TestOps.test_error", None,
                                                 None, "test did not pass")


def test_unittest_quiet_session(tmp_path: Path) -> None:
    (tmp_path / "test_ops.py").write_text(TESTS)
    result = run_command([sys.executable, "-m", "unittest", "test_ops"], tmp_path, timeout_s=60)
    report = parse_test_output(result.stderr)
    assert (report.passed, report.failed, report.errors, report.skipped, report.xfailed,
            report.unexpected_successes) == (1, 1, 1, 1, 1, 1)
    assert report.failing == ("test_ops.TestOps.test_error", "test_ops.TestOps.test_fail",
                              "test_ops.TestOps.test_xpass")


def test_unittest_all_passing_is_ok(tmp_path: Path) -> None:
    (tmp_path / "test_ok.py").write_text(
        "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        pass\n")
    result = run_command([sys.executable, "-m", "unittest", "test_ok"], tmp_path, timeout_s=60)
    report = parse_test_output(result.stderr)
    assert report == TestReport(1, 0, 0, 0, 0, 0, ()) and report.ok


def test_pytest_session(tmp_path: Path) -> None:
    (tmp_path / "test_ops.py").write_text(TESTS + """

import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_setup_error(broken):
    pass
""")
    result = run_command([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_ops.py"],
                         tmp_path, timeout_s=60, env_extra=NO_PLUGINS)
    report = parse_test_output(result.stdout)
    # pytest reports a unittest unexpected success as a failure ("Failed: Unexpected success").
    assert report == TestReport(1, 3, 1, 1, 1, 0, (
        "test_ops.py::TestOps::test_error", "test_ops.py::TestOps::test_fail",
        "test_ops.py::TestOps::test_xpass", "test_ops.py::test_setup_error"))


def test_pytest_xpassed_counts_as_unexpected_success(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n@pytest.mark.xfail(reason='known')\ndef test_x():\n    pass\n\n"
        "def test_ok():\n    pass\n")
    result = run_command([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_x.py"],
                         tmp_path, timeout_s=60, env_extra=NO_PLUGINS)
    report = parse_test_output(result.stdout)
    assert report == TestReport(1, 0, 0, 0, 0, 1, ()) and not report.ok


def test_commands(tmp_path: Path) -> None:
    argv, _ = build_command(tmp_path, first_time=False)
    assert argv == [sys.executable, "setup.py", "develop"]  # no build/build.ninja yet
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "build.ninja").write_text("")
    argv, env = build_command(tmp_path, first_time=False)
    assert argv == ["ninja", "-C", "build", "torch_cpu"]
    assert env == ({"CCACHE_BASEDIR": str(tmp_path)} if shutil.which("ccache") else {})
    assert mps_test_command("aten::heaviside") == [sys.executable, "test/test_mps.py", "-v", "-k",
                                                   "test_output_match_heaviside"]
