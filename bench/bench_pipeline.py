"""Bench: pre-flight of `run-migration` to the gate, per stage, BEFORE and AFTER in one run.

Rows: `aten::heaviside` on a fresh wheel workspace, and `aten::signbit` on a wheel workspace with
$METALPORT_REAL_TREE's real files laid over it (the real `.mm`/`.metal` corpus). In one run it
times two metalport trees on the same machine and load: BEFORE (a git ref of this repository,
checked out into a temporary worktree; default: main before issue 26) and AFTER (this tree). Each
tree runs the real console script (`python -m metalport run OP --executor emulated --no-input
--json`) RUNS times per row, each on a new workspace, with its own empty caches at the start
(shader cache, registry index, OpInfo facts, content caches): run 1 is cold, the rest warm.

CPU is the metric (the machine is shared; wall grows with the load, CPU does not): the CPU seconds
of the process and its finished children (`os.times` in the driver, `--json`'s `cpu_s`, and
`RUSAGE_CHILDREN` here for the whole process). "outside compile and conformance" is the total
minus the build and test stages (target: <= 1.5 s warm, <= 10 s cold); "start-up, imports,
records, exit" is the total minus every stage. Wall seconds and the load average are printed beside.
The table is written to `bench/results/pipeline.md` (the README quotes it); `--summary` prints one
line (the AFTER tree only, build and test by `true` through the command executor, so it takes
seconds: what `.ci/run` prints after the tests, a report, never a pass or fail).
Run: `python bench/bench_pipeline.py [--runs 3] [--before REF] [--rows heaviside,signbit]`.
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

NODES = ("resolve", "plan", "sandbox", "baseline", "edit", "hostcheck", "check", "build", "test")
BEFORE = "582e64c"  # main before the issue-26 speed work
ROOT = Path(__file__).resolve().parents[1]


def make_workspace(target: Path, *, real: bool = False) -> Path:
    """A fresh wheel workspace at `target`; with `real`, $METALPORT_REAL_TREE's files laid over it and
    committed (as the real-tree tests do)."""
    import shutil

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
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


ROWS = {"heaviside": ("aten::heaviside", False), "signbit": ("aten::signbit", True)}
GOAL_WARM_S, GOAL_COLD_S = 1.5, 10.0
RESULTS = ROOT / "bench" / "results" / "pipeline.md"
_COMMAND_CONFIG = "executor:\n  build: [\"true\"]\n  test: [\"true\"]\n"


def _one_run(tree: Path, workspace: Path, cache: Path, op: str, real: bool, *, command: bool = False) -> dict:
    """One run of `tree`'s metalport (`-m` puts the working folder first on sys.path: cwd=tree)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "METALPORT_CACHE_DIR": str(cache / "shaders"),
           "XDG_CACHE_HOME": str(cache / "xdg")}
    make_workspace(workspace, real=real)
    argv = [sys.executable, "-m", "metalport", "run", op, "--repo", str(workspace), "--no-input", "--json"]
    if command:
        config = workspace.parent / f"{workspace.name}-metalport.yaml"
        config.write_text(_COMMAND_CONFIG)
        argv += ["--executor", "command", "--config", str(config)]
    else:
        argv += ["--executor", "emulated"]
    cpu0, start = _children_cpu_s(), time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900, cwd=tree)
    wall, cpu = time.perf_counter() - start, _children_cpu_s() - cpu0
    if not proc.stdout.strip():
        raise SystemExit(f"{tree}: the run printed no record: {proc.stderr.strip().splitlines()[-1:]}")
    record = json.loads(proc.stdout)
    return {"wall": wall, "cpu": cpu, "timings": record["timings_s"], "cpus": record.get("cpu_s", {}),
            "status": record["status"], "load": os.getloadavg()[0]}


_COMPILED: set[Path] = set()


def _bytecode(tree: Path) -> None:
    """Byte-compile `tree`'s package once, as an installed one is: with PYTHONDONTWRITEBYTECODE set
    (as in some shells and containers) every run would otherwise compile its ~100 modules anew
    (~0.1 s CPU), which no user's installed metalport pays."""
    if tree not in _COMPILED:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "metalport")], check=True,
                       capture_output=True, timeout=600)
        _COMPILED.add(tree)


def _series(tree: Path, tmp: Path, label: str, row: str, runs: int, *, command: bool = False,
            quiet: bool = False, cache: Path | None = None) -> list[dict]:
    op, real = ROWS[row]
    _bytecode(tree)
    cache = cache or tmp / f"{label}-{row}-cache"
    results = []
    for i in range(runs):
        results.append(_one_run(tree, tmp / f"{label}-{row}-ws{i}", cache, op, real, command=command))
        if not quiet:
            r = results[-1]
            print(f"  {label} {row} run {i + 1}: {r['wall']:.2f} s wall, {r['cpu']:.2f} s cpu, "
                  f"outside {_outside(r, 'cpu'):.2f} s cpu, load {r['load']:.2f}, {r['status']}", flush=True)
    return results


def _outside(run: dict, key: str) -> float:
    per = "timings" if key == "wall" else "cpus"
    return run[key] - run[per].get("build", 0.0) - run[per].get("test", 0.0)


def _rows(runs: list[dict], key: str) -> dict[str, float]:
    """Median seconds per stage (`key` "wall" or "cpu") over `runs`."""
    per = "timings" if key == "wall" else "cpus"
    med = statistics.median
    rows = {n: med([r[per].get(n, 0.0) for r in runs]) for n in NODES}
    rows["start-up, imports, records, exit"] = med([r[key] - sum(r[per].values()) for r in runs])
    rows["**outside compile and conformance**"] = med([_outside(r, key) for r in runs])
    rows["total"] = med([r[key] for r in runs])
    return rows


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b > 0.005 else "-"


def _table(title: str, before: list[dict], after: list[dict]) -> list[str]:
    """A Markdown table of the per-stage medians, before and after."""
    wb, wa, cb, ca = _rows(before, "wall"), _rows(after, "wall"), _rows(before, "cpu"), _rows(after, "cpu")
    load = statistics.median([r["load"] for r in before + after])
    out = [f"{title} (load average ~{load:.1f}; status before {sorted({r['status'] for r in before})}, "
           f"after {sorted({r['status'] for r in after})}):", "",
           "| stage | CPU before | CPU after | ratio | wall before | wall after | ratio |",
           "|---|---|---|---|---|---|---|"]
    for name in wb:
        out.append(f"| {name} | {cb[name]:.2f} | {ca[name]:.2f} | {_ratio(ca[name], cb[name])} | "
                   f"{wb[name]:.2f} | {wa[name]:.2f} | {_ratio(wa[name], wb[name])} |")
    return out + [""]


def _verdict(row: str, cold: list[dict], warm: list[dict]) -> str:
    w = statistics.median([_outside(r, "cpu") for r in warm]) if warm else float("nan")
    c = _outside(cold[0], "cpu")
    ww = statistics.median([_outside(r, "wall") for r in warm]) if warm else float("nan")
    return (f"{row}: warm {w:.2f} s CPU outside compile and conformance (goal <= {GOAL_WARM_S} s: "
            f"{'met' if w <= GOAL_WARM_S else 'missed'}), wall {ww:.2f} s; cold {c:.2f} s CPU "
            f"(goal <= {GOAL_COLD_S:.0f} s: {'met' if c <= GOAL_COLD_S else 'missed'})")


def _summary(rows: list[str], runs: int) -> None:
    """One line: the AFTER tree's outside-compile-and-conformance CPU per row (a report, not a test).
    The rows share one user cache, so only the first row's first run is cold (CI time)."""
    parts = []
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as folder:
        for i, row in enumerate(rows):
            try:
                results = _series(ROOT, Path(folder), "after", row, runs if i == 0 else max(runs, 2), command=True,
                                  quiet=True, cache=Path(folder) / "cache")
            except (SystemExit, subprocess.SubprocessError, OSError) as err:
                parts.append(f"{row}: not measured ({err})")
                continue
            warm = statistics.median([_outside(r, "cpu") for r in results[1:]]) if len(results) > 1 else float("nan")
            cold = f", cold {_outside(results[0], 'cpu'):.2f} s" if i == 0 else ""
            parts.append(f"{row} warm {warm:.2f} s{cold}")
    print(f"bench_pipeline: CPU outside compile and conformance (goal <= {GOAL_WARM_S} s warm, "
          f"<= {GOAL_COLD_S:.0f} s cold): {'; '.join(parts)}; load {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores (a report, not a test; full table: bench/results/pipeline.md)")


def main() -> None:
    """Time BEFORE and AFTER per row (first run cold, the rest warm); print and write the tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per tree and row; the first is cold (default 3)")
    parser.add_argument("--before", default=BEFORE, help=f"git ref of the BEFORE tree (default {BEFORE})")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"rows to time (default {','.join(ROWS)})")
    parser.add_argument("--summary", action="store_true", help="one line for CI: AFTER only, build and test by `true`")
    parser.add_argument("--no-write", action="store_true", help=f"do not write {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args()
    rows = [r for r in args.rows.split(",") if r]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        parser.error(f"unknown row {unknown[0]!r}; rows: {', '.join(ROWS)}")
    if args.summary:
        _summary(rows, args.runs)
        return
    load0 = os.getloadavg()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load0)} on {os.cpu_count()} cores", flush=True)
    lines, verdicts = [], []
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as folder:
        tmp = Path(folder)
        old = tmp / "before-tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.before],
                       check=True, capture_output=True, timeout=120)
        try:
            for row in rows:
                before = _series(old, tmp, "before", row, args.runs)
                after = _series(ROOT, tmp, "after", row, args.runs)
                lines += _table(f"**{row}**, cold caches (run 1), seconds", before[:1], after[:1])
                if args.runs > 1:
                    title = f"**{row}**, warm caches (median of {args.runs - 1}), seconds"
                    lines += _table(title, before[1:], after[1:])
                verdicts.append(_verdict(row, after[:1], after[1:]))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           capture_output=True, timeout=120)
    load1 = os.getloadavg()
    head = (f"`python bench/bench_pipeline.py --runs {args.runs}` (BEFORE {args.before}, AFTER this tree), "
            f"{os.cpu_count()} cores, load average {load0[0]:.2f} before and {load1[0]:.2f} after; medians; "
            f"CPU = the process and its finished children.")
    text = "\n".join([head, "", *(f"- {v}" for v in verdicts), "", *lines])
    print("\n" + text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text + "\n", encoding="utf-8")
        print(f"written to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
