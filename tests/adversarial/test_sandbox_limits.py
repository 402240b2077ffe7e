"""Bounded resources of the shader sandbox (Note [the shader sandbox]): processes, its own sized
/dev/shm, a worker flooding stderr, leftovers of a killed run, and seccomp as a requirement."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from metalport.emulate import compile_file
from metalport.sandbox import confine
from metalport.sandbox.confine import SandboxUnavailable, select_sandbox
from metalport.sandbox.leftovers import remove_leftovers, scratch_prefix

REPO = Path(__file__).resolve().parents[2]

HOSTILE = """\
#include <metal_stdlib>
#define CAT(a,b) a##b
CAT(ext,ern) "C" {
  int CAT(fo,rk)(void); void CAT(_ex,it)(int); unsigned CAT(sl,eep)(unsigned);
  long CAT(wr,ite)(int, const void*, unsigned long); int CAT(op,en)(const char*, int, ...);
}
static char chunk[1 << 20];
kernel void bomb(device int* out [[buffer(0)]], uint index [[thread_position_in_grid]]) {
  int made = 0;
  for (int i = 0; i < 1000; ++i) {
    int pid = CAT(fo,rk)();
    if (pid == 0) { CAT(sl,eep)(2); CAT(_ex,it)(0); }
    if (pid > 0) ++made;
  }
  out[0] = made;
}
kernel void fill_shm(device int* out [[buffer(0)]], uint index [[thread_position_in_grid]]) {
  int fd = CAT(op,en)("/dev/shm/metalport-hog", 0101, 0600);  // O_WRONLY | O_CREAT
  long total = 0;
  for (int i = 0; i < 300; ++i) { long n = CAT(wr,ite)(fd, chunk, sizeof chunk); if (n <= 0) break; total += n; }
  out[0] = (int)(total >> 20);
}
kernel void flood(device int* out [[buffer(0)]], uint index [[thread_position_in_grid]]) {
  for (int i = 0; i < (1 << 20); ++i) chunk[i] = 'x';
  long total = 0;
  for (int i = 0; i < 512; ++i) total += CAT(wr,ite)(2, chunk, sizeof chunk);
  out[0] = (int)(total >> 20);
}
"""


@pytest.fixture()
def shader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("METALPORT_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "hostile.metal"
    path.write_text(HOSTILE)
    return path


def test_a_fork_bomb_stops_at_the_process_limit(shader: Path, tmp_path: Path) -> None:
    sandbox = select_sandbox(opt_out=False)
    if "not enforced" in sandbox.describe():
        pytest.skip("root without a pids cgroup: the kernel exempts root from RLIMIT_NPROC")
    with compile_file(shader, cache_dir=tmp_path / "cache", sandbox=sandbox) as lib:
        out = torch.zeros(1, dtype=torch.int32)
        lib.bomb(out, threads=1)
    assert 0 < out.item() < sandbox.limits.processes


def test_dev_shm_is_the_sandboxs_own_sized_tmpfs(shader: Path, tmp_path: Path) -> None:
    sandbox = select_sandbox(opt_out=False)
    with compile_file(shader, cache_dir=tmp_path / "cache", sandbox=sandbox) as lib:
        out = torch.zeros(1, dtype=torch.int32)
        lib.fill_shm(out, threads=1)
    assert 0 < out.item() <= sandbox.limits.shm_mb
    assert not Path("/dev/shm/metalport-hog").exists()


def test_a_worker_flooding_stderr_keeps_metalports_memory_bounded(shader: Path, tmp_path: Path) -> None:
    driver = ("import resource, sys, torch\n"
              "from metalport.emulate import compile_file\n"
              "with compile_file(sys.argv[1]) as lib:\n"
              "    out = torch.zeros(1, dtype=torch.int32)\n"
              "    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "    lib.flood(out, threads=1)\n"
              "    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "print(out.item(), (after - before) // 1024)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", driver, str(shader)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    written_mib, grown_mib = map(int, proc.stdout.split())
    assert written_mib == 512
    assert grown_mib < 64


def test_a_confined_program_flooding_stderr_leaves_a_bounded_tail() -> None:
    sandbox = select_sandbox(opt_out=False)
    proc = sandbox.run(["/bin/sh", "-c", "head -c 268435456 /dev/zero | tr '\\0' x >&2; echo last >&2"],
                       env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0
    assert len(proc.stderr) <= (sandbox.limits.output_kib << 10) + 100
    assert proc.stderr.startswith("[") and proc.stderr.endswith("last\n")


def test_scratch_of_a_killed_run_is_removed_at_the_next_start(shader: Path, tmp_path: Path) -> None:
    driver = ("import sys, time, torch\n"
              "from metalport.emulate import compile_file\n"
              "lib = compile_file(sys.argv[1])\n"
              "lib.fill_shm(torch.zeros(1, dtype=torch.int32), threads=1)\n"
              "print(lib._shared.directory, flush=True)\n"
              "time.sleep(600)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", driver, str(shader)], env=env, stdout=subprocess.PIPE,
                            text=True)
    try:
        left = Path(proc.stdout.readline().strip())  # type: ignore[union-attr]
        assert left.is_dir() and left.name.startswith(f"metalport-{proc.pid}-")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
    time.sleep(0.2)  # the worker dies with its parent (--die-with-parent)
    assert left.is_dir(), "kill -9 skipped the clean-up"
    assert left in remove_leftovers()
    assert not left.exists()


def test_scratch_of_a_live_process_is_kept(tmp_path: Path) -> None:
    mine = tmp_path / f"{scratch_prefix('build')}x"
    mine.mkdir()
    assert mine not in remove_leftovers((tmp_path,)) and mine.is_dir()
    sleeper = subprocess.Popen(["sleep", "30"])
    ours = scratch_prefix().split("-n")[1].rstrip("-")
    try:
        alive = tmp_path / f"metalport-{sleeper.pid}-n{ours}-x"
        alive.mkdir()
        assert remove_leftovers((tmp_path,)) == [] and alive.is_dir()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert remove_leftovers((tmp_path,)) == [alive]


def test_without_seccomp_the_sandbox_refuses_unless_the_user_opts_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confine, "_seccomp_filter", lambda: (None, "no seccomp filter (No module named 'pyseccomp')"))
    monkeypatch.delenv("METALPORT_NO_SECCOMP", raising=False)
    with pytest.raises(SandboxUnavailable) as err:
        select_sandbox(opt_out=False)
    assert str(err.value) == ("no sandbox for building and running shaders: no seccomp filter (No module named "
                              "'pyseccomp'); `pip install pyseccomp` and install libseccomp2, or set "
                              "METALPORT_NO_SECCOMP=1 to confine shaders without the syscall filter")
    monkeypatch.setenv("METALPORT_NO_SECCOMP", "1")
    sandbox = select_sandbox(opt_out=False)
    assert sandbox.confined and sandbox.seccomp_bpf is None


def test_a_dead_processs_pids_cgroup_name_is_recognised(tmp_path: Path) -> None:
    probe = subprocess.Popen(["true"])
    probe.wait()
    left = tmp_path / f"{scratch_prefix('pids').rstrip('-')}".replace(str(os.getpid()), str(probe.pid))
    left.mkdir()
    assert remove_leftovers((tmp_path,)) == [left]


def test_scratch_of_another_pid_namespace_is_kept_until_it_is_old(tmp_path: Path) -> None:
    # Two runs sharing one /tmp from different PID namespaces (containers, CI jobs): the other's
    # live PID looks dead here, so only its age may say it is over.
    probe = subprocess.Popen(["true"])
    probe.wait()
    foreign = tmp_path / f"metalport-build-{probe.pid}-n1-x"
    unnamed = tmp_path / f"metalport-build-{probe.pid}-y"
    old = tmp_path / f"metalport-build-{probe.pid}-n1-z"
    for path in (foreign, unnamed, old):
        path.mkdir()
    three_days_ago = time.time() - 3 * 24 * 3600
    os.utime(old, (three_days_ago, three_days_ago))
    assert remove_leftovers((tmp_path,)) == [old]
    assert foreign.is_dir() and unnamed.is_dir()
