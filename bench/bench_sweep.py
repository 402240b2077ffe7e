"""Sweep throughput for K = 1, 2, 4 with LLM-bound runs (a scripted OpenAI server that answers late).

The repository is a wheel workspace in which the MPS dispatch key is dropped from ten special
polynomial ops (Chebyshev T/U/V/W, shifted Chebyshev T/U/V/W, Hermite H/He), so they are port
candidates outside the recipe table, plus Laguerre L: each run asks the model for its functor.
The scripted model answers every request after `--delay-s`: one `show_op` tool call, then a
functor of our own that calls the wheel's `c10/metal/special_math.h` helper. heaviside and
Legendre P get a `metalport/<op>` branch so the sweep skips them (heaviside needs no model; we have
no scripted Legendre functor). Each K sweeps a fresh copy with `--limit N --max-open N`.

Target: throughput(K) >= 0.8 * K * throughput(1). Prints a table.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.llm_server import Delay, ScriptedLLM, json_reply, tool_reply  # noqa: E402

HELPERS = {
    "special_chebyshev_polynomial_t": "chebyshev_polynomial_t_forward",
    "special_chebyshev_polynomial_u": "chebyshev_polynomial_u_forward",
    "special_chebyshev_polynomial_v": "chebyshev_polynomial_v_forward",
    "special_chebyshev_polynomial_w": "chebyshev_polynomial_w_forward",
    "special_shifted_chebyshev_polynomial_t": "shifted_chebyshev_polynomial_t_forward",
    "special_shifted_chebyshev_polynomial_u": "shifted_chebyshev_polynomial_u_forward",
    "special_shifted_chebyshev_polynomial_v": "shifted_chebyshev_polynomial_v_forward",
    "special_shifted_chebyshev_polynomial_w": "shifted_chebyshev_polynomial_w_forward",
    "special_hermite_polynomial_h": "hermite_polynomial_h_forward",
    "special_hermite_polynomial_he": "hermite_polynomial_he_forward",
}
LAGUERRE = """struct special_laguerre_polynomial_l_functor {
  template <typename T>
  inline float operator()(const T x_in, const T n_in) {
    const float x = static_cast<float>(x_in);
    const long n = static_cast<long>(n_in);
    if (n < 0) {
      return 0.0f;
    }
    if (::metal::fabs(x) == 0.0f || n == 0) {
      return 1.0f;
    }
    float prev = 1.0f;
    float cur = 1.0f - x;
    for (long k = 1; k < n; ++k) {
      const float next = ((static_cast<float>(k + k) + (1.0f - x)) * cur - static_cast<float>(k) * prev) /
          static_cast<float>(k + 1);
      prev = cur;
      cur = next;
    }
    return cur;
  }
};
"""
_OP = re.compile(r"aten::(special_[a-z_]+)")


def functor_source(op: str, dtypes: list[str]) -> str:
    """Our functor for `op` (a call of the header's helper), registered with a float result.

    Like CPU, integer inputs give a float result, so the answer carries its own registrations.
    """
    if op == "special_laguerre_polynomial_l":
        body = LAGUERRE
    else:
        body = (f"#include <c10/metal/special_math.h>\n\nstruct {op}_functor {{\n  template <typename T>\n"
                f"  inline float operator()(const T x, const T n) {{\n"
                f"    return c10::metal::{HELPERS[op]}(static_cast<float>(x), static_cast<int64_t>(n));\n  }}\n}};\n")
    return body + "".join(f"REGISTER_BINARY_OP({op}, {t}, float);\n" for t in dtypes)


def answer(request: dict) -> dict:
    """The scripted model: `show_op` first, then the functor as the JSON answer."""
    text = json.dumps(request["messages"])
    op = next((m for m in _OP.findall(text) if m in HELPERS or m == "special_laguerre_polynomial_l"), None)
    if op is None:
        return json_reply({"error": "unknown op"})
    if not any(m["role"] == "tool" for m in request["messages"]):
        return tool_reply(("show_op", {"op": f"aten::{op}"}))
    listed = re.search(r"Dtypes to support: ([^.]*)\.", text)
    dtypes = [t.strip() for t in listed.group(1).split(",")] if listed else ["float"]
    return json_reply({"functor_source": functor_source(op, dtypes),
                       "summary": f"{op} through the c10/metal helper"})


def make_repo(base: Path, where: Path) -> Path:
    """A copy of the wheel workspace with the ten polynomial ops made port candidates."""
    repo = Path(shutil.copytree(base, where, symlinks=True))
    native = repo / "aten/src/ATen/native/native_functions.yaml"
    text = native.read_text()
    for op in HELPERS:
        text = text.replace(f"CPU, CUDA, MPS: {op}_out\n", f"CPU, CUDA: {op}_out\n")
    native.write_text(text)
    for argv in (["add", "-A"], ["commit", "-q", "-m", "bench: polynomial ops without MPS"],
                 ["branch", "metalport/heaviside"], ["branch", "metalport/special_legendre_polynomial_p"]):
        subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *argv], cwd=repo,
                       check=True, capture_output=True)
    return repo


def sweep_once(base: Path, work: Path, k: int, runs: int, delay_s: float) -> dict:
    """One sweep of `runs` ops with concurrency `k`; returns its timing and outcomes."""
    repo = make_repo(base, work / f"k{k}")
    with ScriptedLLM([lambda body: Delay(delay_s, answer(body))] * (runs * 12)) as server:
        config = repo / "metalport.yaml"
        config.write_text(f"provider:\n  model: scripted-model\n  base_url: {server.base_url}\n  timeout_s: 60\n")
        env_key = {"OPENAI_API_KEY": "sk-bench"}
        argv = [sys.executable, "-m", "metalport", "sweep", "--repo", str(repo), "--status", "missing",
                "--family", "binary-pointwise", "--model", "openai:scripted-model", "--executor", "emulated",
                "-K", str(k), "--limit", str(runs), "--max-open", str(runs), "--max-attempts", "1",
                "--config", str(config), "--json"]
        start = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, env={**_env(), **env_key}, timeout=3600)
        seconds = time.monotonic() - start
        calls = len(server.requests)
    if done.returncode != 0:
        raise SystemExit(f"sweep K={k} exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    report = json.loads(done.stdout)
    counts = report["counts"]
    return {"k": k, "runs": len(report["started_runs"]), "seconds": seconds, "calls": calls,
            "recorded_calls": int(report["usage"].get("calls", 0)),
            "awaiting": counts.get("awaiting-review", 0), "failed": counts.get("failed", 0),
            "reasons": sorted({o["reason"][:400] for o in report["outcomes"] if o["outcome"] == "failed"})}


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="runs per sweep (default 8)")
    parser.add_argument("--delay-s", type=float, default=4.0, help="seconds before each model reply (default 4)")
    parser.add_argument("--ks", default="1,2,4", help="concurrencies to measure (default 1,2,4)")
    args = parser.parse_args()
    from metalport.checkout import init_workspace

    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        work = Path(tmp)
        base = getattr(init_workspace(work / "base"), "root", work / "base")
        rows = [sweep_once(Path(base), work, k, args.runs, args.delay_s) for k in map(int, args.ks.split(","))]
    one = rows[0]["runs"] / rows[0]["seconds"]
    print(f"sweep throughput, {args.runs} LLM-bound runs per sweep, model replies after {args.delay_s:g} s "
          "(2 calls per run), emulated executor")
    print(f"{'K':>2} {'runs':>5} {'at gate':>8} {'failed':>7} {'seconds':>8} {'runs/min':>9} {'speed-up':>9} "
          f"{'target':>7} {'met':>4}")
    for row in rows:
        rate = row["runs"] / row["seconds"]
        speedup, target = rate / one, 0.8 * row["k"]
        print(f"{row['k']:>2} {row['runs']:>5} {row['awaiting']:>8} {row['failed']:>7} {row['seconds']:>8.1f} "
              f"{rate * 60:>9.2f} {speedup:>8.2f}x {target:>6.1f}x {'yes' if speedup >= target else 'no':>4}")
    for row in rows:
        print(f"  K={row['k']}: the server answered {row['calls']} requests; the sweep's summed usage says "
              f"{row['recorded_calls']} calls")
        for reason in row["reasons"]:
            print(f"  K={row['k']} failed: {reason}")


if __name__ == "__main__":
    main()
