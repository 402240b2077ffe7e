"""Spec recipes: conformance time of a reduction vs torch CPU on the same cases, and the pre-flight
time of one custom-kernel port to the gate (median of N).

torch side: building the same cases (OpInfo samples, random, held-out) and running the op on CPU
for each. Conformance side: `run_conformance` with the kernel library already compiled (a
repair loop re-checking one op) and one-shot (cached shader reload and a fresh worker included).
Pre-flight: `run-migration aten::OP --executor emulated --no-input` of a custom-kernel port
(`--gate-op`, default mode) on a fresh wheel workspace, from start to the gate (first run cold,
the rest with the shader cache warm).

    python bench/bench_spec.py [--op mode] [-n 3] [--gate-op _ctc_loss] [--no-gate]
"""

from __future__ import annotations

import contextlib
import io
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from _cli import repetitions_parser  # noqa: E402
from metalport.checks.cases.case import build_cases  # noqa: E402
from metalport.checks.cases.spec import SpecCases  # noqa: E402
from metalport.checks.conformance import run_conformance  # noqa: E402
from metalport.emulate import compile_shader  # noqa: E402
from metalport.port.spec.recipes import spec_recipes  # noqa: E402

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def _torch_time(op: str, seed: int) -> float:
    spec = spec_recipes()[op].spec
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, types in enumerate(spec.dtypes):
            cases, _ = build_cases(SpecCases(spec, types, torch.Generator().manual_seed(seed + i)), True)
            for case in cases:
                try:
                    case.call.run()
                except (RuntimeError, IndexError, ValueError):
                    pass
    return time.perf_counter() - start


def _gate_time(op: str) -> float:
    from metalport.checkout import init_workspace
    from metalport.cli import run_migration

    with tempfile.TemporaryDirectory(prefix="bench-spec-") as tmp:
        repo = str(init_workspace(Path(tmp) / "ws").root)
        start = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            code = run_migration([f"aten::{op}", "--repo", repo, "--executor", "emulated", "--no-input"])
        took = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"run-migration exited {code}")
    return took


def main() -> int:
    parser = repetitions_parser(__doc__, repetitions=3)
    parser.add_argument("--op", action="append", help="spec recipes to time (default: linalg__powsum and mode)")
    parser.add_argument("--no-gate", action="store_true", help="skip the pre-flight-to-gate timing")
    parser.add_argument("--gate-op", default="mode", help="the custom-kernel port timed to the gate (default: mode)")
    args = parser.parse_args()
    ops = args.op or ["linalg__powsum", "mode"]
    recipes = spec_recipes()
    print("| op | cases | torch CPU s | conformance s (loaded) | ratio | one-shot s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for op in ops:
        spec = recipes[op].spec
        with tempfile.TemporaryDirectory(prefix="bench-spec-cache-") as cache:
            lib = compile_shader(HEADER + recipes[op].kernel_source, cache_dir=Path(cache))
            torch_s, loaded_s, once_s = [], [], []
            cases = 0
            for n in range(args.n):
                torch_s.append(_torch_time(op, n))
                start = time.perf_counter()
                report = run_conformance(None, spec, library=lib, seed=n)
                loaded_s.append(time.perf_counter() - start)
                cases = report.cases
                start = time.perf_counter()
                fresh = compile_shader(HEADER + recipes[op].kernel_source, cache_dir=Path(cache))
                run_conformance(None, spec, library=fresh, seed=n)
                fresh.close()
                once_s.append(time.perf_counter() - start)
            lib.close()
        t, lo, on = (statistics.median(x) for x in (torch_s, loaded_s, once_s))
        print(f"| {op} | {cases} | {t:.3f} | {lo:.3f} | {lo / t:.1f}x | {on:.3f} | {on / t:.1f}x |")
    if not args.no_gate:
        times = [_gate_time(args.gate_op) for _ in range(args.n)]
        print(f"\npre-flight to the gate, aten::{args.gate_op} on a wheel workspace: cold {times[0]:.1f} s, "
              f"warm median {statistics.median(times[1:] or times):.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
