"""Bench: wall time of `run-migration aten::heaviside` on a fresh wheel workspace, to the gate.

Runs the real console script (`python -m metalport run ... --no-input --json`) RUNS times, each on
a new workspace, the first with an empty shader cache (cold) and the rest warm, and prints the
median seconds per node (from the `timings_s` of `--json`), the process overhead (imports and
start-up: wall time minus the nodes), and the time outside compile (build) and conformance
(test). Targets from issue 4: <= 15 s in all, <= 3 s outside compile and conformance.
Run: `python bench/bench_pipeline.py [RUNS]`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NODES = ("resolve", "plan", "sandbox", "edit", "check", "build", "test")


def _one_run(tmp: Path, index: int, cache: Path) -> tuple[float, dict[str, float], str]:
    from metalport.checkout import init_workspace

    workspace = init_workspace(tmp / f"ws{index}").root
    env = {**os.environ, "METALPORT_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "metalport", "run", "aten::heaviside", "--repo", str(workspace),
                           "--executor", "emulated", "--no-input", "--json"],
                          capture_output=True, text=True, env=env, timeout=900)
    wall = time.perf_counter() - start
    if not proc.stdout.strip():
        raise SystemExit(f"run {index} printed no record: {proc.stderr.strip().splitlines()[-1:]}")
    record = json.loads(proc.stdout)
    return wall, record["timings_s"], record["status"]


def _row(name: str, values: list[float], total: float) -> str:
    median = statistics.median(values)
    return f"{name:34} {median:9.2f} {100 * median / total:6.1f}%"


def main(runs: int = 3) -> None:
    """Time `runs` runs (first cold, rest warm) and print the per-node table of medians."""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        results = [_one_run(tmp, i, tmp / "shader-cache") for i in range(runs)]
    for label, chosen in (("cold shader cache (run 1)", results[:1]), (f"warm cache (median of {runs - 1})",
                                                                         results[1:] or results[:1])):
        walls = [wall for wall, _, _ in chosen]
        total = statistics.median(walls)
        statuses = sorted({status for _, _, status in chosen})
        print(f"\n{label}: status {', '.join(statuses)}, wall {total:.2f} s")
        print(f"{'step':34} {'median_s':>9} {'share':>7}")
        for node in NODES:
            print(_row(node, [t.get(node, 0.0) for _, t, _ in chosen], total))
        overhead = [wall - sum(t.values()) for wall, t, _ in chosen]
        print(_row("process start-up, imports, records", overhead, total))
        outside = [wall - t.get("build", 0.0) - t.get("test", 0.0) for wall, t, _ in chosen]
        print(_row("outside compile and conformance", outside, total))
        print(f"targets: total <= 15 s ({'met' if total <= 15 else 'missed'}), outside compile and conformance "
              f"<= 3 s ({'met' if statistics.median(outside) <= 3 else 'missed'})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
