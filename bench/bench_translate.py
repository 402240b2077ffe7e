"""Bench: every port candidate of a checkout with its porter, and the gate status and seconds of the
ones that port without a model (the translate porter's; the recipes' with --gate-recipes).

Each offline port is a real `metalport run OP --executor emulated --no-input` in a subprocess (the
checks a recipe port meets: contract, host check, emulated conformance) and is counted as passing
the gate only when the run awaits review with every verdict ok in each of --seeds runs (each run's
conformance draws its own random seed, so two runs are two seeds). Candidates a model must port are listed with the reason the translate porter gave.
Writes a Markdown table (default bench/results/translate.md).

Run: `python bench/bench_translate.py --repo CHECKOUT [--gate-recipes] [--seeds 2]` on a checkout whose
tree has `aten/src/ATen/native/cpu/*.cpp`, or `--fixture-workspace DIR`: a wheel workspace made at DIR
with our fixture CPU files (tests/port/fixtures/cpu, the math of real ops in ATen's file shape) where
every op those files register a kernel for has its shared rows' `MPS` removed, as if MPS lacked it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(repo: Path, op: str, run_id: str) -> tuple[str, float]:
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "metalport", "run", f"aten::{op}", "--repo", str(repo), "--executor",
                    "emulated", "--no-input", "--run-id", run_id], capture_output=True, text=True, env=env, timeout=1800)
    seconds = time.perf_counter() - start
    shown = subprocess.run([sys.executable, "-m", "metalport", "runs", "show", run_id, "--repo", str(repo), "--json"],
                           capture_output=True, text=True, env=env, timeout=120)
    try:
        record = json.loads(shown.stdout)
    except json.JSONDecodeError:
        return "no run record", seconds
    subprocess.run([sys.executable, "-m", "metalport", "resume", run_id, "--abort", "--repo", str(repo)],
                   capture_output=True, text=True, env=env, timeout=300)
    if record.get("status") != "awaiting-review":
        return f"{record.get('status')}: {record.get('reason') or ''}".strip(), seconds
    verdicts = record.get("verdicts") or {}
    failed = [k for k, v in verdicts.items() if isinstance(v, dict) and not v.get("ok", True)]
    if failed:
        return "fail: " + ", ".join(failed), seconds
    test = verdicts.get("test") if isinstance(verdicts.get("test"), dict) else {}
    if test.get("judged") is False:  # an ok verdict no case was judged in is no pass
        return f"not judged: {(test.get('report') or {}).get('reason') or test.get('status')}", seconds
    return "pass", seconds


def _fixture_workspace(target: Path, real: Path | None) -> Path:
    """A committed wheel workspace with the fixture CPU files and MPS dropped from the rows of their
    ops; with `real` (a corpus folder), the corpus laid over it instead and no row changed."""
    import re
    import shutil

    from metalport.backlog import scan_backlog
    from metalport.checkout import Checkout, init_workspace
    from metalport.checkout.cpu_kernels import CPU_DIR, cpu_kernel_index
    from metalport.checkout.workspace import GIT_IDENTITY

    root = init_workspace(target).root
    for path in sorted(p for p in (real.rglob("*") if real else ()) if p.is_file()):
        (root / path.relative_to(real)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, root / path.relative_to(real))
    (root / CPU_DIR).mkdir(parents=True, exist_ok=True)
    for path in sorted((ROOT / "tests/port/fixtures/cpu").glob("*.cpp")):
        shutil.copyfile(path, root / CPU_DIR / path.name)
    stubs = set(cpu_kernel_index(root))
    registry = root / "aten/src/ATen/native/native_functions.yaml"
    text = registry.read_text(encoding="utf-8")
    for item in scan_backlog(Checkout(root)) if real is None else ():
        if item.status.value == "shared" and item.stub in stubs:
            for kernel in item.mps_kernels:
                text = re.sub(rf"^(\s+)CPU, CUDA, MPS: {re.escape(kernel)}$", rf"\1CPU, CUDA: {kernel}", text,
                              flags=re.M)
    registry.write_text(text, encoding="utf-8")
    for argv in (["add", "-A"], ["commit", "-q", "-m", "fixture CPU kernels; MPS rows of their ops dropped"]):
        subprocess.run(["git", *GIT_IDENTITY, *argv], cwd=root, check=True, capture_output=True, timeout=120)
    return root


def _carried(path: Path) -> dict[tuple[str, str], tuple[str, float]]:
    """(op, porter) -> (gate, seconds) of the rows of an earlier table that ran (not carried ones)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and not cells[3].startswith("not run") and "(carried" not in cells[3]:
            try:
                out[cells[0], cells[2]] = (cells[3], float(cells[4]))
            except ValueError:
                continue
    return out


def main() -> None:
    """Scan the backlog, run the offline ports, write the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--repo", type=Path)
    where.add_argument("--fixture-workspace", type=Path, help="make the fixture workspace here and bench it")
    parser.add_argument("--over-real", action="store_true",
                        help="with --fixture-workspace: lay $METALPORT_REAL_TREE over it, rows unchanged")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--gate-recipes", action="store_true", help="also run the recipe table's ports")
    parser.add_argument("--only", default="", help="comma-separated porters whose ports run now (default: "
                        "translate, and recipe with --gate-recipes); the others are listed as not run or carried")
    parser.add_argument("--ops", default="", help="comma-separated ops: only their offline ports run now (the "
                        "other rows are carried with --carry, else listed as not run)")
    parser.add_argument("--carry", type=Path, help="an earlier table of this bench: a row not run now takes its "
                        "gate and seconds from there when that row has the same op and porter (marked carried)")
    parser.add_argument("--partial", type=Path, help="rewrite the rows measured so far here after each row")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/translate.md")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from metalport.backlog import scan_backlog
    from metalport.checkout import find_checkout

    if args.fixture_workspace is not None:
        real = Path(os.environ["METALPORT_REAL_TREE"]) if args.over_real else None
        args.repo = _fixture_workspace(args.fixture_workspace, real)

    carried = _carried(args.carry) if args.carry else {}
    ops = set(filter(None, args.ops.split(",")))
    only = set(filter(None, args.only.split(","))) or {"translate", *(("recipe",) if args.gate_recipes else ())}
    items = [i for i in scan_backlog(find_checkout(args.repo)) if i.candidate and i.status.value != "shared"]
    rows, counts = [], {"translate": 0, "recipe": 0, "passed": 0}
    for item in items:
        porter = item.porter.porter.value if item.porter else "?"
        reason = (item.porter.reason or "") if item.porter else ""
        gate, seconds = "not run (needs a model)", 0.0
        run_now = porter in only and (not ops or item.op in ops)
        if porter in ("translate", "recipe") and not run_now and (item.op, porter) in carried:
            counts[porter] += 1
            gate, seconds = carried[item.op, porter]
            counts["passed"] += gate.startswith("pass")
            gate += f" (carried from {args.carry.name})"
        elif run_now and porter in ("translate", "recipe"):
            counts[porter] += 1
            results = [_run(args.repo.resolve(), item.op, f"bench-{item.op}-{seed}") for seed in range(args.seeds)]
            seconds = sum(s for _, s in results)
            gate = f"pass in {args.seeds} runs" if all(r == "pass" for r, _ in results) \
                else "; ".join(f"seed {i}: {r}" for i, (r, _) in enumerate(results) if r != "pass")
            counts["passed"] += gate.startswith("pass")
        elif porter in only and porter in ("translate", "recipe"):
            gate = "not run now (not in --ops)"
        elif porter == "recipe":
            gate = "not run (pass --gate-recipes)"
        if args.partial:  # rows so far, so a long run that is cut short still shows what it measured
            args.partial.write_text("\n".join(rows) + "\n", encoding="utf-8")
        rows.append(f"| {item.op} | {item.kind.kind.value if item.kind else ''} | {porter} | {gate.replace('|', '/')} | "
                    f"{seconds:.1f} | {reason.replace('|', '/')} |")
    source = str(args.repo)
    if args.fixture_workspace is not None:
        source = ("the real corpus over a wheel workspace, with tests/port/fixtures/cpu" if args.over_real else
                  "a wheel workspace with tests/port/fixtures/cpu (MPS dropped from the rows of the ops they register)")
    lines = [f"# Translate porter bench: {source}", "",
             f"{len(items)} candidates (not shared); translate {counts['translate']}, recipe ports run "
             f"{counts['recipe']} (run now: {', '.join(sorted(only))}), passing the gate at {args.seeds} seed(s): {counts['passed']}.", "",
             "| op | kind | porter | gate (emulated) | seconds | why not translated |", "|---|---|---|---|---|---|",
             *rows]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines[:3]))


if __name__ == "__main__":
    main()
