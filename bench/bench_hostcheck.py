"""Bench: the host check of one real `.mm` — cold (fresh cache: torchgen's MPS declarations plus the
Objective-C++ front end), warm (an unchanged file: hashes only), and an edited file (declarations
cached, one front-end run), against the shader build of the op's kernels that the pipeline runs
anyway (`compile_file` of the real BinaryKernel.metal, `heaviside` kernels only, fresh cache).

Target: a warm check well under the shader build.  Run:
`METALPORT_REAL_TREE=../shared/pytorch-real python bench/bench_hostcheck.py [-n N]`.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._cli import real_tree, repetitions_parser  # noqa: E402

OPS = "aten/src/ATen/native/mps/operations"


def _timed(fn) -> float:  # noqa: ANN001
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    args = repetitions_parser(__doc__, repetitions=3).parse_args()
    tree = real_tree()
    if tree is None:
        return 2
    from metalport.emulate import compile_file
    from metalport.hostcheck import check_file

    mm = tree / OPS / "BinaryKernel.mm"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cold, warm, edited, shader = [], [], [], []
        for i in range(args.n):
            cache = Path(tmp) / f"c{i}"
            cold.append(_timed(lambda: check_file(mm, tree, cache_dir=cache)))
            warm.append(statistics.median(_timed(lambda: check_file(mm, tree, cache_dir=cache)) for _ in range(5)))
            copy = Path(tmp) / f"t{i}"
            shutil.copytree(tree, copy)
            target = copy / OPS / "BinaryKernel.mm"
            target.write_text(target.read_text() + f"\n// edit {i}\n")
            check_file(copy / OPS / "UnaryKernel.mm", copy, cache_dir=cache)  # declarations of this tree made
            edited.append(_timed(lambda: check_file(target, copy, cache_dir=cache)))
            shader.append(_timed(lambda: compile_file(tree / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal",
                                                      cache_dir=Path(tmp) / f"s{i}", kernels=["*heaviside*"]).close()))
        base = statistics.median(shader)
        for name, times in (("host check, cold (fresh cache)", cold), ("host check, edited file", edited),
                            ("host check, warm (unchanged)", warm), ("shader build (heaviside kernels)", shader)):
            rows.append((name, statistics.median(times), statistics.median(times) / base))
    print(f"BinaryKernel.mm, median of {args.n}")
    print(f"| {'what':<36} | {'median s':>9} | {'vs shader build':>15} |")
    print(f"|{'-' * 38}|{'-' * 11}|{'-' * 17}|")
    for name, median, ratio in rows:
        print(f"| {name:<36} | {median:>9.3f} | {ratio:>15.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
