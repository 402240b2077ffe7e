"""A plausible-bug set: single edits of real upstream functors (METALPORT_REAL_TREE) that the gate must
fail at every seed, of the kinds a calibrated gate must catch (tie-breaking, exact multiples, the sign
of a remainder or a zero, lost NaN, inf * 0, huge magnitudes, ignored scalars, off-by-one ulps).

The machinery (`Mutant`, `planted`, `_wrong_elements`) is test_conformance_real's. Where the pristine
functor already fails at a seed (an upstream divergence the gate reports), the mutant must be wrong on
more elements than it somewhere. `NEEDS_RULE` marks bugs that only an acceptance rule comparing the
sign of zero and exact results exactly can fail (Note [the oracle]): they run at every seed like
the rest and must fail.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metalport.checks.conformance import ConformanceSession, run_conformance
from tests.checks.test_conformance_real import Mutant, _wrong_elements, planted

_FLOOR_MACRO = "DEFINE_UNARY_FLOATING_FUNCTOR({op});"


def _macro(op: str, body: str, bug: str) -> Mutant:
    """A functor defined by DEFINE_UNARY_FLOATING_FUNCTOR replaced by a hand-written one."""
    line = _FLOOR_MACRO.format(op=op)
    return Mutant(op, "UnaryKernel.metal", line.replace("(", r"\(").replace(")", r"\)"),
                  f"struct {op}_functor {{ template <typename T> inline T operator()(const T x) "
                  f"{{ return {body}; }} }};",
                  bug, anchor=line)


PLAUSIBLE = [
    # ties and step functions
    Mutant("round", "UnaryKernel.metal", r"rint\(float\(x\)\)", "::metal::floor(float(x) + 0.5f)",
           "ties always rounded up (floor(x + 0.5))"),
    Mutant("round", "UnaryKernel.metal", r"rint\(float\(x\)\)", "float(int(rint(float(x))))",
           "rounded through int: wrong past 2^31, inf and NaN (a branch for huge magnitudes)"),
    _macro("ceil", "T(::metal::floor(float(x)) + 1.0f)", "ceil as floor(x) + 1: wrong at exact integers"),
    _macro("trunc", "T(float(int(float(x))))", "trunc through int: wrong past 2^31, inf and NaN"),
    _macro("floor", "T(::metal::floor(float(x) - 1e-7f))", "floor nudged down: small exact integers off by one"),
    # exact multiples and the sign rules of division
    Mutant("floor_divide", "BinaryKernel.metal", r"return metal::floor\(c10::metal::div\(a, b\)\);",
           "return metal::ceil(c10::metal::div(a, b)) - T(1);", "floor as ceil - 1: exact multiples off by one",
           anchor="struct div_floor_functor"),
    Mutant("floor_divide", "BinaryKernel.metal", r"return a % b != 0 \? quot - 1 : quot;", "return quot - 1;",
           "integer floor division of mixed signs off by one at exact multiples", anchor="struct div_floor_functor"),
    Mutant("div", "BinaryKernel.metal", r"metal::trunc\(c10::metal::div\(a, b\)\)",
           "metal::floor(c10::metal::div(a, b))", "rounding_mode='trunc' floors negative quotients",
           anchor="struct div_trunc_functor"),
    Mutant("div", "BinaryKernel.metal", r"return metal::floor\(c10::metal::div\(a, b\)\);",
           "return metal::rint(c10::metal::div(a, b));", "rounding_mode='floor' rounds to nearest",
           anchor="struct div_floor_functor"),
    Mutant("remainder", "c10/metal/utils.h", r"x_f - y_f \* floor_divide\(x_f, y_f\)",
           "::metal::fabs(x_f - y_f * floor_divide(x_f, y_f))", "remainder loses the divisor's sign",
           anchor="inline float remainder("),
    Mutant("remainder", "c10/metal/utils.h", r"rc == 0 \|\| \(x \^ y\) > 0 \? rc : rc \+ y",
           "(x ^ y) > 0 ? rc : rc + y",
           "integer remainder of an exact multiple of mixed sign gives the divisor, not 0",
           anchor="inline common_dtype<T, U> remainder(const T x, const U y) {\n  auto rc"),
    Mutant("fmod", "c10/metal/utils.h", r"::metal::fmod\(x, y\)", "::metal::fabs(::metal::fmod(x, y))",
           "fmod loses the dividend's sign",
           anchor="inline common_dtype<T, U> fmod(T x, U y) {\n  return ::metal::fmod"),
    # signs, NaN and infinities
    Mutant("copysign", "BinaryKernel.metal", r"::metal::copysign\(a, b\)", "::metal::copysign(a, T(b < 0 ? -1 : 1))",
           "the sign of a negative-zero second operand ignored"),
    Mutant("minimum", "BinaryKernel.metal", r"c10::metal::min\(a, b\)", "(a < b ? a : b)",
           "NaN propagation lost when the first operand is NaN"),
    Mutant("fmax", "BinaryKernel.metal", r"::metal::fmax\(a, b\)", "(a > b ? a : b)",
           "fmax returns NaN where the other operand is a number"),
    Mutant("mul", "c10/metal/utils.h", r"return x \* y;", "return (x == 0 || y == 0) ? common_dtype<T, U>(0) : x * y;",
           "a zero shortcut: inf * 0 gives 0, not NaN",
           anchor="inline common_dtype<T, U> mul(const T x, const U y) {\n  return x * y;"),
    Mutant("xlogy", "c10/metal/special_math.h",
           r"if \(::metal::isnan\(y\)\) \{\n    return NAN;\n  \}\n\n  if \(x == 0\) \{\n    return x;\n  \}",
           "if (x == 0) {\n    return x;\n  }\n  if (::metal::isnan(y)) {\n    return NAN;\n  }",
           "xlogy(0, NaN) gives 0: the zero shortcut before the NaN check", anchor="inline float xlogy(T x, T y) {"),
    Mutant("reciprocal", "UnaryKernel.metal", r"T\(1\.0 / float\(x\)\)", "T(x == 0 ? INFINITY : 1.0 / float(x))",
           "1 / -0 gives +inf"),
    Mutant("atan2", "BinaryKernel.metal", r"precise::atan2\(float\(a\), float\(b\)\)",
           "precise::atan2(float(a) + 0.0f, float(b))", "a negative-zero first operand read as +0 (pi for -pi)"),
    Mutant("fmin", "BinaryKernel.metal", r"::metal::fmin\(a, b\)", "(a < b ? a : b)",
           "fmin returns NaN where the other operand is a number"),
    Mutant("rsqrt", "UnaryKernel.metal", r"T\(1 / ::precise::sqrt\(x\)\)",
           "T(1 / ::precise::sqrt(::metal::abs(float(x))))",
           "the domain dropped: rsqrt(-x) a number, not NaN, and rsqrt(-0) = +inf"),
    Mutant("reciprocal", "UnaryKernel.metal", r"T\(1\.0 / float\(x\)\)",
           "T(::metal::fabs(float(x)) > 1e30f ? 0.0f : 1.0 / float(x))",
           "a branch for huge magnitudes: 1/x flushed to 0 past 1e30 where it is normal"),
    # exactness, subnormals
    _macro("trunc", "T(::metal::fabs(float(x)) >= 1000.0f ? ::metal::nextafter(::metal::trunc(float(x)), INFINITY) "
           ": ::metal::trunc(float(x)))",
           "integer-valued results one ulp high past 1000 (the largest finite becomes inf)"),
    Mutant("abs", "UnaryKernel.metal", r"precise::abs\(x\)",
           "(::metal::fabs(float(x)) < 6.1035156e-05f ? 0.0f : float(precise::abs(x)))",
           "half subnormals flushed in an op that keeps them"),
    # scalars the kernel ignores
    Mutant("lerp", "BinaryKernel.metal", r"c10::metal::mul\(alpha, b - a\)", "c10::metal::mul(T(0.5), b - a)",
           "the weight ignored (0.5 used)", anchor="struct lerp_alpha_functor"),
    Mutant("sub", "BinaryKernel.metal", r"c10::metal::mul\(alpha, b\)", "b", "alpha ignored",
           anchor="struct sub_alpha_functor"),
    Mutant("add", "BinaryKernel.metal", r"c10::metal::mul\(alpha, b\)", "c10::metal::mul(alpha, alpha)",
           "alpha squared instead of alpha * other", anchor="struct add_alpha_functor"),
]

# Bugs only the sign of a zero or exactness can show (an output off by one ulp, or -0 for +0): the
# acceptance rule compares zero signs and exact results exactly (nextafter against the dtype's
# neighbour: Note [a step to a neighbour]), so they fail at every seed like the rest.
NEEDS_RULE = [
    Mutant("round", "UnaryKernel.metal", r"rint\(float\(x\)\)", "::metal::round(float(x))",
           "ties away from zero where round is half-to-even"),
    Mutant("neg", "UnaryKernel.metal", r"T\(-1 \* x\)", "T(0 - x)", "neg(+0) gives +0, not -0"),
    Mutant("abs", "UnaryKernel.metal", r"precise::abs\(x\)", "(x < 0 ? -x : x)", "abs(-0) gives -0"),
    _macro("floor", "T(::metal::floor(float(x)) + 0.0f)", "floor(-0) gives +0"),
    _macro("floor", "T(::metal::fabs(float(x)) >= 1000.0f && ::metal::fabs(float(x)) < 1e30f ? "
           "::metal::nextafter(::metal::floor(float(x)), INFINITY) : ::metal::floor(float(x)))",
           "integer-valued results one ulp high for 1000 <= |x| < 1e30"),
    Mutant("nextafter", "BinaryKernel.metal", r"::metal::nextafter\(a, b\)",
           "::metal::nextafter(::metal::nextafter(a, b), b)", "two ulps instead of one"),
]
_DTYPES = {"floor_divide-integer": ["int32"], "remainder-integer": ["int32"], "abs-half": ["float16"]}


def _dtypes(mutant: Mutant) -> list[str]:
    for key, dtypes in _DTYPES.items():
        op, word = key.split("-")
        if mutant.op == op and word in mutant.bug:
            return dtypes
    return ["float32"]


def _id(m: Mutant) -> str:
    return f"{m.op}-{'_'.join(m.bug.split()[:4])}"


@pytest.fixture(scope="module")
def bug_session():
    with ConformanceSession() as session:
        yield session


def _escaped(tmp_path: Path, root: Path, mutant: Mutant, seed: int, session: ConformanceSession) -> str | None:
    """None when the planted bug fails (beyond the pristine functor's own divergences), else why not."""
    dtypes = _dtypes(mutant)
    report = run_conformance(planted(tmp_path, mutant), mutant.op, backend="emulated", seed=seed, session=session,
                             dtypes=dtypes)
    if report.status != "fail":
        return f"{mutant.bug} escaped at seed {seed}: {report.status}"
    shown = [str(f) for d in report.dtypes for f in d.failures] + [s for d in report.dtypes for s in d.held_out_inputs]
    if not any("kernel " in s and "CPU " in s and "truth " in s for s in shown):
        return f"{mutant.bug}: no failing input shown"
    pristine = run_conformance(root, mutant.op, backend="emulated", seed=seed, session=session, dtypes=dtypes)
    if pristine.status == "fail":
        before, after = _wrong_elements(pristine), _wrong_elements(report)
        if not any(n > before.get(label, 0) for label, n in after.items()):
            return f"{mutant.bug}: no more wrong elements than upstream's functor at seed {seed}"
    return None


SEEDS = (5, 7, 11)
# Every mutant fails at each of SEEDS (bench/bench_plausible_bugs.py runs them all, ~5 min); the
# suite runs each at one of them in turn (all three with METALPORT_BUG_SEEDS=all) to keep CI short.
_ALL = os.environ.get("METALPORT_BUG_SEEDS") == "all"
_RUNS = [(m, s) for i, m in enumerate(PLAUSIBLE + NEEDS_RULE)
         for s in (SEEDS if _ALL else (SEEDS[i % len(SEEDS)],))]


@pytest.mark.parametrize("mutant, seed", _RUNS, ids=[f"{_id(m)}-{s}" for m, s in _RUNS])
def test_plausible_bug_fails_at_every_seed(tmp_path: Path, real_tree_workspace, bug_session: ConformanceSession,
                                           mutant: Mutant, seed: int) -> None:
    assert _escaped(tmp_path, real_tree_workspace.root, mutant, seed, bug_session) is None

