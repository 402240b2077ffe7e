"""Bench: the Metal-on-CPU compiler on a kernel file — cold compile, cached reload, per-call cost.

Compiles `tests/emulate/fixtures/pointwise.metal` (4 REGISTER_* ops x 4 dtypes, 140 kernels) into
a fresh cache directory, then reloads it N times, and times one small kernel call, a batch of
calls in one worker round-trip, and a 1e6-element dense call against torch on the same data;
then the same cold compile and a worker start with the shader sandbox on and off (`--no-sandbox`).
Prints a table of medians. Target: cached reload <= 0.5 s; the sandbox adds <= 5 % to a compile.  Run: `python bench/bench_emulate.py
[--compiler gcc|zig] [--runs N]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "emulate" / "fixtures" / "pointwise.metal"


def _median_s(fn: Callable[[], object], runs: int) -> float:
    """Median wall time of `runs` calls."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _sandbox_rows(compiler: object, cache: Path, on: object, off: object,
                  runs: int) -> list[tuple[str, float, str]]:
    """Cold compile (13 kernels, fresh cache each time) and worker start + first call, sandbox on/off."""
    import torch

    from metalport.emulate import compile_file

    def cold(sandbox: object) -> None:
        with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as fresh:
            compile_file(FIXTURE, compiler=compiler, cache_dir=Path(fresh), sandbox=sandbox,
                         kernels=["absdiff_*_float_float"]).close()

    def first_call(sandbox: object) -> None:
        with compile_file(FIXTURE, compiler=compiler, cache_dir=cache, sandbox=sandbox) as lib:
            lib.absdiff_dense_float_float(torch.empty(256), torch.randn(256), torch.randn(256), threads=256)

    true = ["true"]
    rows = [("one process (`true`), sandbox off", _median_s(lambda: off.run(true, env={}), runs * 4),
             f"median of {runs * 4}")]
    t_on = _median_s(lambda: on.run(true, env={}), runs * 4)
    rows.append(("one process (`true`), sandbox on", t_on, f"+{1e3 * (t_on - rows[0][1]):.0f} ms per process"))
    compile_runs = max(1, runs // 2)
    for stage, fn, n in (("cold compile, 13 kernels + runtime", cold, compile_runs),
                         ("cached reload + worker start + first call", first_call, runs * 2)):
        t_off = _median_s(lambda: fn(off), n)
        t_on = _median_s(lambda: fn(on), n)
        rows.append((f"{stage}, sandbox off", t_off, f"median of {n}"))
        rows.append((f"{stage}, sandbox on", t_on, f"{t_on / t_off:.3f}x, {1e3 * (t_on - t_off):+.0f} ms"))
    return rows


def main() -> int:
    """Time the stages and print the table."""
    import torch

    from metalport.emulate import Compiler, compile_file, find_compiler
    from metalport.sandbox.confine import select_sandbox

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--compiler", choices=("auto", "gcc", "zig"), default="auto")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    compiler = find_compiler() if args.compiler != "zig" else \
        Compiler(argv=(sys.executable, "-m", "ziglang", "c++"), family="clang", major=0, reason="bench")
    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-emulate-") as tmp:
        cache = Path(tmp)
        start = time.perf_counter()
        lib = compile_file(FIXTURE, compiler=compiler, cache_dir=cache)
        rows.append(("cold compile (140 kernels, incl. runtime object)", time.perf_counter() - start, "once"))
        lib.close()
        start = time.perf_counter()
        compile_file(FIXTURE, compiler=compiler, cache_dir=cache, kernels=["absdiff_*_float_float"]).close()
        rows.append(("cold compile, kernels=['absdiff_*_float_float'] (13)", time.perf_counter() - start,
                     "runtime object already built"))
        reload = _median_s(lambda: compile_file(FIXTURE, compiler=compiler, cache_dir=cache).close(), args.runs)
        rows.append(("cached reload", reload, f"median of {args.runs}; target <= 0.5 s"))
        with compile_file(FIXTURE, compiler=compiler, cache_dir=cache) as lib:
            a, b = torch.randn(256), torch.randn(256)
            out = torch.empty(256)
            lib.absdiff_dense_float_float(out, a, b, threads=256)  # starts the worker
            one = _median_s(lambda: lib.absdiff_dense_float_float(out, a, b, threads=256), args.runs * 4)
            rows.append(("one call, 256 elements (worker round-trip)", one, f"median of {args.runs * 4}"))
            calls = [("absdiff_dense_float_float", (torch.empty(256), a, b), {"threads": 256}) for _ in range(32)]
            batch = _median_s(lambda: lib.run_batch(calls), args.runs)
            rows.append(("run_batch of 32 such calls", batch, f"{batch / 32 * 1e3:.2f} ms per call"))
            big_a, big_b = torch.randn(1_000_000), torch.randn(1_000_000)
            big_out = torch.empty_like(big_a)
            emu = _median_s(lambda: lib.absdiff_dense_ilp4_float_float(
                big_out, big_a, big_b, big_a.numel(), threads=big_a.numel() // 4), args.runs)
            ref = _median_s(lambda: torch.sub(big_a, big_b).abs_(), args.runs)
            rows.append(("absdiff 1e6 float, emulated (incl. copies)", emu, f"{emu / ref:.1f}x torch CPU"))
            rows.append(("absdiff 1e6 float, torch CPU", ref, "reference"))
        rows += _sandbox_rows(compiler, cache, select_sandbox(opt_out=False), select_sandbox(opt_out=True),
                              args.runs)
    print(f"compiler: {' '.join(compiler.argv)}")
    print(f"{'stage':<52} {'seconds':>9}  note")
    for stage, seconds, note in rows:
        print(f"{stage:<52} {seconds:>9.4f}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
