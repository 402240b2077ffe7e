"""Bench: wall time of `run-migration aten::heaviside` on a fresh wheel workspace, to the gate.

Runs the real console script (`python -m metalport run ... --no-input --json`) RUNS times, each on
a new workspace, the first with an empty shader cache (cold) and the rest warm, and prints per
node the median wall seconds and CPU seconds (this process plus finished children, from the
`timings_s`/`cpu_s` of `--json`), the process start-up (imports; total minus the nodes) and the
part outside compile (build) and conformance (test). CPU seconds do not grow with the machine's
load; wall seconds do (the load average is printed). Targets from issue 4: <= 15 s in all,
<= 3 s outside compile and conformance.
Run: `python bench/bench_pipeline.py [RUNS]`.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NODES = ("resolve", "plan", "sandbox", "edit", "check", "build", "test")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _one_run(tmp: Path, index: int, cache: Path) -> dict:
    from metalport.checkout import init_workspace

    workspace = init_workspace(tmp / f"ws{index}").root
    env = {**os.environ, "METALPORT_CACHE_DIR": str(cache)}
    cpu0, start = _children_cpu_s(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "metalport", "run", "aten::heaviside", "--repo", str(workspace),
                           "--executor", "emulated", "--no-input", "--json"],
                          capture_output=True, text=True, env=env, timeout=900)
    wall, cpu = time.perf_counter() - start, _children_cpu_s() - cpu0
    if not proc.stdout.strip():
        raise SystemExit(f"run {index} printed no record: {proc.stderr.strip().splitlines()[-1:]}")
    record = json.loads(proc.stdout)
    return {"wall": wall, "cpu": cpu, "timings": record["timings_s"], "cpus": record.get("cpu_s", {}),
            "status": record["status"]}


def _import_cost() -> tuple[float, float]:
    """(wall, cpu) seconds of importing torch and the OpInfo database alone: conformance needs them,
    and the run pays them once (in `plan`, the first node that reads OpInfo dtypes)."""
    cpu0, start = _children_cpu_s(), time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch\n"
                    "from torch.testing._internal.common_methods_invocations import op_db"],
                   check=True, capture_output=True, timeout=300)
    return time.perf_counter() - start, _children_cpu_s() - cpu0


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _table(label: str, runs: list[dict], imports: tuple[float, float]) -> None:
    wall, cpu = _med([r["wall"] for r in runs]), _med([r["cpu"] for r in runs])
    print(f"\n{label}: status {', '.join(sorted({r['status'] for r in runs}))}")
    print(f"{'step':36} {'wall_s':>8} {'share':>6} {'cpu_s':>8} {'share':>6}")

    def row(name: str, walls: list[float], cpus: list[float]) -> None:
        """One line: medians and their shares of the total."""
        w, c = _med(walls), _med(cpus)
        print(f"{name:36} {w:8.2f} {100 * w / wall:5.1f}% {c:8.2f} {100 * c / cpu:5.1f}%")

    for node in NODES:
        row(node, [r["timings"].get(node, 0.0) for r in runs], [r["cpus"].get(node, 0.0) for r in runs])
    row("start-up, imports, records", [r["wall"] - sum(r["timings"].values()) for r in runs],
        [r["cpu"] - sum(r["cpus"].values()) for r in runs])
    outside_w = [r["wall"] - r["timings"].get("build", 0.0) - r["timings"].get("test", 0.0) for r in runs]
    outside_c = [r["cpu"] - r["cpus"].get("build", 0.0) - r["cpus"].get("test", 0.0) for r in runs]
    row("outside compile and conformance", outside_w, outside_c)
    row("  of which torch + OpInfo import", [imports[0]], [imports[1]])
    row("total", [r["wall"] for r in runs], [r["cpu"] for r in runs])
    for name, value in (("wall", wall), ("cpu", cpu)):
        print(f"targets by {name}: total <= 15 s {'met' if value <= 15 else 'missed'}, outside compile and "
              f"conformance <= 3 s {'met' if _med(outside_w if name == 'wall' else outside_c) <= 3 else 'missed'}")


def main(runs: int = 3) -> None:
    """Time `runs` runs (first cold, rest warm) and print the per-node tables of medians."""
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        results = [_one_run(tmp, i, tmp / "shader-cache") for i in range(runs)]
    imports = _import_cost()
    _table("cold shader cache (run 1)", results[:1], imports)
    if runs > 1:
        _table(f"warm shader cache (median of {runs - 1})", results[1:], imports)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
