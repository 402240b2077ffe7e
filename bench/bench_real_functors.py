"""Conformance of every upstream functor of a real tree that has a modelled host, over several seeds.

The ops: every aten op whose MPS host code (the stub its CPU kernel calls, its registration, the
exec_*_kernel call) leads to a kernel a `.metal` file of the tree registers or names (frexp's
kernels come from their own macro); aliases that reach the
same kernel (special_erf for erf) count once, under the first name. Ops whose host follows no
modelled convention are listed apart, never counted as passing. Each op runs `run_conformance` once
per seed; its verdict is `pass` only when every seed passes, `unstable` when seeds disagree. The
table gives the worst error over the OpInfo and random cases, the number of accepted divergences
(out-of-scope cases by an OpInfo skip/xfail, and ambiguous ones, never passes) and the first failure
(or, for a pass, its ambiguous cases with an input): for an
upstream bug, the input, kernel, CPU and truth values (Note [the oracle]). The pass rate is passing ops over ops with a modelled host.

    METALPORT_REAL_TREE=../shared/pytorch-real python bench/bench_real_functors.py [--seeds 5,7,11] [--op erf ...]
        [--mutants]

`--mutants` also plants each single-bug mutant of tests/checks/test_conformance_real.py (one regular
expression edit in a real functor) and prints, per seed, how many the gate catches: a mutant of a
functor that passes pristine is caught when the verdict fails; one of an upstream-wrong functor when it
is wrong on more elements than the pristine functor somewhere.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from _cli import real_tree  # noqa: E402
from metalport.checkout import Checkout, init_workspace  # noqa: E402
from metalport.checkout.sources import scan_sources  # noqa: E402
from metalport.checks.conformance import (KERNELS_DIR, ConformanceSession, registering_files,  # noqa: E402
                                          run_conformance)
from metalport.checks.contract.hostcode import find_host_code  # noqa: E402
from metalport.checks.judge.oracle import REL_BOUND  # noqa: E402
from metalport.checks.report import ConformanceReport  # noqa: E402
from metalport.errors import MetalportError  # noqa: E402
from metalport.registry.index import load_registry  # noqa: E402


_HOST_STEM = re.compile(r'host_name\("(\w+?)_(?:dense|strided)_"')


def _mentioned(root: Path, kernel: str) -> bool:
    """Some `.metal` under the kernels directory names `kernel` (`frexp_dense`, say)."""
    pattern = re.compile(rf"\b{re.escape(kernel)}\b")
    return any(pattern.search(p.read_text(encoding="utf-8", errors="replace"))
               for p in sorted((root / KERNELS_DIR).glob("*.metal")))


def real_checkout(tree: Path, scratch: Path) -> Checkout:
    """`tree` itself when it is a whole checkout, else its files over a wheel workspace in `scratch`."""
    if (tree / "aten/src/ATen/native/native_functions.yaml").is_file():
        return Checkout(tree)
    checkout = init_workspace(scratch / "real")
    shutil.copytree(tree, checkout.root, dirs_exist_ok=True)
    return checkout


def modelled_ops(checkout: Checkout) -> tuple[dict[str, str], dict[str, str]]:
    """({op: kernel} for ops whose host code reaches a registered kernel, {op: why} for the rest)."""
    sources = scan_sources(checkout)
    registry = load_registry(checkout.native_functions)
    names = {k.kernel for k in sources.kernel_calls} | {s.name for s in sources.shader_ops}
    for path in sorted(checkout.root.glob("aten/src/ATen/native/mps/kernels/*.metal")):
        names |= set(_HOST_STEM.findall(path.read_text(encoding="utf-8", errors="replace")))
    for reg in sources.registrations:
        names.add(reg.stub.removesuffix("_stub"))
        names |= {re.sub(r"_out$", "", route.kernel) for route in sources.callers(reg.stub)}
    for name, op in registry.ops.items():
        try:
            route = sources.route_op(op, registry)
        except MetalportError:
            continue
        if route is not None and sources.registration(route.stub) is not None:
            names.add(name)
    ops: dict[str, str] = {}
    unmodelled: dict[str, str] = {}
    for name in sorted(n for n in names if hasattr(torch.ops.aten, n)):
        host = find_host_code(checkout.root, name)
        if host.kernel is None or host.unmodelled is not None:
            unmodelled[name] = host.unmodelled or "no kernel"
        elif host.kernel not in ops.values() and (registering_files(checkout.root, host.kernel)
                                                  or _mentioned(checkout.root, host.kernel)):
            ops[name] = host.kernel
    return ops, unmodelled


def _shown_input(report: ConformanceReport) -> str | None:
    """The first failure that shows an input with the kernel's, CPU's and the truth's values."""
    for d in report.dtypes:
        for line in (*(f.message for f in d.failures), *d.held_out_inputs):
            if "kernel " in line and "CPU " in line and "truth " in line and "ambiguous" not in line:
                return f"{d.dtype} {line}"[:400]
    return None


def _first_failure(report: ConformanceReport) -> str:
    shown = _shown_input(report)
    if shown is not None:
        return f"upstream bug: {shown}"
    for d in report.dtypes:
        for f in d.failures:
            return f.message.split("; at [")[0][:110]
    return (report.reason or "")[:110]


def _ambiguous(report: ConformanceReport) -> str:
    """How many cases are ambiguous (Note [the oracle]: counted apart, never a pass) and the first, with its input."""
    lines = [line for d in report.dtypes for line in d.held_out_inputs if "ambiguous" in line]
    lines += [line for line in report.out_of_scope_cases if "ambiguous" in line and "at input" in line]
    count = sum(1 for line in report.out_of_scope_cases if "ambiguous" in line)
    return f"{count} ambiguous, e.g. {lines[0][:300]}" if count and lines else (f"{count} ambiguous" if count else "")


def _worst(report: ConformanceReport) -> float:
    return max((d.worst_error for d in report.dtypes if d.worst_error is not None), default=0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="5,7,11", help="comma-separated seeds (default 5,7,11)")
    parser.add_argument("--op", action="append", help="only these ops (repeatable)")
    parser.add_argument("--mutants", action="store_true", help="also count the planted bugs caught per seed")
    args = parser.parse_args()
    tree = real_tree()
    if tree is None:
        return 2
    seeds = [int(s) for s in args.seeds.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-functors-") as scratch, ConformanceSession() as session:
        checkout = real_checkout(tree, Path(scratch))
        ops, unmodelled = modelled_ops(checkout)
        if args.op:
            ops = {o: k for o, k in ops.items() if o in args.op}
        rows = []
        margins: list[tuple[float, str]] = []  # passing ops: worst relative error / REL_BOUND
        start = time.perf_counter()
        for op in ops:
            reports = []
            for seed in seeds:
                try:
                    reports.append(run_conformance(checkout.root, op, backend="emulated", seed=seed,
                                                   session=session))
                except MetalportError as err:
                    reports = [ConformanceReport(f"aten::{op}", "emulated", "fail", (), f"error: {err}")]
                    break
            statuses = {r.status for r in reports}
            status = statuses.pop() if len(statuses) == 1 else "unstable"
            bad = next((r for r in reports if r.status != "pass"), reports[0])
            margin = max((d.rel_used for r in reports for d in r.dtypes), default=0.0)
            rows.append((op, status, max(_worst(r) for r in reports), max(len(r.out_of_scope_cases) for r in reports),
                         _ambiguous(reports[0]) if status == "pass" else f"seed {bad.seed}: {_first_failure(bad)}"))
            if status == "pass":
                margins.append((margin, op))
            print(f"{op:<40} {status:<13} {rows[-1][2]:>9.3g} {rows[-1][3]:>5}  {rows[-1][4]}", flush=True)
        seconds = time.perf_counter() - start
    counted = [r for r in rows if r[1] != "no-host-model"]
    passed = sum(1 for r in counted if r[1] == "pass")
    upstream = [r[0] for r in counted if r[4].split(": ", 1)[-1].startswith("upstream bug")]
    rules: dict[str, list[str]] = {}
    for r in counted:
        if r[1] != "pass" and "rule: " in r[4]:
            rules.setdefault(r[4].split("rule: ", 1)[1].split(";")[0], []).append(r[0])
    print()
    print(f"{'op':<40} {'verdict':<13} {'worst err':>9} {'oos':>5}  first failure")
    for op, status, worst, scoped, why in rows:
        print(f"{op:<40} {status:<13} {worst:>9.3g} {scoped:>5}  {why}")
    for op, why in sorted(unmodelled.items()):
        print(f"{op:<40} {'unmodelled':<13} {'':>9} {'':>5}  {why[:110]}")
    no_host = [r[0] for r in rows if r[1] == "no-host-model"]
    print(f"\nseeds {seeds}; {len(rows)} ops with a registered kernel ({len(no_host)} without an emulated host "
          f"model: {', '.join(no_host) or 'none'}); {len(unmodelled)} unmodelled (MPSGraph and other hosts)")
    print(f"pass rate: {passed}/{len(counted)} = {100.0 * passed / max(1, len(counted)):.1f}% "
          f"of the ops with a modelled host (an out-of-scope case, oos, is counted apart, never a pass); {seconds:.0f} s, "
          f"{seconds / max(1, len(rows) * len(seeds)):.1f} s per op and seed")
    if margins:
        worst, op = max(margins)
        print(f"relative bound {REL_BOUND:g} (where the truth is normal and the problem well-conditioned): the "
              f"passing functors use at most {100 * worst:.2g}% of it ({op}); margin {1 / max(worst, 1e-12):.3g}x")
    print(f"upstream bugs (fail with an input wrong against CPU and the float64 truth): {len(upstream)}: "
          f"{', '.join(upstream) or 'none'}")
    for rule, names in sorted(rules.items()):
        print(f"  failing on rule {rule!r}: {len(names)}: {', '.join(names)}")
    if args.mutants:
        caught_per_seed(tree, seeds)
    return 0


def caught_per_seed(tree: Path, seeds: list[int]) -> None:
    """Plant each test mutant in a fresh copy of the tree and count the ones the gate catches."""
    from tests.checks import test_conformance_real as planted

    mutants = [*planted.MUTANTS, *planted.EXCUSED, *planted.EDGE, *planted.EDGE_ON_WRONG]
    wrong_ops = {m.op for m in planted.EDGE_ON_WRONG}
    print(f"\n{'mutant':<60} " + " ".join(f"seed {s:<4}" for s in seeds))
    caught = {s: 0 for s in seeds}
    with tempfile.TemporaryDirectory(prefix="bench-mutants-") as scratch, ConformanceSession() as session:
        pristine_root = real_checkout(tree, Path(scratch) / "pristine").root
        for n, mutant in enumerate(mutants):
            root = real_checkout(tree, Path(scratch) / f"m{n}").root
            path = root / (mutant.file if "/" in mutant.file else planted.KERNELS / mutant.file)
            path.write_text(planted.mutate(path.read_text(), mutant))
            marks = []
            for seed in seeds:
                dtypes = planted._DTYPES.get(mutant.op, ["float32"]) if mutant not in planted.MUTANTS else None
                report = run_conformance(root, mutant.op, backend="emulated", seed=seed, session=session,
                                         dtypes=dtypes)
                if mutant.op in wrong_ops:
                    before = planted._wrong_elements(run_conformance(pristine_root, mutant.op, backend="emulated",
                                                                     seed=seed, session=session, dtypes=dtypes))
                    hit = any(k > before.get(label, 0) for label, k in planted._wrong_elements(report).items())
                else:
                    hit = report.status == "fail"
                caught[seed] += hit
                marks.append("caught   " if hit else "ESCAPED  ")
            print(f"{(mutant.op + ': ' + mutant.bug)[:60]:<60} " + " ".join(marks), flush=True)
    print("caught per seed: " + ", ".join(f"seed {s}: {caught[s]}/{len(mutants)}" for s in seeds))


if __name__ == "__main__":
    sys.exit(main())
