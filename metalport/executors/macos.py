"""The macOS tier: PyTorch's build and `test_mps.py` as argv lists, and parsers of what they print.

The parsers read clang / Metal-compiler diagnostics, ninja's `FAILED:` lines and unittest or pytest
results. They are exercised off-Mac on real g++, clang (ziglang), ninja, unittest and pytest output;
the Metal compiler itself prints clang's format and is covered by clang on a `.metal` file.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from metalport.port import PortPlan
from metalport.config import ExecutorConfig
from metalport.failure import Failure
from metalport.sandbox.runner import CommandResult, run_command

if TYPE_CHECKING:
    from metalport.checks.report import ConformanceReport

_DIAGNOSTIC = re.compile(
    r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+):(?:(?P<column>\d+):)? "
    r"(?P<severity>fatal error|error|warning): (?P<message>.*)$", re.M)
_NINJA_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(?P<target>\S+)", re.M)
_LINKER = re.compile(r"^(?P<file>[^\s:][^:\n]*):[^\n]*?(?P<message>undefined reference to .*)$", re.M)
_UNITTEST_HEADER = re.compile(
    r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<name>\S+) \((?P<where>[^)]+)\)", re.M)
_UNITTEST_VERBOSE = re.compile(
    r"^(?P<name>\S+) \((?P<where>[^)]+)\)(?:\n[^\n]*)? \.\.\. (?P<verdict>ok|FAIL|ERROR|skipped|"
    r"expected failure|unexpected success)", re.M)
_UNITTEST_RAN = re.compile(r"^Ran (?P<count>\d+) tests? in ", re.M)
_UNITTEST_STATUS = re.compile(r"^(?P<status>OK|FAILED)(?: \((?P<details>[^)]*)\))?\s*$", re.M)
_PYTEST_SUMMARY = re.compile(r"^=+ (?P<body>(?:\d+ \w+(?:, )?)+)(?: in [\d.]+s.*)? =+$", re.M)
# gcc quotes with ‘…’ under a UTF-8 locale, clang with '…': one spelling for every tool.
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'"})
_PYTEST_FAILED = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<id>\S+)", re.M)


@dataclass(frozen=True)
class TestReport:
    """Counts of a unittest or pytest session and the sorted ids of the tests that did not pass."""

    __test__ = False  # not a pytest test class

    passed: int
    failed: int
    errors: int
    skipped: int
    xfailed: int
    unexpected_successes: int
    failing: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when nothing failed, errored or unexpectedly passed, and something ran."""
        ran = self.passed + self.failed + self.errors + self.xfailed + self.unexpected_successes
        return ran > 0 and not (self.failed or self.errors or self.unexpected_successes)


def build_command(worktree: Path, *, first_time: bool) -> tuple[list[str], dict[str, str]]:
    """Return the build argv and extra env: `setup.py develop` first, `ninja -C build torch_cpu` after.

    `CCACHE_BASEDIR` is the worktree when ccache is installed, so worktrees share cached objects.
    """
    env = {"CCACHE_BASEDIR": str(worktree)} if shutil.which("ccache") else {}
    if first_time or not (worktree / "build" / "build.ninja").is_file():
        return [sys.executable, "setup.py", "develop"], env
    return ["ninja", "-C", "build", "torch_cpu"], env


def mps_test_command(op: str) -> list[str]:
    """Return the argv running the OpInfo conformance tests of `op` in `test/test_mps.py`."""
    name = op.removeprefix("aten::")
    return [sys.executable, "test/test_mps.py", "-v", "-k", f"test_output_match_{name}"]


def run_build(worktree: Path, *, first_time: bool, timeout_s: float) -> tuple[CommandResult, list[Failure]]:
    """Build the worktree and return the command's result with its parsed failures."""
    argv, env = build_command(worktree, first_time=first_time)
    result = run_command(argv, worktree, timeout_s, env_extra=env)
    return result, parse_build_output(result.stdout + "\n" + result.stderr)


def run_tests(worktree: Path, op: str, *, timeout_s: float) -> tuple[CommandResult, TestReport]:
    """Run the op's MPS tests in the worktree and return the command's result with its report."""
    result = run_command(mps_test_command(op), worktree, timeout_s)
    return result, parse_test_output(result.stdout + "\n" + result.stderr)


def parse_build_output(text: str) -> list[Failure]:
    """Return the compiler diagnostics, linker errors and ninja failed steps in `text`, in order."""
    found: list[tuple[int, Failure]] = []
    for m in _DIAGNOSTIC.finditer(text):
        kind = "compile-warning" if m["severity"] == "warning" else "compile-error"
        column = int(m["column"]) if m["column"] else None
        message = m["message"].strip().translate(_QUOTES)
        found.append((m.start(), Failure(kind, m["file"], int(m["line"]), column, message)))
    for m in _LINKER.finditer(text):
        found.append((m.start(), Failure("link-error", m["file"], None, None, m["message"].strip())))
    for m in _NINJA_FAILED.finditer(text):
        found.append((m.start(), Failure("build-step", m["target"], None, None, "ninja build step failed")))
    return [failure for _, failure in sorted(found, key=lambda pair: pair[0])]


def parse_test_output(text: str) -> TestReport:
    """Return the counts and failing ids of a unittest (`-v` or not) or pytest session in `text`."""
    summary = list(_PYTEST_SUMMARY.finditer(text))
    if summary:
        return _parse_pytest(text, summary[-1]["body"])
    return _parse_unittest(text)


def _parse_pytest(text: str, body: str) -> TestReport:
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", body)}
    failing = tuple(sorted({m["id"] for m in _PYTEST_FAILED.finditer(text)}))
    return TestReport(counts.get("passed", 0), counts.get("failed", 0),
                      counts.get("errors", counts.get("error", 0)), counts.get("skipped", 0),
                      counts.get("xfailed", 0), counts.get("xpassed", 0), failing)


def _parse_unittest(text: str) -> TestReport:
    ran = _UNITTEST_RAN.search(text)
    status = list(_UNITTEST_STATUS.finditer(text))
    details: dict[str, int] = {}
    if status and status[-1]["details"]:
        for part in status[-1]["details"].split(","):
            key, _, value = part.strip().partition("=")
            details[key] = int(value)
    failing = [f"{m['where']}" for m in _UNITTEST_HEADER.finditer(text)]
    failing += [m["where"] for m in _UNITTEST_VERBOSE.finditer(text)
                if m["verdict"] in ("FAIL", "ERROR", "unexpected success")]
    total = int(ran["count"]) if ran else 0
    failed, errors = details.get("failures", 0), details.get("errors", 0)
    skipped, xfailed = details.get("skipped", 0), details.get("expected failures", 0)
    unexpected = details.get("unexpected successes", 0)
    passed = total - failed - errors - skipped - xfailed - unexpected
    return TestReport(max(passed, 0), failed, errors, skipped, xfailed, unexpected,
                      tuple(sorted(set(failing))))


def report_failures(report: TestReport) -> list[Failure]:
    """Return one `Failure` per failing test id, for the same evidence the emulated tier gives."""
    return [Failure("test-failure", test_id, None, None, "test did not pass") for test_id in report.failing]


def build_failures(result: CommandResult) -> list[Failure]:
    """The errors of a build command's output; one `build-step` failure when it failed silently."""
    found = [f for f in parse_build_output(result.stdout + "\n" + result.stderr) if f.kind != "compile-warning"]
    if result.ok or found:
        return found
    tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["no output"]
    why = f"timed out after {result.duration_s:.0f}s" if result.timed_out else f"exited {result.returncode}"
    return [Failure("build-step", None, None, None, f"{' '.join(result.argv[:3])} {why}: {tail[0][:200]}")]


def failing_tests(result: CommandResult, report: TestReport) -> list[Failure]:
    """The failing tests of a test command; one failure when nothing ran or it died unparsed."""
    found = report_failures(report)
    if report.ok and result.ok:
        return found
    if not found:
        ran = report.passed + report.failed + report.errors + report.xfailed
        why = "no test matched" if ran == 0 else f"exited {result.returncode}"
        if result.timed_out:
            why = f"timed out after {result.duration_s:.0f}s"
        found = [Failure("test-error", None, None, None, f"{' '.join(result.argv[:4])}: {why}")]
    return found


def opinfo_test_names(op: str, opinfo: str | None, *, grad: bool) -> tuple[str, ...]:
    """The `-k` patterns of an op's TestConsistency tests (OpInfo names use `_` for `.`)."""
    name = (opinfo or op.removeprefix("aten::")).replace(".", "_")
    return (f"test_output_match_{name}",) + ((f"test_output_grad_match_{name}",) if grad else ())


def opinfo_for(plan: PortPlan) -> tuple[str | None, bool]:
    """(OpInfo name, whether to run grad tests) for the plan's op; a backward op (`sigmoid_backward`)
    is tested through its forward OpInfo's grad tests. derivatives.yaml is not in the wheel, so
    the OpInfo's `supports_autograd` says whether the op has a backward."""
    from metalport.port import recipe_table
    from metalport.torch_facts import opinfo_facts

    recipe = recipe_table().get(plan.op)
    names = ([recipe.opinfo] if recipe else []) + list(plan.xfail_keys) + [plan.op, f"nn.functional.{plan.op}"]
    names += [plan.op.replace("_", ".", 1)] if plan.op.startswith(("special_", "linalg_", "fft_")) else []
    backward = plan.op.endswith("_backward")
    by_name = opinfo_facts()
    for name in names:
        if name in by_name:
            return name, backward or bool(by_name[name].supports_autograd)
    return None, backward


class MacosExecutor:
    """`Executor` of the macOS tier: PyTorch's own build and `test/test_mps.py` in the worktree.

    build: a fast pass of the edited kernels through `torch.mps.compile_shader` with the
    conformance code (no held-out cases), then the configured build command. test: the op's
    TestConsistency tests (grad tests too when the op has a backward), plus MPS conformance with
    held-out cases at the gate. Commands come from `ExecutorConfig` (metalport.yaml `executor:`).
    """

    name = "macos"

    def __init__(self, config: ExecutorConfig | None = None) -> None:
        self.config = config or ExecutorConfig()

    def build_argv(self, worktree_root: Path) -> tuple[list[str], dict[str, str]]:
        """The build argv and extra env (CCACHE_BASEDIR when ccache is installed)."""
        if self.config.build:
            env = {"CCACHE_BASEDIR": str(worktree_root)} if shutil.which("ccache") else {}
            return list(self.config.build), env
        return build_command(worktree_root, first_time=not (worktree_root / "build/build.ninja").is_file())

    def test_argv(self, plan: PortPlan) -> list[str]:
        """The test argv: the configured one with `{op}` replaced, else test_mps.py -v -k ... ."""
        if self.config.test:
            return [arg.replace("{op}", plan.op) for arg in self.config.test]
        opinfo, grad = opinfo_for(plan)
        argv = [sys.executable, "test/test_mps.py", "-v"]
        for pattern in opinfo_test_names(plan.op, opinfo, grad=grad):
            argv += ["-k", pattern]
        return argv

    def baseline(self, worktree_root: Path, plan: PortPlan) -> list[Failure]:
        """Nothing: the base tree is PyTorch's own CI's to build (a full build here costs an hour)."""
        return []

    def build(self, worktree_root: Path, plan: PortPlan) -> list[Failure]:
        """Fast compile_shader pass, then the full build; their failures (`[]` = built)."""
        from metalport.executors.emulated import conformance

        root = Path(worktree_root).resolve()
        report, failures = conformance(root, plan, held_out=False, backend="mps")
        if failures or report.status == "fail":
            return failures or [Failure("conformance", plan.kernel_file, None, None,
                                        f"compile_shader pass: {report.reason or report.status}")]
        argv, env = self.build_argv(root)
        result = run_command(argv, root, self.config.build_timeout_s, env_extra=env)
        return build_failures(result)

    def test(self, worktree_root: Path, plan: PortPlan, *,
             held_out: bool) -> tuple[ConformanceReport, list[Failure]]:
        """Run the op's test_mps.py tests (and held-out MPS conformance when `held_out`)."""
        from metalport.checks.report import ConformanceReport
        from metalport.executors.emulated import conformance

        root = Path(worktree_root).resolve()
        result = run_command(self.test_argv(plan), root, self.config.test_timeout_s)
        tests = parse_test_output(result.stdout + "\n" + result.stderr)
        failures = failing_tests(result, tests)
        summary = (f"test_mps.py: {tests.passed} passed, {tests.failed} failed, {tests.errors} errors, "
                   f"{tests.unexpected_successes} unexpected successes")
        if held_out:
            report, more = conformance(root, plan, held_out=True, backend="mps")
            failures += more
            status = "fail" if failures else report.status
            return ConformanceReport(report.op, "mps", status, report.dtypes,
                                     "; ".join(p for p in (summary, report.reason) if p), report.seed), failures
        return ConformanceReport(f"aten::{plan.op}", "mps", "fail" if failures else "pass", (), summary), failures
