"""Bench: `scan_backlog` on a wheel workspace against `torchgen.gen.parse_native_yaml` on the same file.

Prints a table of medians (of 5) and their ratio. torchgen caches by path, so each of its runs
parses a fresh copy. With METALPORT_REAL_TREE set, also the scan of real `.mm`/`.cpp` files laid
over a workspace, cold (pcpp on every file) and warm. Run: `python bench/bench_backlog.py`.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

RUNS = 5


def _median_s(fn: Callable[[int], object]) -> float:
    times = []
    for i in range(RUNS):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Build a workspace, time both, print the table."""
    import torchgen.gen

    from metalport.backlog import scan_backlog
    from metalport.checkout import init_workspace
    from metalport.registry import load_registry

    with tempfile.TemporaryDirectory() as tmp:
        checkout = init_workspace(Path(tmp) / "ws")
        copies = []
        for i in range(RUNS):
            folder = Path(tmp) / f"copy{i}"
            folder.mkdir()
            shutil.copyfile(checkout.native_functions, folder / "native_functions.yaml")
            shutil.copyfile(checkout.tags, folder / "tags.yaml")
            copies.append(folder)
        rows = [
            ("torchgen parse_native_yaml", _median_s(lambda i: torchgen.gen.parse_native_yaml(
                str(copies[i] / "native_functions.yaml"), str(copies[i] / "tags.yaml")))),
            ("metalport load_registry", _median_s(lambda i: load_registry(checkout.native_functions))),
            ("metalport scan_backlog (full)", _median_s(lambda i: scan_backlog(checkout))),
            *_kind_rows(checkout),
        ]
        rows += _real_tree_rows(Path(tmp))
    base = rows[0][1]
    print(f"{'step':32} {'median_s':>9} {'ratio':>7}")
    for name, median in rows:
        print(f"{name:32} {median:9.3f} {median / base:6.2f}x")


def _kind_rows(checkout: object) -> list[tuple[str, float]]:
    """The share of the scan that port kinds take: classifying every op (routes read beforehand:
    the scan needs them anyway) and reading the recipe tables for the porter column."""
    from metalport.checkout.sources import scan_sources
    from metalport.port.tree.kinds import classify, entry_comments
    from metalport.port.spec.recipes import recipe_ops
    from metalport.registry import load_registry

    registry = load_registry(checkout.native_functions)
    sources = scan_sources(checkout)
    stubs = {s.name: s for s in reversed(sources.stubs)}

    routes = [(op, sources.route_op(op, registry)) for op in registry.ops.values()]

    def kinds(_: int) -> None:
        comments = entry_comments(registry)
        for op, route in routes:
            classify(op, route, stubs.get(route.stub) if route else None, comments=comments)

    return [("  of which: kinds of every op", _median_s(kinds)),
            ("  of which: recipe tables", _median_s(lambda i: recipe_ops()))]


def _real_tree_rows(tmp: Path) -> list[tuple[str, float]]:
    """`scan_backlog` on METALPORT_REAL_TREE laid over a wheel workspace: cold (every `.mm`/`.cpp`
    through pcpp) and warm (units memoised); none when the variable is unset."""
    import os

    from metalport.backlog import scan_backlog
    from metalport.checkout import init_workspace
    from metalport.checkout.sources import forget_scans

    tree = os.environ.get("METALPORT_REAL_TREE")
    if not tree:
        print("METALPORT_REAL_TREE unset: no real-tree rows")
        return []
    checkout = init_workspace(tmp / "real")
    shutil.copytree(tree, checkout.root, dirs_exist_ok=True)

    def cold(i: int) -> object:
        forget_scans()
        os.environ["XDG_CACHE_HOME"] = str(tmp / f"cold-cache-{i}")  # nor the units kept by content
        return scan_backlog(checkout)

    return [("scan_backlog real tree (cold)", _median_s(cold)),
            ("scan_backlog real tree (warm)", _median_s(lambda i: scan_backlog(checkout)))]


if __name__ == "__main__":
    main()
