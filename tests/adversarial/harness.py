"""Real faults for the real CLI: read-only mounts, tiny full disks and a user without permission.

`python -m metalport ...` runs in a child process. Each case works on its own copy of a repository,
made to appear at the repository's canonical path by a bind mount in a private mount namespace
(`unshare -Urm`), so a run recorded at the gate (absolute paths in git's worktree files and in the
checkpoints) can be copied for every case. Inside that namespace:

- `Fault("ro", P)`: P bind-mounted onto itself read-only (EROFS);
- `Fault("full", P, size_kb)`: a tmpfs of `size_kb` over P, holding P's files, then filled to the last
  byte unless `fill=False` (ENOSPC); afterwards its files are copied out for inspection;
- `Fault("full-file", P)`: the file P replaced by an empty file on a full tmpfs (ENOSPC);

and without a namespace, `Fault("denied", P)`: the whole copy belongs to `nobody`, P to root, and the
command runs as `nobody` through `setpriv` (EACCES; root ignores file modes, so a chmod would not do).
"""

from __future__ import annotations

import os
import pty
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

WORKTREE_ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


@dataclass(frozen=True)
class Fault:
    """One bad place: `kind` ro | full | full-file | denied, at `path` ({repo}, {cache}, {home}, {tmp} expand)."""

    kind: str
    path: str
    size_kb: int = 64
    fill: bool = True


@dataclass
class Outcome:
    """What a case's command did: exit code, output, and where the tmpfs contents were copied out to."""

    code: int
    stdout: str
    stderr: str
    snapshots: list[Path] = field(default_factory=list)


def namespaces_work() -> bool:
    """Whether this kernel lets an unprivileged user namespace make mounts (`unshare -Urm`)."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-Urm", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def can_drop_to_nobody() -> bool:
    """Whether the tests run as root with `setpriv` (the only way to meet EACCES as root)."""
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def child_env(home: Path, cache: Path | None) -> dict[str, str]:
    """The child's environment: this tree first on the path, its own HOME, no inherited secrets."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_TOKEN", "_API_KEY", "_KEY"))}
    env.update(PYTHONPATH=str(WORKTREE_ROOT), HOME=str(home), PYTHONDONTWRITEBYTECODE="1", COLUMNS="240",
               NO_COLOR="1", TERM="dumb")
    env.pop("METALPORT_CACHE_DIR", None)
    if cache is not None:
        env["METALPORT_CACHE_DIR"] = str(cache)
    return env


def metalport_argv(args: list[str]) -> list[str]:
    """`python -m metalport ARGS` with this interpreter."""
    return [sys.executable, "-m", "metalport", *args]


def _mount_script(canonical: Path, copy: Path, faults: list[tuple[str, Path, Fault]], scratch: Path) -> str:
    """The shell prelude that shows `copy` at `canonical` and sets up each fault."""
    q = shlex.quote
    lines = ["set -e", f"mount --bind {q(str(copy))} {q(str(canonical))}"]
    for index, (kind, path, fault) in enumerate(faults):
        if kind == "ro":
            lines += [f"[ -e {q(str(path))} ] || mkdir -p {q(str(path))}",
                      f"mount --bind {q(str(path))} {q(str(path))}", f"mount -o remount,bind,ro {q(str(path))}"]
        elif kind == "full":
            keep = scratch / f"keep{index}"
            # size_kb < 0: what the folder holds now plus -size_kb free (room for records, not a bundle)
            size = f"$(( $(du -sk {q(str(path))} | cut -f1) + {-fault.size_kb} ))" if fault.size_kb < 0 \
                else str(fault.size_kb)
            lines += [f"mkdir -p {q(str(path))} {q(str(keep))}", f"cp -a {q(str(path))}/. {q(str(keep))}/",
                      f"mount -t tmpfs -o size={size}k tmpfs {q(str(path))}",
                      f"cp -a {q(str(keep))}/. {q(str(path))}/"]
            if fault.fill:
                lines.append(f"head -c 100000000 /dev/zero > {q(str(path))}/.fill 2>/dev/null || true")
        elif kind == "full-file":
            disk = scratch / f"disk{index}"
            lines += [f"mkdir -p {q(str(disk))}", f"mount -t tmpfs -o size=16k tmpfs {q(str(disk))}",
                      f"touch {q(str(path))} {q(str(disk))}/file",
                      f"head -c 100000000 /dev/zero > {q(str(disk))}/.fill 2>/dev/null || true",
                      f"mount --bind {q(str(disk))}/file {q(str(path))}"]
    lines.append("set +e")
    return "\n".join(lines)


def run_case(argv: list[str], *, canonical: Path, copy: Path, faults: list[tuple[str, Path, Fault]],
             env: dict[str, str], cwd: Path, scratch: Path, keystrokes: bytes | None = None,
             prelude: str = "", timeout_s: float = 300) -> Outcome:
    """Run `argv` with `copy` seen at `canonical` and `faults` in place; return what it did.

    A `denied` fault runs the command as `nobody` on `copy` itself (no namespace, so `canonical`
    is `copy` then). `keystrokes` are typed on a terminal once the approval prompt shows; `prelude`
    is shell run in the namespace before the command (it may set HOLDER, a pid killed afterwards with its children).
    """
    q = shlex.quote
    if any(kind == "denied" for kind, _, _ in faults):
        command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *argv]
        return _spawn(command, env=env, cwd=cwd, keystrokes=keystrokes, timeout_s=timeout_s)
    snapshots = []
    post = []
    for index, (kind, path, _) in enumerate(faults):
        if kind == "full":
            out = scratch / f"snapshot{index}"
            snapshots.append(out)
            post.append(f"mkdir -p {q(str(out))} && cp -a {q(str(path))}/. {q(str(out))}/ 2>/dev/null; "
                        f"rm -f {q(str(out))}/.fill")
    # `trap : INT`: a Ctrl-C reaches metalport (a handler, unlike an ignore, is not inherited), not this shell.
    script = "\n".join(["trap : INT", _mount_script(canonical, copy, faults, scratch), prelude,
                        " ".join(q(a) for a in argv), "rc=$?", *post, '[ -n "$HOLDER" ] && { pkill -P "$HOLDER"; kill "$HOLDER"; }', "exit $rc"])
    outcome = _spawn(["unshare", "-Urm", "sh", "-c", script], env=env, cwd=cwd, keystrokes=keystrokes,
                     timeout_s=timeout_s)
    outcome.snapshots = snapshots
    return outcome


def give_to_nobody(copy: Path, denied: list[Path]) -> None:
    """Make `copy` belong to nobody except the `denied` paths (root's, mode 0755: nobody cannot write)."""
    for parent in [copy, *copy.parents]:
        if parent == Path("/"):
            break
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o011)  # traversable (pytest's tmp folders are 0700)
    for path in denied:
        if not path.exists():
            path.mkdir(parents=True)
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(copy)], check=True, timeout=60)
    for path in denied:
        os.chown(path, 0, 0)
        path.chmod(0o755 if path.is_dir() else 0o644)


def _spawn(command: list[str], *, env: dict[str, str], cwd: Path, keystrokes: bytes | None,
           timeout_s: float) -> Outcome:
    if keystrokes is None:
        proc = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
        return Outcome(proc.returncode, proc.stdout, proc.stderr)
    return _spawn_on_terminal(command, env=env, cwd=cwd, keystrokes=keystrokes, timeout_s=timeout_s)



def _as_a_foreground_job() -> None:
    """In the child before exec: SIGINT delivered and handled by default, as an interactive shell
    starts a foreground job (the test runner may hold it ignored or blocked: Note [ignored SIGINT]
    in tests/conftest.py)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _signal_state(pid: int) -> bytes:
    """The Sig* lines of a process still running past its deadline (Linux `/proc`), for the failure."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return b""
    lines = [line for line in status.splitlines() if line.startswith(("State", "Sig", "Shd"))]
    return ("\n[still running past the deadline] " + "; ".join(lines) + "\n").encode()

def _spawn_on_terminal(command: list[str], *, env: dict[str, str], cwd: Path, keystrokes: bytes,
                       timeout_s: float) -> Outcome:
    """Run with a terminal on stdin and stderr; type `keystrokes` at the `decision` prompt (Ctrl-C is
    sent as the terminal would: SIGINT to the process group)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdin=slave, stderr=slave, stdout=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_as_a_foreground_job)
    os.close(slave)
    seen, typed, deadline = b"", False, time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        if not typed and b"decision" in seen:
            if keystrokes == b"\x03":  # Ctrl-C: the terminal sends SIGINT to the foreground process group
                os.killpg(proc.pid, signal.SIGINT)
            else:
                os.write(master, keystrokes)
            typed = True
        if proc.poll() is not None and not ready:
            break
    try:
        # A loaded machine may need seconds to unwind after Ctrl-C; a process still running after
        # the grace is killed with its group, so no test leaves one behind for another to trip on.
        proc.wait(timeout=max(30.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        seen += _signal_state(proc.pid)  # shown by the failing assertion: was SIGINT blocked or ignored?
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    os.close(master)
    with proc.stdout as out:
        stdout = out.read().decode()
    return Outcome(proc.returncode, stdout, seen.decode(errors="replace").replace("\r\n", "\n"))
