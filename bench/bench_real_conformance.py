"""Conformance of one op of a real upstream kernel file (BinaryKernel.metal: ~4,000 host-named
kernels), cold and warm, with only the op's kernels instantiated (as run_conformance does).

cold = an empty shader cache: preprocess, bind and compile the op's kernels, start the worker,
run every case. warm = the same call again (cached library reload, a fresh worker). Also timed:
the same file built cold with every kernel (the pre-#11 behaviour), unless --no-full. Reads the
tree from $METALPORT_REAL_TREE (a PyTorch checkout, or ../shared/pytorch-real). Target: cold in
seconds, not minutes.

    METALPORT_REAL_TREE=../shared/pytorch-real python bench/bench_real_conformance.py [--op aten::hypot] [-n 3]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _cli import real_tree, repetitions_parser  # noqa: E402
from metalport.checkout.layout import KERNELS_DIR  # noqa: E402
from metalport.checks.conformance import run_conformance  # noqa: E402
from metalport.emulate import checkout_include_dirs, compile_file, find_compiler  # noqa: E402


def _timed_conformance(tree: Path, op: str, seed: int) -> tuple[float, int]:
    """Seconds for one run_conformance call and the number of cases it judged."""
    start = time.perf_counter()
    report = run_conformance(tree, op, backend="emulated", seed=seed)
    return time.perf_counter() - start, report.cases


def main() -> int:
    parser = repetitions_parser(__doc__, repetitions=3)
    parser.add_argument("--op", default="aten::hypot", help="an op whose functor the real BinaryKernel.metal registers")
    parser.add_argument("--no-full", action="store_true", help="skip the cold build of every kernel of the file")
    args = parser.parse_args()
    tree = real_tree()
    if tree is None:
        return 2
    kernel_file = tree / KERNELS_DIR / "BinaryKernel.metal"
    compiler = find_compiler()
    cold, warm, cases = [], [], 0
    for i in range(args.n):
        with tempfile.TemporaryDirectory(prefix="bench-real-") as cache:
            os.environ["METALPORT_CACHE_DIR"] = cache
            seconds, cases = _timed_conformance(tree, args.op, seed=i)
            cold.append(seconds)
            warm.append(_timed_conformance(tree, args.op, seed=i)[0])
    full = None
    if not args.no_full:
        with tempfile.TemporaryDirectory(prefix="bench-real-full-") as cache:
            start = time.perf_counter()
            with compile_file(kernel_file, include_dirs=checkout_include_dirs(tree), compiler=compiler,
                              cache_dir=Path(cache)) as lib:
                full = (time.perf_counter() - start, len(lib.function_names()))
    print(f"{kernel_file.relative_to(tree)}; {compiler.reason}; {args.op}, {cases} cases; median of {args.n}")
    print(f"{'what':<44} {'seconds':>8}")
    print(f"{'conformance, cold cache (op kernels only)':<44} {statistics.median(cold):>8.2f}")
    print(f"{'conformance, warm cache':<44} {statistics.median(warm):>8.2f}")
    if full is not None:
        print(f"{f'build of all {full[1]} kernels, cold (before #11)':<44} {full[0]:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
