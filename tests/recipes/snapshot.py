"""Every recipe's port, written out file by file, to check a refactoring leaves generated code as it was.

Not a test: run it before and after a change and compare the two folders.

    python tests/recipes/snapshot.py /tmp/before   # on the old code
    python tests/recipes/snapshot.py /tmp/after    # on the new code
    diff -r /tmp/before /tmp/after                 # nothing: byte-identical

For every op of the recipe tables (pointwise functors and launch specs) it plans the port in a
fresh wheel workspace, applies it, and writes each changed file under `OUT/<op>/<path>`; each
spec recipe's host function from `write_host` goes to `OUT/<op>/write_host.mm`. An op whose plan
fails is written as `OUT/<op>/ERROR` with the one-line error, so a changed refusal shows too.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from metalport.checkout import init_workspace
from metalport.errors import MetalportError
from metalport.port.hostgen import write_host
from metalport.port.plan_model import NATIVE_FUNCTIONS
from metalport.port.port import apply_port, plan_port
from metalport.port.spec_recipes import recipe_ops, spec_recipes
from metalport.registry.index import load_registry


def _git(cwd: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True, timeout=120)


def snapshot(out: Path) -> int:
    """Write every recipe's generated files under `out`; returns the number of ops written."""
    with tempfile.TemporaryDirectory(prefix="recipe-snapshot-") as tmp:
        checkout = init_workspace(Path(tmp) / "ws")
        worktree = Path(tmp) / "port"
        _git(checkout.root, "worktree", "add", "-q", "--detach", str(worktree))
        specs = spec_recipes()
        registry = load_registry(checkout.root / NATIVE_FUNCTIONS)
        for op in sorted(recipe_ops()):
            target = out / op
            target.mkdir(parents=True)
            try:
                changed = apply_port(plan_port(checkout, f"aten::{op}"), worktree)
            except MetalportError as err:
                (target / "ERROR").write_text(f"{type(err).__name__}: {err}\n", encoding="utf-8")
                changed = ()
            for rel in changed:
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                (target / rel).write_bytes((worktree / rel).read_bytes())
            _git(worktree, "checkout", "-q", "--", ".")
            _git(worktree, "clean", "-qfd")
            if op in specs:
                spec = specs[op].spec
                for entry in registry.ops[op].entries if op in registry.ops else ():
                    if entry.overload == spec.overload:
                        (target / "write_host.mm").write_text(write_host(spec, entry.func), encoding="utf-8")
        return len(recipe_ops())


if __name__ == "__main__":
    if len(sys.argv) != 2 or Path(sys.argv[1]).exists():
        sys.exit("usage: snapshot.py OUT (a folder that does not exist yet)")
    print(f"{snapshot(Path(sys.argv[1]))} recipes written to {sys.argv[1]}")
