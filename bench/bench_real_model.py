"""The LLM path with a real open model: per op, how a run ends and what it cost.

Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama-server (fetched and built into the user cache on first
use by `metalport.agent.local_model`; ~1.1 GB download, ~20 min build on 2 cores), served on
127.0.0.1 with `--jinja`, 12k context, 2 threads. Each op runs as `metalport run aten::<op> --model
openai:... --executor emulated --no-input` on a wheel workspace with $METALPORT_REAL_TREE overlaid,
with the README's llama.cpp settings (structured_output json_schema, schema_with_tools false,
max_tokens 768, stream true) and a budget of 10 calls / 5000 output tokens / 600 s.

Reports per op: status, attempts, model calls, input/output tokens, wall time, tool calls the model
wrote in its text and that ran, malformed answers fed back, refused requests retried (must be 0)
and the first failure class. Robustness, not success: a 1.5B model rarely ports an op.
Run: `python bench/bench_real_model.py [--ops a,b,...]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str] | None = None) -> int:
    from bench._cli import real_tree
    from tests.agent.real_model import BUDGET, DEFAULT_OPS, NAMED_STATUSES, real_server, run_op
    from tests.real_tree import overlay_real_tree

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default=",".join(DEFAULT_OPS), help="comma-separated ops (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=2, help="build jobs for llama-server, if it must be built")
    parser.add_argument("--threads", type=int, default=1,
                        help="llama-server threads (default 1: on a shared, loaded 2-core machine two threads "
                             "measured 0.3 output tokens/s against 4.9 with one)")
    parser.add_argument("--max-calls", type=int, default=BUDGET["max_calls"], help="model calls per run")
    args = parser.parse_args(argv)
    BUDGET["max_calls"] = args.max_calls
    if real_tree() is None:
        return 2
    ops = [o.strip().removeprefix("aten::") for o in args.ops.split(",") if o.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        repo = overlay_real_tree(Path(tmp) / "ws", writable=True).root
        with real_server(jobs=args.jobs, threads=args.threads) as server:
            print(f"model {server.model} at {server.base_url} (llama-server pid {server.pid}; {args.threads} thread(s))",
                  flush=True)
            runs = [run_op(repo, op, server.base_url, server.model, Path(tmp)) for op in ops]
    header = (f"{'op':<32} {'status':<17} {'att':>3} {'calls':>5} {'in tok':>7} {'out tok':>7} {'wall s':>7} "
              f"{'text calls':>10} {'fed back':>8} {'refused+retried':>15}  first failure")
    print(header, flush=True)
    ok = True
    for r in runs:
        u = r.usage
        print(f"{r.op:<32} {r.status:<17} {r.attempts:>3} {u.get('calls', 0):>5} {u.get('input_tokens', 0):>7} "
              f"{u.get('output_tokens', 0):>7} {r.wall_s:>7.0f} {r.text_calls:>10} {r.corrections:>8} "
              f"{r.refused_then_retried:>15}  {r.first_failure}")
        ok = ok and r.status in NAMED_STATUSES and r.refused_then_retried == 0
    out = sum(r.usage.get("output_tokens", 0) for r in runs)
    wall = sum(r.wall_s for r in runs)
    print(f"\n{len(runs)} runs, {out} output tokens in {wall:.0f} s of runs "
          f"({out / wall if wall else 0:.1f} output tokens/s overall, prompt processing included)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
