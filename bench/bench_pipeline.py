"""Bench: `run-migration aten::heaviside` on a fresh wheel workspace to the gate, per stage, before and after.

In one run it times two metalport trees on the same machine and load: BEFORE (a git ref of this
repository, checked out into a temporary worktree; default: the commit before the speed work of
issue 14) and AFTER (this tree). Each tree runs the real console script (`python -m metalport run
aten::heaviside --executor emulated --no-input --json`) RUNS times, each on a new workspace, with
its own empty caches at the start (shader cache, registry index, OpInfo facts): run 1 is cold, the
rest are warm. Per stage it prints the median wall and CPU seconds of the warm runs (this process
plus finished children, from the `timings_s`/`cpu_s` of `--json`) and the ratio after/before;
"start-up, imports, records, exit" is the process's total minus its stages. "outside compile and
conformance" is the total minus build and test (the issue's target: <= 3 s warm). CPU seconds do
not grow with the machine's load; wall seconds do (the load average is printed).
Run: `python bench/bench_pipeline.py [--runs 3] [--before REF]`.
"""

from __future__ import annotations

import argparse
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
BEFORE = "72942bb"  # main before the issue-14 speed work
ROOT = Path(__file__).resolve().parents[1]


def make_workspace(target: Path, *, real: bool = False) -> Path:
    """A fresh wheel workspace at `target`; with `real`, $METALPORT_REAL_TREE's files laid over it and
    committed (as the real-tree tests do)."""
    import shutil

    from metalport.checkout import init_workspace
    from metalport.checkout.workspace import GIT_IDENTITY

    checkout = init_workspace(target)
    if real:
        tree = Path(os.environ.get("METALPORT_REAL_TREE") or ROOT.parent / "shared" / "pytorch-real")
        if not tree.is_dir():
            raise SystemExit(f"no real tree at {tree}: set METALPORT_REAL_TREE")
        shutil.copytree(tree, checkout.root, dirs_exist_ok=True)
        for argv in (["add", "-A"], ["commit", "-q", "-m", "real upstream files over the wheel workspace"]):
            subprocess.run(["git", *GIT_IDENTITY, *argv], cwd=checkout.root, check=True, capture_output=True,
                           timeout=120)
    return checkout.root


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _one_run(tree: Path, workspace: Path, cache: Path) -> dict:
    """One run of `tree`'s metalport (`-m` puts the working folder first on sys.path: cwd=tree)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "METALPORT_CACHE_DIR": str(cache / "shaders"),
           "XDG_CACHE_HOME": str(cache / "xdg")}
    subprocess.run([sys.executable, "-m", "metalport", "workspace", "init", str(workspace)], env=env, check=True,
                   capture_output=True, timeout=300, cwd=tree)
    cpu0, start = _children_cpu_s(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "metalport", "run", "aten::heaviside", "--repo", str(workspace),
                           "--executor", "emulated", "--no-input", "--json"],
                          capture_output=True, text=True, env=env, timeout=900, cwd=tree)
    wall, cpu = time.perf_counter() - start, _children_cpu_s() - cpu0
    if not proc.stdout.strip():
        raise SystemExit(f"{tree}: the run printed no record: {proc.stderr.strip().splitlines()[-1:]}")
    record = json.loads(proc.stdout)
    return {"wall": wall, "cpu": cpu, "timings": record["timings_s"], "cpus": record.get("cpu_s", {}),
            "status": record["status"]}


def _series(tree: Path, tmp: Path, label: str, runs: int) -> list[dict]:
    cache = tmp / f"{label}-cache"
    results = []
    for i in range(runs):
        results.append(_one_run(tree, tmp / f"{label}-ws{i}", cache))
        print(f"  {label} run {i + 1}: {results[-1]['wall']:.2f} s wall, {results[-1]['cpu']:.2f} s cpu, "
              f"{results[-1]['status']}", flush=True)
    return results


def _rows(runs: list[dict], key: str) -> dict[str, float]:
    """Median seconds per stage (`key` "wall" or "cpu") over `runs`."""
    per = "timings" if key == "wall" else "cpus"
    med = statistics.median
    rows = {n: med([r[per].get(n, 0.0) for r in runs]) for n in NODES}
    rows["start-up, imports, records, exit"] = med([r[key] - sum(r[per].values()) for r in runs])
    rows["outside compile and conformance"] = med([r[key] - r[per].get("build", 0.0) - r[per].get("test", 0.0)
                                                    for r in runs])
    rows["total"] = med([r[key] for r in runs])
    return rows


def _table(title: str, before: list[dict], after: list[dict]) -> None:
    print(f"\n{title}: status before {sorted({r['status'] for r in before})}, "
          f"after {sorted({r['status'] for r in after})}")
    print(f"{'stage':34} {'wall before':>11} {'after':>7} {'ratio':>6}   {'cpu before':>10} {'after':>7} {'ratio':>6}")
    wb, wa, cb, ca = _rows(before, "wall"), _rows(after, "wall"), _rows(before, "cpu"), _rows(after, "cpu")
    for name in wb:
        def ratio(a: float, b: float) -> str:
            return f"{a / b:5.2f}x" if b > 0.005 else "     -"
        print(f"{name:34} {wb[name]:11.2f} {wa[name]:7.2f} {ratio(wa[name], wb[name])}   "
              f"{cb[name]:10.2f} {ca[name]:7.2f} {ratio(ca[name], cb[name])}")
    outside = wa["outside compile and conformance"]
    print(f"target outside compile and conformance <= 3 s: {'met' if outside <= 3 else 'missed'} by wall "
          f"({outside:.2f} s), {'met' if ca['outside compile and conformance'] <= 3 else 'missed'} by cpu "
          f"({ca['outside compile and conformance']:.2f} s)")


def main() -> None:
    """Time BEFORE and AFTER (first run cold, the rest warm) and print the per-stage tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per tree; the first is cold (default 3)")
    parser.add_argument("--before", default=BEFORE, help=f"git ref of the BEFORE tree (default {BEFORE})")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as folder:
        tmp = Path(folder)
        old = tmp / "before-tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.before],
                       check=True, capture_output=True, timeout=120)
        try:
            before = _series(old, tmp, "before", args.runs)
            after = _series(ROOT, tmp, "after", args.runs)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           capture_output=True, timeout=120)
    _table("cold caches (run 1)", before[:1], after[:1])
    if args.runs > 1:
        _table(f"warm caches (median of {args.runs - 1})", before[1:], after[1:])
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
