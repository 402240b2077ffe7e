"""Where the shared state lives: the database URL, the repository's fleet-wide name, this host.

Read from the environment first, then from `metalport.yaml`:

    database:
      url: postgresql://metalport@127.0.0.1:5432/metalport   # no password here
      password_file: ~/.config/metalport/pg-password          # optional; or PGPASSWORD / ~/.pgpass
      repository: pytorch                                     # optional; default: the root commit
    fleet:
      temporal: 127.0.0.1:7233                                # Temporal frontend (loopback by default)
      namespace: default
      host: mac-studio-1                                      # optional; default: the host name
      lease_s: 60                                             # a run's lease: a silent holder loses it after this
      stall_s: 14400                                          # a worker gives a run up after this long without progress
      tls_ca: ~/.config/metalport/temporal-ca.pem             # optional: TLS to Temporal (server CA)
      tls_cert: ~/.config/metalport/worker.pem                # optional: mutual TLS (client cert and key)
      tls_key: ~/.config/metalport/worker.key
      tls_server_name: temporal.internal                      # optional: the name the server's certificate must
                                                              # carry, when it differs from the address's host
      artifacts_remote: artifacts                             # optional: a private git remote (name or URL) for
                                                              # run artifacts (Note [artifact refs]); else PostgreSQL

Environment: METALPORT_DATABASE_URL, METALPORT_DATABASE_PASSWORD_FILE, METALPORT_REPOSITORY,
METALPORT_TEMPORAL_ADDRESS, METALPORT_TEMPORAL_NAMESPACE, METALPORT_HOST, METALPORT_LEASE_S,
METALPORT_TEMPORAL_TLS_CA/_CERT/_KEY/_SERVER_NAME, METALPORT_ARTIFACTS_REMOTE. TLS to PostgreSQL
is libpq's own: `?sslmode=verify-full&sslrootcert=…`
(and `sslcert`/`sslkey`) in the URL. A password written in
`metalport.yaml` is refused (the file lives in the repository); passwords come from the
environment or a secret file only and are never printed (`safe_url`).
"""

from __future__ import annotations

import functools
import os
import re
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import yaml

from metalport.errors import UsageError

DATABASE_ENV = "METALPORT_DATABASE_URL"
PASSWORD_FILE_ENV = "METALPORT_DATABASE_PASSWORD_FILE"
REPOSITORY_ENV = "METALPORT_REPOSITORY"
TEMPORAL_ENV = "METALPORT_TEMPORAL_ADDRESS"
NAMESPACE_ENV = "METALPORT_TEMPORAL_NAMESPACE"
HOST_ENV = "METALPORT_HOST"
LEASE_ENV = "METALPORT_LEASE_S"
STALL_ENV = "METALPORT_STALL_S"
TLS_ENV = "METALPORT_TEMPORAL_TLS_"  # + CA, CERT, KEY
ARTIFACTS_ENV = "METALPORT_ARTIFACTS_REMOTE"
_DATABASE_KEYS = ("url", "password_file", "repository")
_FLEET_KEYS = ("temporal", "namespace", "host", "publish_wait_s", "heartbeat_s", "lease_s", "stall_s", "tls_ca",
               "tls_cert", "tls_key", "tls_server_name", "artifacts_remote")


@dataclass(frozen=True)
class FleetSettings:
    """The shared-state settings of one checkout; `database_url` None means the embedded default."""

    database_url: str | None = None  # libpq URL without password
    password_file: Path | None = None  # the database password, one line (never in the repository)
    repository: str | None = None  # the fleet-wide name of the repository (None: its root commit)
    temporal: str | None = None  # host:port of the Temporal frontend; None: no fleet
    namespace: str = "default"
    host: str | None = None  # this machine's name for `host.<name>` queues (None: socket.gethostname())
    publish_wait_s: float = 60.0  # how long publish waits for the run's own host before another takes it
    heartbeat_s: float = 30.0  # a worker silent this long has died: its activity moves to another worker
    lease_s: float = 60.0  # a run's lease: a holder that renews nothing for this long loses the run
    stall_s: float = 14400.0  # a fleet worker stops renewing a run whose pipeline reported nothing this long
    tls_ca: Path | None = None  # Temporal's server CA (PEM): TLS to Temporal
    tls_cert: Path | None = None  # client certificate and key (PEM): mutual TLS
    tls_key: Path | None = None
    tls_server_name: str | None = None  # the name to verify the server's certificate against (else the address's)
    artifacts_remote: str | None = None  # a git remote (name or URL) for run artifacts; None: PostgreSQL

    def temporal_tls(self) -> object:
        """`temporalio.service.TLSConfig` from the TLS paths, or False (plain TCP, loopback or a tunnel)."""
        if not (self.tls_ca or self.tls_cert or self.tls_server_name):
            return False
        from temporalio.service import TLSConfig

        def read(path: Path | None) -> bytes | None:
            if path is None:
                return None
            try:
                return path.expanduser().read_bytes()
            except OSError as err:
                raise UsageError(f"cannot read a Temporal TLS file: {err.strerror}", location=str(path),
                                 hint="fix fleet.tls_ca / tls_cert / tls_key (or METALPORT_TEMPORAL_TLS_*)") from None
        if bool(self.tls_cert) != bool(self.tls_key):
            raise UsageError("fleet.tls_cert and fleet.tls_key go together", hint="set both, or neither")
        return TLSConfig(server_root_ca_cert=read(self.tls_ca), client_cert=read(self.tls_cert),
                         client_private_key=read(self.tls_key), domain=self.tls_server_name)

    def connect_kwargs(self) -> dict:
        """Keyword arguments for `psycopg.connect`: the URL, and the password from its file if any."""
        if self.database_url is None:
            raise UsageError("no database configured", hint=f"set {DATABASE_ENV} or `database: url:` in metalport.yaml")
        kwargs: dict = {"conninfo": self.database_url}
        if self.password_file is not None:
            try:
                kwargs["password"] = self.password_file.expanduser().read_text(encoding="utf-8").strip()
            except OSError as err:
                raise UsageError(f"cannot read the database password file: {err.strerror}",
                                 location=str(self.password_file), hint="create it (mode 600) or unset it") from None
        return kwargs

    def host_name(self) -> str:
        """This machine's fleet name."""
        return self.host or socket.gethostname()


def load_settings(repo_root: Path, environ: Mapping[str, str] | None = None) -> FleetSettings:
    """The settings of the checkout at `repo_root`: environment over `metalport.yaml` `database:`/`fleet:`."""
    env = os.environ if environ is None else environ
    database, fleet = _sections(repo_root / "metalport.yaml")
    url = env.get(DATABASE_ENV) or database.get("url")
    if database.get("url") and _has_password(str(database["url"])) and not env.get(DATABASE_ENV):
        raise UsageError("database.url in metalport.yaml carries a password", location=str(repo_root / "metalport.yaml"),
                         hint=f"remove it; put it in {PASSWORD_FILE_ENV}'s file, database.password_file, "
                              "PGPASSWORD or ~/.pgpass")
    password_file = env.get(PASSWORD_FILE_ENV) or database.get("password_file")
    if url:
        _check_database_url(str(url), DATABASE_ENV if env.get(DATABASE_ENV) else "database.url in metalport.yaml")
    temporal = env.get(TEMPORAL_ENV) or fleet.get("temporal")
    if temporal:
        _check_temporal_address(str(temporal), TEMPORAL_ENV if env.get(TEMPORAL_ENV)
                                else "fleet.temporal in metalport.yaml")
    return FleetSettings(
        database_url=str(url) if url else None,
        password_file=Path(str(password_file)) if password_file else None,
        repository=env.get(REPOSITORY_ENV) or database.get("repository"),
        temporal=str(temporal) if temporal else None,
        namespace=env.get(NAMESPACE_ENV) or fleet.get("namespace") or "default",
        host=env.get(HOST_ENV) or fleet.get("host"),
        publish_wait_s=float(fleet.get("publish_wait_s", 60.0)),
        heartbeat_s=float(fleet.get("heartbeat_s", 30.0)),
        lease_s=float(env.get(LEASE_ENV) or fleet.get("lease_s", 60.0)),
        stall_s=float(env.get(STALL_ENV) or fleet.get("stall_s", 14400.0)),
        tls_server_name=env.get(TLS_ENV + "SERVER_NAME") or fleet.get("tls_server_name") or None,
        artifacts_remote=env.get(ARTIFACTS_ENV) or fleet.get("artifacts_remote") or None,
        **{f"tls_{k}": Path(str(v)) if (v := env.get(TLS_ENV + k.upper()) or fleet.get(f"tls_{k}")) else None
           for k in ("ca", "cert", "key")})


def _check_database_url(url: str, where: str) -> None:
    """UsageError (one line, the URL itself never shown: it may hold a password) unless libpq can parse `url`."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(url)
    except ProgrammingError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        why = re.sub(r'"([^"]*)"', lambda m: '"…"' if len(m.group(1)) > 1 and m.group(1) in url else m.group(0), first)
        raise UsageError(f"{where} is not a PostgreSQL URL ({why})",
                         hint="write it as postgresql://USER@HOST:PORT/DATABASE") from None


_HOST_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})")


def _check_temporal_address(address: str, where: str) -> None:
    """UsageError unless `address` is HOST:PORT with a port in 1..65535 (what the Temporal client dials)."""
    match = _HOST_PORT.fullmatch(address)
    if match is None or not 0 < int(match.group(1)) < 65536:
        raise UsageError(f"{where} {address!r} is not HOST:PORT",
                         hint="write it as HOST:PORT, e.g. 127.0.0.1:7233 (no scheme, a port from 1 to 65535)")


def safe_url(url: str) -> str:
    """`url` with any password replaced by `***`, fit for messages and records."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


@functools.lru_cache(maxsize=64)
def repository_name(repo_root: Path, configured: str | None) -> str:
    """The fleet-wide name of the repository: `configured`, else its root commit (the same in every clone)."""
    if configured:
        return configured
    out = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=repo_root, capture_output=True,
                         text=True, check=False)
    roots = out.stdout.split()
    if out.returncode != 0 or not roots:
        raise UsageError(f"{repo_root}: cannot name the repository (no commit)",
                         hint="set database.repository in metalport.yaml")
    return f"git:{sorted(roots)[0][:16]}"


def _has_password(url: str) -> bool:
    try:
        return urlsplit(url).password is not None or "password=" in url
    except ValueError:
        return False


def _sections(path: Path) -> tuple[dict, dict]:
    """The raw `database:` and `fleet:` mappings of `path` (empty when absent); unknown keys refused."""
    if not path.is_file():
        return {}, {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return {}, {}  # the agent config loader reports the syntax error with its line
    found = []
    for name, known in (("database", _DATABASE_KEYS), ("fleet", _FLEET_KEYS)):
        section = data.get(name) or {} if isinstance(data, dict) else {}
        if not isinstance(section, dict):
            raise UsageError(f"{name} must be a mapping", location=str(path), hint="use `key: value` lines")
        unknown = sorted(set(section) - set(known))
        if unknown:
            raise UsageError(f"unknown key(s) {unknown} under {name}:", location=str(path),
                             hint=f"known keys: {', '.join(known)}")
        found.append(section)
    return found[0], found[1]
