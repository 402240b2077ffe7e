"""The threadgroup executor (shim/metal_threadgroup.h) on its own: a C++ driver, rewritten by
rewrite_threadgroup_locals and compiled here, against expectations computed in Python."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from metalport.emulate.threadgroup import rewrite_threadgroup_locals

HERE = Path(__file__).resolve().parent
SHIM = HERE.parents[1] / "metalport" / "emulate" / "shim"
DRIVER = HERE / "test_threadgroup_driver.cpp"


def _compilers() -> list[tuple[str, list[str]]]:
    """g++ -O2 with the assembly fiber switch; zig's clang -O1 with the ucontext one."""
    found = []
    if shutil.which("g++"):
        found.append(("g++", ["g++", "-O2"]))
    zig = subprocess.run([sys.executable, "-m", "ziglang", "version"], capture_output=True)
    if zig.returncode == 0:
        found.append(("zig-ucontext", [sys.executable, "-m", "ziglang", "c++", "-O1",
                                       "-DMSHIM_TG_UCONTEXT"]))
    return found


@pytest.fixture(scope="module", params=_compilers(), ids=lambda c: c[0])
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    name, argv = request.param
    out = tmp_path_factory.mktemp(f"tg-{name}")
    src = out / "driver.cpp"
    src.write_text(rewrite_threadgroup_locals(DRIVER.read_text()))
    exe = out / "driver"
    cmd = [*argv, "-std=c++17", "-Wall", "-Werror", f"-I{SHIM}", str(src), "-o", str(exe),
           "-pthread"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return exe


def run(exe: Path, case: str, threads: tuple[int, int, int], group: tuple[int, int, int],
        workers: int = 2) -> tuple[dict[int, list[float] | None], list[int]]:
    """Run one driver case: per-gid rows (None when the thread wrote nothing) and the report."""
    argv = [str(exe), case, *map(str, threads), *map(str, group), str(workers)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows: dict[int, list[float] | None] = {}
    report: list[int] = []
    for line in done.stdout.splitlines():
        head, *rest = line.split()
        if head == "report":
            report = [int(x) for x in rest]
        else:
            rows[int(head)] = None if rest == ["-"] else [float(x) for x in rest]
    return rows, report


def value(gid: int) -> int:
    return (gid * 7 + 3) % 23 - 11


def returns_early(gid: int) -> bool:
    return gid % 7 == 3


def u32(x: int) -> int:
    return x & 0xFFFFFFFF


def expected_lane(lane: int, act: dict[int, int]) -> list[float]:
    """What Metal gives lane `lane` of a simdgroup whose active lanes map to gids in `act`."""
    vals = {k: value(g) for k, g in act.items()}
    ps = {k: 2 if g % 11 == 0 else (-1 if g % 3 == 0 else 1) for k, g in act.items()}
    us = {k: u32(g * 2654435761) >> 7 for k, g in act.items()}
    v = vals[lane]

    def val(k: int) -> int:  # reading an inactive lane gives 0
        return vals.get(k, 0)

    def fill(k: int) -> int:
        return -1000 - k if k in act else 0

    def prod(xs: list[int]) -> int:
        out = 1
        for x in xs:
            out *= x
        return out

    def fill_up(d: int, mod: int) -> int:
        base, j = lane // mod * mod, lane % mod - d
        return val(base + j) if j >= 0 else fill(base + j + mod)

    def fill_down(d: int, mod: int) -> int:
        base, j = lane // mod * mod, lane % mod + d
        return val(base + j) if j < mod else fill(base + j - mod)

    order = sorted(vals)
    below = [k for k in order if k < lane]
    quad = [k for k in order if k // 4 == lane // 4]
    qbase = lane // 4 * 4
    ballot = sum(1 << k for k in order if vals[k] > 0)
    mask = sum(1 << k for k in order)
    floats = [vals[k] * 0.5 for k in order if k != 4]
    and_, or_, xor_ = 0xFFFFFFFF, 0, 0
    for k in order:
        and_, or_, xor_ = and_ & us[k], or_ | us[k], xor_ ^ us[k]
    return [float(x) for x in [
        sum(vals.values()), prod(list(ps.values())), max(vals.values()), min(vals.values()),
        and_, or_, xor_, val(5), vals[order[0]], val((lane * 7 + 3) % 32),
        v if lane < 3 else val(lane - 3), v if lane + 3 >= 32 else val(lane + 3), val(lane ^ 5),
        val((lane - 3) % 32), val((lane + 3) % 32),
        fill_up(3, 32), fill_down(3, 32), fill_down(3, 8), fill_up(2, 4),
        sum(vals[k] for k in below) + v, sum(vals[k] for k in below),
        prod([ps[k] for k in below]) * ps[lane], prod([ps[k] for k in below]),
        any(x > 8 for x in vals.values()), all(x != 0 for x in vals.values()),
        ballot, ballot == mask, lane == order[0], mask,
        sum(vals[k] for k in quad), max(vals[k] for k in quad), val(qbase + 2), val(qbase + 1),
        val(qbase + ((lane % 4) ^ 1)), sum(vals[k] for k in quad if k < lane),
        any(vals[k] > 5 for k in quad), v if lane % 4 == 3 else val(lane + 1),
        sum(vals.values()) * 0.5, max(floats) if floats else float("nan"),
        min(floats) if floats else float("nan"),
        sum(vals.values()), v if lane == 31 else val(lane + 1),
    ]]


@pytest.mark.parametrize("n, group, workers", [(70, 64, 2), (100, 40, 3), (33, 1024, 1),
                                               (256, 128, 2)])
def test_every_collective_matches_metal_semantics(driver: Path, n: int, group: int,
                                                  workers: int) -> None:
    rows, report = run(driver, "collectives", (n, 1, 1), (group, 1, 1), workers)
    for g0 in range(0, n, group):
        size = min(group, n - g0)
        for s0 in range(0, size, 32):
            act = {t - s0: g0 + t for t in range(s0, min(s0 + 32, size))
                   if not returns_early(g0 + t)}
            for lane, gid in act.items():
                got = rows[gid]
                assert got is not None
                want = expected_lane(lane, act)
                assert got[:len(want)] == pytest.approx(want, nan_ok=True), (gid, lane)
    assert all(rows[g] is None for g in range(n) if returns_early(g))
    assert report[:2] == [-(-n // group), n]


def _group_boxes(threads: tuple[int, int, int], group: tuple[int, int, int]):
    """Each threadgroup's threads as grid coordinates, in thread_index_in_threadgroup order."""
    counts = [-(-t // g) for t, g in zip(threads, group)]
    for gz in range(counts[2]):
        for gy in range(counts[1]):
            for gx in range(counts[0]):
                pos = (gx, gy, gz)
                dims = [min(g, t - p * g) for t, g, p in zip(threads, group, pos)]
                members = [(pos[0] * group[0] + x, pos[1] * group[1] + y, pos[2] * group[2] + z)
                           for z in range(dims[2]) for y in range(dims[1]) for x in range(dims[0])]
                yield pos, dims, counts, members


def _gid(p: tuple[int, int, int], threads: tuple[int, int, int]) -> int:
    return p[0] + threads[0] * (p[1] + threads[1] * p[2])


@pytest.mark.parametrize("threads, group", [((100, 1, 1), (48, 1, 1)), ((10, 7, 3), (4, 3, 2)),
                                            ((1024, 1, 1), (1024, 1, 1)), ((5, 1, 1), (8, 1, 1))])
def test_barriers_share_threadgroup_memory(driver: Path, threads: tuple[int, int, int],
                                           group: tuple[int, int, int]) -> None:
    rows, report = run(driver, "barrier_sum", threads, group)
    for _, _, _, members in _group_boxes(threads, group):
        gids = [_gid(m, threads) for m in members]
        total = sum(value(g) for g in gids)
        for i, g in enumerate(gids):
            assert rows[g][:2] == [total, gids[(i + 1) % len(gids)]]
    assert report[4] == 0  # no barrier with returned threads


def test_thread_ids_of_partial_3d_groups(driver: Path) -> None:
    threads, group = (10, 7, 3), (4, 3, 2)
    rows, _ = run(driver, "thread_ids", threads, group, workers=3)
    for pos, dims, counts, members in _group_boxes(threads, group):
        for i, m in enumerate(members):
            local = [m[d] - pos[d] * group[d] for d in range(3)]
            want = [*local, *pos, *dims, *counts, *group,
                    i, i % 32, i // 32, -(-len(members) // 32), 32, i % 4, i // 4]
            assert rows[_gid(m, threads)][:len(want)] == want


def test_returned_threads_do_not_block_a_barrier(driver: Path) -> None:
    n, group = 50, 16
    rows, report = run(driver, "early_return", (n, 1, 1), (group, 1, 1))
    for gid in range(n):
        tid, size = gid % group, min(group, n - gid // group * group)
        if tid % 2:
            assert rows[gid] is None
        else:
            assert rows[gid][0] == ((gid + 1) * 10 if tid + 1 < size else -1)
    groups = -(-n // group)
    assert report[2] == 2 * groups and report[4] == 2 * groups


def test_divergent_collectives_resolve_separately(driver: Path) -> None:
    rows, report = run(driver, "divergent", (64, 1, 1), (64, 1, 1))
    for gid in range(64):
        lanes = range(gid // 32 * 32, gid // 32 * 32 + 32)
        low, high = [value(g) for g in lanes if g % 32 < 16], [value(g) for g in lanes if g % 32 >= 16]
        assert rows[gid][0] == (sum(low) if gid % 32 < 16 else max(high))
    assert report[5] == 2


def test_threadgroup_memory_is_poisoned_per_group(driver: Path) -> None:
    rows, _ = run(driver, "poison", (8, 1, 1), (2, 1, 1), workers=1)
    assert [rows[g][0] for g in range(0, 8, 2)] == [0xFFFFFFFF] * 4


def test_misuse_aborts_with_a_message(driver: Path) -> None:
    done = subprocess.run([str(driver), "outside", "1", "1", "1", "1", "1", "1", "1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGABRT
    assert "simd_sum called outside the threadgroup executor" in done.stderr
    done = subprocess.run([str(driver), "barrier_sum", "2048", "1", "1", "2048", "1", "1", "1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGABRT
    assert "threadgroup larger than Metal's 1024 threads" in done.stderr


def test_a_missing_barrier_reads_unwritten_memory_in_some_group(driver: Path) -> None:
    rows, _ = run(driver, "missing_barrier", (128, 1, 1), (64, 1, 1), workers=1)
    first = [rows[g][0] for g in range(0, 63)]   # group 0: threads run first to last
    second = [rows[g][0] for g in range(64, 127)]  # group 1: last to first
    assert first == [0xFFFFFFFF] * 63  # the neighbour had not written yet: poison
    assert second == list(range(65, 128))
