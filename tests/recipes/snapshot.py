"""Every recipe's port, written out file by file, to check a refactoring leaves generated code as it was.

Not a test: run it before and after a change and compare the two folders.

    python tests/recipes/snapshot.py /tmp/before   # on the old code
    python tests/recipes/snapshot.py /tmp/after    # on the new code
    diff -r /tmp/before /tmp/after                 # nothing: byte-identical

For every op of the recipe tables (pointwise functors and launch specs) it plans the port in a
fresh wheel workspace, applies it, and writes each changed file under `OUT/<op>/<path>`; each
spec recipe's host function from `write_host` goes to `OUT/<op>/write_host.mm`. An op whose plan
fails is written as `OUT/<op>/ERROR` with the one-line error, so a changed refusal shows too.

    python tests/recipes/snapshot.py --translated OUT   # the translate porter's ports as well

With `--translated` it also ports, under `OUT/translated/<op>/`, every op the translate porter
takes in bench/bench_translate.py's fixture workspace (the fixture CPU kernels on a wheel
workspace), and with METALPORT_REAL_TREE set, under `OUT/real/<op>/`, the same over the real corpus
plus the ops the params route, iterator bodies and halves ports serve (softplus, nan_to_num, pow,
glu, glu_backward, log_sigmoid_forward, log_sigmoid_backward).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from metalport.checkout import init_workspace
from metalport.errors import MetalportError
from metalport.port.write.hostgen import write_host
from metalport.port.plan.model import NATIVE_FUNCTIONS
from metalport.port.plan.planner import apply_port, plan_port
from metalport.port.spec.recipes import recipe_ops, spec_recipes
from metalport.registry.index import load_registry


def _git(cwd: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True, timeout=120)


def _write_ports(checkout_root: Path, ops: list[str], out: Path) -> int:
    """Plan and apply each op's port on a worktree of `checkout_root`, its changed files under `out/<op>/`."""
    from metalport.checkout import Checkout
    from metalport.port.plan.family import placeholder_functor

    with tempfile.TemporaryDirectory(prefix="snapshot-port-") as tmp:
        worktree = Path(tmp) / "port"
        _git(checkout_root, "worktree", "add", "-q", "--detach", str(worktree))
        for op in ops:
            target = out / op
            target.mkdir(parents=True)
            try:
                plan = plan_port(Checkout(checkout_root), f"aten::{op}")
                # a functor a model writes: an empty one of its name, so the rest of the port shows
                changed = apply_port(plan, worktree, functor_source=placeholder_functor(plan) if plan.needs_llm
                                     and plan.functor else None)
            except MetalportError as err:
                (target / "ERROR").write_text(f"{type(err).__name__}: {err}\n", encoding="utf-8")
                changed = ()
            for rel in changed:
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                (target / rel).write_bytes((worktree / rel).read_bytes())
            _git(worktree, "checkout", "-q", "--", ".")
            _git(worktree, "clean", "-qfd")
        _git(checkout_root, "worktree", "remove", "--force", str(worktree))
    return len(ops)


_REAL_OPS = ["softplus", "nan_to_num", "pow", "glu", "glu_backward", "log_sigmoid_forward", "log_sigmoid_backward"]


def translated(out: Path) -> int:
    """The translate porter's ports (and, over the real corpus, the params/bodies/halves ports)."""
    import importlib.util
    import os

    from metalport.backlog import scan_backlog
    from metalport.checkout import Checkout

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("bench_translate", root / "bench" / "bench_translate.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    real = os.environ.get("METALPORT_REAL_TREE")
    written = 0
    with tempfile.TemporaryDirectory(prefix="snapshot-translated-") as tmp:
        for name, corpus in (("translated", None), *((("real", Path(real)),) if real else ())):
            ws = bench._fixture_workspace(Path(tmp) / name, corpus)
            items = scan_backlog(Checkout(ws))
            ops = sorted(i.op for i in items if i.porter is not None and i.porter.porter.value == "translate")
            if corpus is not None:
                ops = sorted({*ops, *_REAL_OPS})
            written += _write_ports(ws, ops, out / name)
    return written


def snapshot(out: Path) -> int:
    """Write every recipe's generated files under `out`; returns the number of ops written."""
    with tempfile.TemporaryDirectory(prefix="recipe-snapshot-") as tmp:
        checkout = init_workspace(Path(tmp) / "ws")
        ops = sorted(recipe_ops())
        _write_ports(checkout.root, ops, out)
        specs = spec_recipes()
        registry = load_registry(checkout.root / NATIVE_FUNCTIONS)
        for op in (o for o in ops if o in specs):
            spec = specs[op].spec
            for entry in registry.ops[op].entries if op in registry.ops else ():
                if entry.overload == spec.overload:
                    (out / op / "write_host.mm").write_text(write_host(spec, entry.func), encoding="utf-8")
        return len(ops)


if __name__ == "__main__":
    argv = sys.argv[1:]
    with_translated = "--translated" in argv
    argv = [a for a in argv if a != "--translated"]
    if len(argv) != 1 or Path(argv[0]).exists():
        sys.exit("usage: snapshot.py [--translated] OUT (a folder that does not exist yet)")
    print(f"{snapshot(Path(argv[0]))} recipes written to {argv[0]}")
    if with_translated:
        print(f"{translated(Path(argv[0]))} translated and real-tree ports written to {argv[0]}")
