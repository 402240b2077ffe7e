"""The plausible-bug set of tests/checks/test_plausible_bugs.py against the gate, per seed: each
mutant is one regular-expression edit of a real upstream functor (or a c10/metal helper it calls)
planted in a fresh copy of $METALPORT_REAL_TREE; a mutant counts as caught when conformance fails
with an input shown and, where upstream's functor already fails at that seed, with more wrong
elements than it. `--list` prints the set without running it. A report, never a pass or fail.

    METALPORT_REAL_TREE=../shared/pytorch-real python bench/bench_plausible_bugs.py [--list] [--seeds 5,7,11]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _cli import real_tree  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="print the mutants and stop")
    parser.add_argument("--seeds", default="5,7,11", help="comma-separated seeds")
    args = parser.parse_args()
    from metalport.checks.conformance import ConformanceSession
    from tests.checks import test_plausible_bugs as bugs

    mutants = [("plausible", m) for m in bugs.PLAUSIBLE] + [("needs rule", m) for m in bugs.NEEDS_RULE]
    if args.list:
        for kind, m in mutants:
            print(f"{kind:<11} {m.op:<13} {','.join(bugs._dtypes(m)):<8} {m.bug}")
        print(f"{len(mutants)} mutants ({len(bugs.PLAUSIBLE)} plausible, {len(bugs.NEEDS_RULE)} needing the "
              f"exact/signed-zero rule)")
        return 0
    tree = real_tree()
    if tree is None:
        return 2
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    from tests.real_tree import overlay_real_tree

    print(f"{'kind':<11} {'mutant':<60} " + " ".join(f"seed {s:<4}" for s in seeds))
    caught = {s: 0 for s in seeds}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-bugs-") as scratch, ConformanceSession() as session:
        pristine = overlay_real_tree(Path(scratch) / "pristine").root
        for n, (kind, mutant) in enumerate(mutants):
            row = []
            for seed in seeds:
                why = bugs._escaped(Path(scratch) / f"m{n}-{seed}", pristine, mutant, seed, session)
                caught[seed] += why is None
                row.append("caught" if why is None else "ESCAPED")
            print(f"{kind:<11} {(mutant.op + ': ' + mutant.bug)[:60]:<60} " + " ".join(f"{r:<9}" for r in row))
    print(f"caught per seed: {', '.join(f'{s}: {caught[s]}/{len(mutants)}' for s in seeds)} "
          f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
