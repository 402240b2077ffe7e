"""Bench: `scan_backlog` on a wheel workspace against `torchgen.gen.parse_native_yaml` on the same file.

Prints a table of medians (of 5) and their ratio. torchgen caches by path, so each of its runs
parses a fresh copy. Run: `python bench/bench_backlog.py`.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

RUNS = 5


def _median_s(fn: Callable[[int], object]) -> float:
    times = []
    for i in range(RUNS):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Build a workspace, time both, print the table."""
    import torchgen.gen

    from metalport.backlog import scan_backlog
    from metalport.checkout import init_workspace
    from metalport.registry import load_registry

    with tempfile.TemporaryDirectory() as tmp:
        checkout = init_workspace(Path(tmp) / "ws")
        copies = []
        for i in range(RUNS):
            folder = Path(tmp) / f"copy{i}"
            folder.mkdir()
            shutil.copyfile(checkout.native_functions, folder / "native_functions.yaml")
            shutil.copyfile(checkout.tags, folder / "tags.yaml")
            copies.append(folder)
        rows = [
            ("torchgen parse_native_yaml", _median_s(lambda i: torchgen.gen.parse_native_yaml(
                str(copies[i] / "native_functions.yaml"), str(copies[i] / "tags.yaml")))),
            ("metalport load_registry", _median_s(lambda i: load_registry(checkout.native_functions))),
            ("metalport scan_backlog (full)", _median_s(lambda i: scan_backlog(checkout))),
        ]
    base = rows[0][1]
    print(f"{'step':32} {'median_s':>9} {'ratio':>7}")
    for name, median in rows:
        print(f"{name:32} {median:9.3f} {median / base:6.2f}x")


if __name__ == "__main__":
    main()
