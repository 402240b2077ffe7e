"""Profile: where a warm `run-migration OP` spends its CPU, one cProfile per graph stage.

Runs the real command in this process (`metalport.cli.main`) on a fresh wheel workspace (or, with
`--real`, one with $METALPORT_REAL_TREE laid over it), after `--warm N` unprofiled runs that fill the
user caches, with every graph node wrapped in its own `cProfile.Profile`; start-up (imports) is
profiled separately. Prints, per stage, the CPU seconds and the top functions by cumulative time
(`--top`), and writes each stage's stats to `--out DIR/STAGE.prof` for `python -m pstats`.
Run: `python bench/profile_pipeline.py [--op aten::heaviside] [--real] [--warm 1] [--top 25]`.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _workspace(target: Path, real: bool) -> Path:
    from bench.bench_pipeline import make_workspace

    return make_workspace(target, real=real)


def _wrap_nodes(profiles: dict[str, cProfile.Profile], cpu: dict[str, float]) -> None:
    from metalport.graph import nodes

    for name in nodes.__all__:
        node = getattr(nodes, name)

        @functools.wraps(node)
        def profiled(*args, __node=node, __name=name, **kwargs):
            prof = profiles.setdefault(__name, cProfile.Profile())
            cpu0 = _cpu()
            prof.enable()
            try:
                return __node(*args, **kwargs)
            finally:
                prof.disable()
                cpu[__name] = cpu.get(__name, 0.0) + _cpu() - cpu0

        setattr(nodes, name, profiled)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--op", default="aten::heaviside")
    parser.add_argument("--real", action="store_true", help="lay $METALPORT_REAL_TREE over the workspace")
    parser.add_argument("--warm", type=int, default=1, help="unprofiled runs first, filling the caches (default 1)")
    parser.add_argument("--top", type=int, default=25, help="functions shown per stage")
    parser.add_argument("--out", type=Path, default=None, help="folder for STAGE.prof files")
    parser.add_argument("--stages", default="resolve,plan,edit,check,test",
                        help="stages whose functions are listed (all are timed)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="profile-pipeline-"))
    os.environ.setdefault("XDG_CACHE_HOME", str(tmp / "xdg"))
    os.environ.setdefault("METALPORT_CACHE_DIR", str(tmp / "shaders"))
    try:
        startup = cProfile.Profile()
        cpu0 = _cpu()
        startup.enable()
        from metalport.cli import main as cli_main
        startup.disable()
        startup_cpu = _cpu() - cpu0
        argv = ["run", args.op, "--executor", "emulated", "--no-input", "--json"]
        for i in range(args.warm):
            ws = _workspace(tmp / f"warm{i}", args.real)
            with open(os.devnull, "w") as sink:
                sys.stdout, saved = sink, sys.stdout
                try:
                    cli_main([*argv, "--repo", str(ws)])
                finally:
                    sys.stdout = saved
        profiles: dict[str, cProfile.Profile] = {}
        cpu: dict[str, float] = {}
        _wrap_nodes(profiles, cpu)
        ws = _workspace(tmp / "profiled", args.real)
        out = io.StringIO()
        sys.stdout, saved = out, sys.stdout
        cpu1, wall1 = _cpu(), time.perf_counter()
        try:
            cli_main([*argv, "--repo", str(ws)])
        finally:
            sys.stdout = saved
        total, wall = _cpu() - cpu1, time.perf_counter() - wall1
        print(f"{args.op}{' (real tree)' if args.real else ''}: load {os.getloadavg()[0]:.2f}; "
              f"import metalport.cli {startup_cpu:.2f} s CPU; run {total:.2f} s CPU, {wall:.2f} s wall")
        for name, seconds in cpu.items():
            print(f"  {name:10} {seconds:6.2f} s CPU")
        print(f"  {'other':10} {total - sum(cpu.values()):6.2f} s CPU (driver, records, checkpoints)")
        shown = {"startup": startup, **profiles}
        for name, prof in shown.items():
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                prof.dump_stats(str(args.out / f"{name}.prof"))
            if name != "startup" and name not in args.stages.split(","):
                continue
            print(f"\n=== {name} ===")
            stream = io.StringIO()
            pstats.Stats(prof, stream=stream).sort_stats("cumulative").print_stats(args.top)
            print("\n".join(line for line in stream.getvalue().splitlines()[6:] if line.strip()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
