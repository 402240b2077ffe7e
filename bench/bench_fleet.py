"""Fleet throughput with 1, 2 and 4 workers, and the engine's per-run overhead against a local sweep.

Services: a real Temporal dev server and a real PostgreSQL on 127.0.0.1 (`metalport.fleet.dev`).
Repository: bench_sweep's wheel workspace in which ten special-polynomial ops lost their MPS
dispatch key, ported with `--model openai:scripted-model` against the scripted OpenAI-protocol
server (`tests/llm_server.py`) answering each request after `--delay-s` (two requests per run).
Build and test are the `command` executor's (a fixed `sleep --build-s` and a passing test report),
so a run's time is model wait + pipeline CPU + build. Each worker is a `metalport worker --queue
linux --concurrency 1` process with its own clone (a machine); each configuration uses a fresh
database and a fresh repository name. Time = from `sweep --fleet` until every started run is at
the gate (or ended). The local baseline is `metalport sweep -K 1` over the same ops.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_sweep import answer, make_repo  # noqa: E402
from metalport.fleet.dev import Postgres, Temporal  # noqa: E402
from tests.llm_server import Delay, ScriptedLLM  # noqa: E402

FAMILY = ["--status", "missing", "--family", "binary-pointwise"]


def configure(repo: Path, base_url: str, build_s: float) -> None:
    """metalport.yaml: the scripted provider and the command executor (committed, so clones carry it)."""
    (repo / "metalport.yaml").write_text(
        f"provider:\n  model: scripted-model\n  base_url: {base_url}\n  timeout_s: 120\n"
        f"executor:\n  build: [sleep, '{build_s:g}']\n"
        "  test: [python3, -c, \"print('test_x (t.T) ... ok'); print('Ran 1 test in 0.0s'); print(); print('OK')\"]\n"
        "fleet:\n  heartbeat_s: 10\n")
    for argv in (["add", "metalport.yaml"], ["commit", "-q", "-m", "bench: scripted provider, command executor"]):
        subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *argv], cwd=repo,
                       check=True, capture_output=True)


def runs_of(repo: Path, env: dict[str, str]) -> list[dict]:
    """The repository's run records, read from the shared store."""
    out = subprocess.run([sys.executable, "-m", "metalport", "runs", "--repo", str(repo), "--json"], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def busy_s(runs: list[dict]) -> float:
    """Seconds the runs spent in the pipeline (record created → last update), summed."""
    from metalport.run_record import parse_time

    return sum(parse_time(r["updated_at"]) - parse_time(r["created_at"]) for r in runs)


def fleet_once(base: Path, work: Path, workers: int, runs: int, pg: Postgres, temporal: Temporal,
               server: ScriptedLLM, build_s: float) -> dict:
    """One fleet sweep of `runs` ops over `workers` workers; its wall time to the gate."""
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "METALPORT_DATABASE_URL": pg.url.rsplit("/", 1)[0] + f"/{name}",
           "METALPORT_TEMPORAL_ADDRESS": temporal.address, "METALPORT_REPOSITORY": name}
    repo = make_repo(base, work / f"fleet{workers}")
    configure(repo, server.base_url, build_s)
    procs = []
    try:
        for i in range(workers):
            clone = work / f"fleet{workers}-w{i}"
            subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
            with open(work / f"fleet{workers}-w{i}.log", "wb") as log:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "metalport", "worker", "--queue", "linux", "--executor", "command",
                     "--concurrency", "1", "--host", f"bench-{i}", "--repo", str(clone)],
                    env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        time.sleep(8)  # workers import and start polling (not timed)
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "metalport", "sweep", "--fleet", "--queue", "linux", *FAMILY,
                               "--model", "openai:scripted-model", "--max-attempts", "1", "--limit", str(runs),
                               "--max-open", str(runs), "--repo", str(repo), "--json"],
                              env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"fleet sweep exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
        started = len(json.loads(done.stdout)["started_runs"])
        while True:
            runs = runs_of(repo, env)
            gate = sum(1 for r in runs if r["status"] == "awaiting-review")
            ended = sum(1 for r in runs if r["status"] not in ("running", "awaiting-review"))
            if gate + ended >= started:
                break
            time.sleep(0.5)
        seconds = time.monotonic() - start
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    return {"workers": workers, "runs": started, "gate": gate, "ended": ended, "seconds": seconds,
            "busy_s": busy_s(runs)}


def local_once(base: Path, work: Path, runs: int, server: ScriptedLLM, build_s: float) -> dict:
    """The same ops swept locally with K = 1 (subprocess runs, SQLite), for the per-run overhead."""
    repo = make_repo(base, work / "local")
    configure(repo, server.base_url, build_s)
    env = {key: value for key, value in os.environ.items()
           if key not in ("METALPORT_DATABASE_URL", "METALPORT_TEMPORAL_ADDRESS")}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "metalport", "sweep", "--repo", str(repo), *FAMILY,
                           "--model", "openai:scripted-model", "--executor", "command", "-K", "1", "--max-attempts",
                           "1", "--limit", str(runs), "--max-open", str(runs), "--json"],
                          env={**env, "OPENAI_API_KEY": "sk-bench"}, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"local sweep exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    counts = json.loads(done.stdout)["counts"]
    return {"runs": runs, "gate": counts.get("awaiting-review", 0), "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="runs per sweep (default 8, at most 10)")
    parser.add_argument("--delay-s", type=float, default=10.0, help="seconds before each model reply (default 10)")
    parser.add_argument("--build-s", type=float, default=2.0, help="seconds the fake build sleeps (default 2)")
    parser.add_argument("--workers", default="1,2,4", help="worker counts (default 1,2,4)")
    parser.add_argument("--no-local", action="store_true", help="skip the local `sweep -K 1` baseline")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    from metalport.checkout import init_workspace

    pg, temporal = Postgres(), Temporal()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp, \
                ScriptedLLM([lambda body: Delay(args.delay_s, answer(body))] * 1000) as server:
            work = Path(tmp)
            base = Path(init_workspace(work / "base").root)
            local = None if args.no_local else local_once(base, work, args.runs, server, args.build_s)
            rows = [fleet_once(base, work, n, args.runs, pg, temporal, server, args.build_s)
                    for n in map(int, args.workers.split(","))]
            shutil.rmtree(work, ignore_errors=True)
    finally:
        pg.close()
        temporal.close()
    one = rows[0]["runs"] / rows[0]["seconds"]
    print(f"fleet throughput, {args.runs} runs per sweep, model replies after {args.delay_s:g} s (2 calls per run), "
          f"command executor (build {args.build_s:g} s), one run at a time per worker; load average "
          f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores)")
    print(f"{'workers':>7} {'runs':>5} {'at gate':>8} {'ended':>6} {'seconds':>8} {'runs/min':>9} {'vs 1':>6}")
    for row in rows:
        rate = row["runs"] / row["seconds"]
        print(f"{row['workers']:>7} {row['runs']:>5} {row['gate']:>8} {row['ended']:>6} {row['seconds']:>8.1f} "
              f"{rate * 60:>9.2f} {rate / one:>5.2f}x")
    per_fleet = rows[0]["seconds"] / rows[0]["runs"]
    gap = (rows[0]["seconds"] - rows[0]["busy_s"]) / rows[0]["runs"]
    print(f"fleet with 1 worker: {rows[0]['busy_s']:.0f} s of the {rows[0]['seconds']:.0f} s inside the pipeline "
          f"(records, 1 s resolution); outside it (sweep command, workflow start, task dispatch, store writes, "
          f"polling for the result) {gap:.1f} s per run")
    if local is None:
        return
    per_local = local["seconds"] / local["runs"]
    print(f"local sweep -K 1: {local['runs']} runs ({local['gate']} at the gate) in {local['seconds']:.1f} s = "
          f"{per_local:.1f} s per run (a new process per run); fleet with 1 worker: {per_fleet:.1f} s per run "
          f"({per_fleet - per_local:+.1f} s, {per_fleet / per_local:.2f}x: the worker imports once)")


if __name__ == "__main__":
    main()
