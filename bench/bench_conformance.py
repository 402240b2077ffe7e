"""Conformance time for one op against torch CPU's time on the same samples (median of N).

The torch side is what test_output_match's CPU half costs for the same inputs: generating the
OpInfo samples and running the op on CPU for every case conformance checks (OpInfo samples,
random draws and, unless --no-held-out, the held-out cases). The conformance side is a whole
`run_conformance` call on the emulator, timed two ways: "per call" loads the library itself
(cached shader reload and a fresh worker process), "session" reuses a loaded library through a
`ConformanceSession`, as a repair loop re-checking one op does.
Kernels: tests/checks/fixtures/pointwise.metal in a temporary checkout. Target: ratio <= 3x.

    python bench/bench_conformance.py [--op aten::atan2] [-n 5] [--no-held-out]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _cli import repetitions_parser  # noqa: E402
from metalport.checkout.layout import KERNELS_DIR  # noqa: E402
from metalport.checks.host.backend import compile_files  # noqa: E402
from metalport.checks.cases.case import build_cases  # noqa: E402
from metalport.checks.cases.elementwise import ElementwiseCases  # noqa: E402
from metalport.checks.conformance import ConformanceSession, case_generator, resolve_op, run_conformance  # noqa: E402
from metalport.checks.host.families import classify  # noqa: E402

FIXTURE = ROOT / "tests/checks/fixtures/pointwise.metal"


def _torch_time(root: Path, op: str, seed: int, held_out: bool) -> float:
    """Seconds torch needs for the same cases: sample generation plus the CPU op per case."""
    base, packet = resolve_op(op)
    kernels = compile_files([root / KERNELS_DIR / "PointwiseKernel.metal"], root, "emulated")
    family, dtypes = classify(kernels.names, base)  # type: ignore[misc]
    start = time.perf_counter()
    for dtype in dtypes:
        cases, _ = build_cases(ElementwiseCases(family, base, packet, dtype, case_generator(seed, dtype)), held_out)
        for case in cases:
            try:
                case.call.run()
            except RuntimeError:
                pass
    return time.perf_counter() - start


def main() -> int:
    parser = repetitions_parser(__doc__, repetitions=5)
    parser.add_argument("--op", action="append", help="ops to time (default: aten::atan2 and aten::neg)")
    parser.add_argument("--no-held-out", action="store_true", help="leave the held-out cases out on both sides")
    args = parser.parse_args()
    ops = args.op or ["aten::atan2", "aten::neg"]
    held_out = not args.no_held_out
    with tempfile.TemporaryDirectory(prefix="bench-conformance-") as tmp:
        root = Path(tmp)
        (root / KERNELS_DIR).mkdir(parents=True)
        (root / KERNELS_DIR / "PointwiseKernel.metal").write_text(FIXTURE.read_text())
        cold = time.perf_counter()
        run_conformance(root, ops[0], backend="emulated", seed=0, include_held_out=held_out)  # warm-up: compile
        cold = time.perf_counter() - cold
        rows = []
        with ConformanceSession() as session:
            for op in ops:
                ours, warm, theirs, cases = [], [], [], 0
                run_conformance(root, op, backend="emulated", seed=0, include_held_out=held_out, session=session)
                for i in range(args.n):
                    t = time.perf_counter()
                    report = run_conformance(root, op, backend="emulated", seed=i, include_held_out=held_out)
                    ours.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    run_conformance(root, op, backend="emulated", seed=i, include_held_out=held_out, session=session)
                    warm.append(time.perf_counter() - t)
                    theirs.append(_torch_time(root, op, i, held_out))
                    cases = report.cases
                rows.append((op, len(report.dtypes), cases, statistics.median(ours), statistics.median(warm),
                             statistics.median(theirs)))
    print(f"first run (compile + imports): {cold:.2f} s; held-out {'on' if held_out else 'off'}; median of {args.n}")
    print(f"{'op':<14} {'dtypes':>6} {'cases':>6} {'per call s':>10} {'session s':>10} {'torch CPU s':>12} "
          f"{'ratio/call':>10} {'ratio/session':>13}  target")
    for op, nd, cases, ours, warm, theirs in rows:
        print(f"{op:<14} {nd:>6} {cases:>6} {ours:>10.3f} {warm:>10.3f} {theirs:>12.3f} {ours / theirs:>9.2f}x "
              f"{warm / theirs:>12.2f}x  <= 3x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
