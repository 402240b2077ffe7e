"""`RunStore`: run records, portable worktrees, run files, sweeps and workers in PostgreSQL.

One row per run (its `RunRecord` as JSON, plus the host driving it and its workflow id). A partial
unique index allows one live run (running or awaiting review) per (repository, op), so two
machines can never start the same op at once. Checkpoints go to LangGraph's `PostgresSaver` in
the same database.

Note [run leases]: the right to drive a run is a lease row with a deadline (`fleet: lease_s:`),
not a connection-scoped lock: a stopped machine (a Mac asleep, a partition) keeps its TCP
connection open, so an advisory lock stayed held for ever. A thread tied to the pipeline's thread
renews the lease while that thread lives; a stopped process renews nothing and loses the lease
after `lease_s`, when another machine may take it. Every record and checkpoint write of a leased
run is fenced: a holder that wakes up to find its lease taken gets `LeaseLost` at its next write
and never overwrites the new holder's work.

Note [waiting out outages]: with `wait_s` > 0 (a worker sets METALPORT_DATABASE_WAIT_S) a failed
connection is retried with backoff and one progress line per attempt on stderr, instead of one
error; checkpoints go through a connection pool that replaces connections a restart broke.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metalport.errors import MetalportError, PipelineError
from metalport.run_record import RunRecord, finite_json
from metalport.store.settings import STALL_ENV, FleetSettings, load_settings, repository_name, safe_url

LIVE_STATUSES = ("running", "awaiting-review")
_SCHEMA_LOCK = 7_120_531  # pg_advisory_lock key serialising schema creation across processes
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS metalport_runs (
    run_id text PRIMARY KEY,
    repository text NOT NULL,
    op text NOT NULL,
    status text NOT NULL,
    stage text NOT NULL,
    host text,
    workflow_id text,
    record jsonb NOT NULL,
    created_at text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS metalport_runs_one_live ON metalport_runs (repository, op)
    WHERE status IN ({", ".join(repr(s) for s in LIVE_STATUSES)});
CREATE TABLE IF NOT EXISTS metalport_portable (
    run_id text PRIMARY KEY REFERENCES metalport_runs ON DELETE CASCADE,
    base_commit text NOT NULL,
    branch text NOT NULL,
    diff text NOT NULL,
    host text,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS metalport_run_files (
    run_id text REFERENCES metalport_runs ON DELETE CASCADE,
    name text NOT NULL,
    content text NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE IF NOT EXISTS metalport_sweeps (
    repository text PRIMARY KEY,
    report jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS metalport_leases (
    run_id text PRIMARY KEY,
    holder text NOT NULL,
    host text NOT NULL,
    deadline timestamptz NOT NULL,
    renewed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS metalport_queued (
    run_id text PRIMARY KEY,
    repository text NOT NULL,
    op text NOT NULL,
    workflow_id text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS metalport_workers (
    identity text PRIMARY KEY,
    host text NOT NULL,
    queues text NOT NULL,
    repository text NOT NULL,
    checkout text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    seen_at timestamptz NOT NULL DEFAULT now()
);
"""


@contextmanager
def _schema_lock(cur: Any) -> Iterator[None]:
    """Hold the schema lock for the block, waiting by polling.

    Note [schema lock]: a session blocked in `pg_advisory_lock` sits in an open transaction, and
    LangGraph's migrations run CREATE INDEX CONCURRENTLY, which waits for every open transaction:
    two processes setting up one database at once deadlocked that way. `pg_try_advisory_lock` in a
    loop keeps no transaction open while waiting.
    """
    while not cur.execute("SELECT pg_try_advisory_lock(%s)", (_SCHEMA_LOCK,)).fetchone()[0]:
        time.sleep(0.05)
    try:
        yield
    finally:
        cur.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))


class DatabaseError(MetalportError):
    """The shared database cannot be reached or refused a statement."""


class ConnectionLost(DatabaseError):
    """The connection broke under a statement (the server restarted or went away)."""


def _retrying(method: Any) -> Any:
    """Retry an idempotent store call whose connection broke, for as long as the store waits out outages."""
    import functools

    @functools.wraps(method)
    def call(self: RunStore, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        while True:
            try:
                return method(self, *args, **kwargs)
            except ConnectionLost:
                if time.monotonic() - started >= self.wait_s:
                    raise
                time.sleep(1.0)  # the reconnect then waits with its own backoff and progress line
    return call


def _tls_refused(error: str) -> bool:
    """True when libpq refused the server's certificate or TLS set-up (sslmode=verify-ca/verify-full)."""
    return any(sign in error for sign in ("certificate verify failed", "does not match host name",
                                          "root certificate file", "server does not support SSL",
                                          "could not read root certificate"))


def _tls_line(error: str) -> str:
    """libpq's TLS complaint, without the `connection to server at … failed:` preamble."""
    first = error.strip().splitlines()[0]
    return "TLS: " + first.rsplit(" failed: ", 1)[-1]


class RunBusy(PipelineError):
    """Another process (anywhere) holds the run's lease."""


class LeaseLost(PipelineError):
    """This process no longer holds the run's lease: another machine drives the run now."""


WAIT_ENV = "METALPORT_DATABASE_WAIT_S"
# STALL_ENV (settings): set in a worker (from fleet: stall_s:): its leases renew only while runs progress
_LEASES: dict[str, Lease] = {}  # the leases this process holds, by run id (the fleet's heartbeats read them)


def held_lease(run_id: str) -> Lease | None:
    """The lease this process holds on `run_id`, if any."""
    return _LEASES.get(run_id)


class Lease:
    """One process's lease on one run, renewed by a thread while the pipeline's thread lives."""

    def __init__(self, store: RunStore, run_id: str, holder: str, lease_s: float, stall_s: float = 0.0) -> None:
        self.store, self.run_id, self.holder, self.lease_s = store, run_id, holder, lease_s
        self.stall_s = stall_s  # > 0: renew only while the pipeline reported progress this recently
        self.lost_to: str | None = None  # the holder that took it, once lost
        self.renewed = self.progressed_at = time.monotonic()
        self.owner = threading.current_thread()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"lease-{run_id}", daemon=True)

    def progressed(self) -> None:
        """The pipeline moved on (a node started or finished, a note): keep renewing."""
        self.progressed_at = time.monotonic()

    def start(self) -> None:
        """Start renewing."""
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(max(0.2, self.lease_s / 3)) and self.owner.is_alive():
            if self.lost_to is not None:  # given up (a cancelled attempt): let the deadline lapse
                return
            if self.stall_s and time.monotonic() - self.progressed_at > self.stall_s:
                self.lost_to = f"nobody yet (no progress for {self.stall_s:g}s: a hung step; the lease lapses)"
                print(f"metalport: run {self.run_id} made no progress for {self.stall_s:g}s; giving its lease up",
                      file=sys.stderr, flush=True)
                return
            try:
                with self.store.connect(wait=False) as conn:
                    row = conn.execute("UPDATE metalport_leases SET deadline = now() + make_interval(secs => %s), "
                                       "renewed_at = now() WHERE run_id = %s AND holder = %s RETURNING holder",
                                       (self.lease_s, self.run_id, self.holder)).fetchone()
                    if row is None:
                        taken = conn.execute("SELECT host FROM metalport_leases WHERE run_id = %s",
                                             (self.run_id,)).fetchone()
                        self.lost_to = taken[0] if taken else "nobody (released)"
                        return
                self.renewed = time.monotonic()
            except DatabaseError:
                continue  # an outage: the deadline passes only if nobody renews once it is back

    def check(self, conn: Any | None = None) -> None:
        """Raise LeaseLost unless this process still holds the lease (a fenced write's guard)."""
        if self.lost_to is None:
            def holder(c: Any) -> Any:
                return c.execute("SELECT host, holder FROM metalport_leases WHERE run_id = %s",
                                 (self.run_id,)).fetchone()
            if conn is not None:
                row = holder(conn)
            else:
                with self.store.connect() as own:
                    row = holder(own)
            if row is None or row[1] != self.holder:
                self.lost_to = row[0] if row else "nobody (released)"
        if self.lost_to is not None:
            raise LeaseLost(f"run {self.run_id}: this machine's lease was lost to {self.lost_to}; this process "
                            "stops driving it", hint="nothing to do: the run goes on there")

    def release(self) -> None:
        """Stop renewing and give the lease back (when still ours)."""
        self._stop.set()
        if _LEASES.get(self.run_id) is self:
            del _LEASES[self.run_id]
        try:
            with self.store.connect(wait=False) as conn:
                conn.execute("DELETE FROM metalport_leases WHERE run_id = %s AND holder = %s",
                             (self.run_id, self.holder))
        except DatabaseError:
            pass  # the deadline frees it


def open_store(repo_root: Path | str) -> RunStore | None:
    """The checkout's store when a database URL is configured, else None (the embedded default)."""
    root = Path(repo_root)
    settings = load_settings(root)
    if settings.database_url is None:
        return None
    return RunStore(settings, repository_name(root.resolve(), settings.repository))


class RunStore:
    """The shared run state of one repository (every checkout of it, on every machine)."""

    def __init__(self, settings: FleetSettings, repository: str, wait_s: float | None = None) -> None:
        self.settings, self.repository = settings, repository
        self.wait_s = float(os.environ.get(WAIT_ENV, "0") or 0) if wait_s is None else wait_s
        self._schema_ready = False
        self._lease: Lease | None = None  # held by `hold`: every write of that run is fenced by it
        self.stall_s = float(os.environ.get(STALL_ENV, "0") or 0)  # > 0 (a worker): renew only on progress

    def _open(self, dict_rows: bool, wait: bool) -> Any:
        """A new connection; with `wait` and `wait_s`, retried with backoff through an outage."""
        import psycopg
        from psycopg.rows import dict_row

        waited, delay = 0.0, 0.5
        while True:
            try:
                return psycopg.connect(**self.settings.connect_kwargs(), autocommit=True, prepare_threshold=0,
                                       connect_timeout=10,
                                       row_factory=dict_row if dict_rows else psycopg.rows.tuple_row)
            except psycopg.OperationalError as err:
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                where = safe_url(self.settings.database_url or "")
                if _tls_refused(str(err)):  # a certificate is no passing outage: one line, whatever the wait
                    raise DatabaseError(f"cannot connect to the database {where}: {_tls_line(str(err))}",
                                        hint="sslrootcert in the URL must be the CA that signed the server's "
                                             "certificate, and the certificate must name the URL's host") from None
                if not wait or waited >= self.wait_s:
                    raise DatabaseError(f"cannot connect to the database {where}: {first}",
                                        hint="start PostgreSQL, or check METALPORT_DATABASE_URL") from None
                print(f"metalport: database {where} unreachable ({first[:120]}); retrying in {delay:g}s "
                      f"(waited {waited:.0f}s)", file=sys.stderr, flush=True)
                time.sleep(delay)
                waited += delay
                delay = min(delay * 2, 10.0)

    @contextmanager
    def connect(self, *, dict_rows: bool = False, wait: bool = True) -> Iterator[Any]:
        """An autocommit connection; DatabaseError (URL without password) when it cannot connect."""
        import psycopg

        conn = self._open(dict_rows, wait)
        try:
            if not self._schema_ready:
                self._ensure_schema(conn)
            yield conn
        except psycopg.errors.UniqueViolation:
            raise
        except psycopg.OperationalError as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ConnectionLost(f"the database {safe_url(self.settings.database_url or '')} dropped the connection: "
                                 f"{first}", hint="start PostgreSQL, or check the database's log") from None
        except psycopg.DataError as err:  # a value our code wrote that the database cannot hold: a bug of ours
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise DatabaseError(f"the database {safe_url(self.settings.database_url or '')} refused a value: "
                                f"{first}", hint="this is a metalport bug: report it with this line") from None
        except psycopg.Error as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise DatabaseError(f"the database {safe_url(self.settings.database_url or '')} refused a statement: "
                                f"{first}", hint="run `metalport db migrate`, or check the database's log") from None
        finally:
            conn.close()

    def _ensure_schema(self, conn: Any) -> None:
        """Create our tables unless they are there."""
        from psycopg.rows import tuple_row

        with conn.cursor(row_factory=tuple_row) as cur:
            if cur.execute("SELECT to_regclass('metalport_queued')").fetchone()[0] is None:
                with _schema_lock(cur):
                    for statement in filter(str.strip, _SCHEMA.split(";")):
                        cur.execute(statement)
        self._schema_ready = True

    @contextmanager
    def saver(self) -> Iterator[Any]:
        """LangGraph's `PostgresSaver` (the checkpoints of every run) over a small pool, so a connection
        a database restart broke is replaced; writes of a leased run are fenced by its lease."""
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row, tuple_row
        from psycopg_pool import ConnectionPool

        with self.connect(dict_rows=True) as conn:
            saver = PostgresSaver(conn)
            with conn.cursor(row_factory=tuple_row) as cur:
                done = cur.execute("SELECT to_regclass('checkpoint_migrations')").fetchone()[0] is not None and \
                    cur.execute("SELECT coalesce(max(v), -1) FROM checkpoint_migrations").fetchone()[0] \
                    == len(saver.MIGRATIONS) - 1
                if not done:
                    with _schema_lock(cur):
                        saver.setup()  # LangGraph's own migrations, applied once per database
        kwargs = self.settings.connect_kwargs()
        pool = ConnectionPool(kwargs.pop("conninfo"), min_size=1, max_size=2, open=False,
                              kwargs={**kwargs, "autocommit": True, "prepare_threshold": 0, "connect_timeout": 10,
                                      "row_factory": dict_row},
                              check=ConnectionPool.check_connection, timeout=max(30.0, self.wait_s),
                              reconnect_timeout=max(60.0, self.wait_s * 2))
        try:
            pool.open(wait=True, timeout=max(10.0, self.wait_s))
        except Exception as err:  # psycopg_pool.PoolTimeout: the database went away since `connect`
            pool.close()
            raise DatabaseError(f"cannot connect to the database {safe_url(self.settings.database_url or '')}: "
                                f"{type(err).__name__}", hint="start PostgreSQL, or check METALPORT_DATABASE_URL") \
                from None
        try:
            yield _fenced_saver(PostgresSaver, pool, self)
        finally:
            pool.close()

    # Run records -------------------------------------------------------------------------------

    def claim(self, record: RunRecord, host: str) -> None:
        """Insert a new run; PipelineError naming the holder when the op already has a live run."""
        import psycopg

        with self.connect() as conn:
            try:
                conn.execute("INSERT INTO metalport_runs (run_id, repository, op, status, stage, host, record, "
                             "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                             (record.run_id, self.repository, record.op, record.status, record.stage, host,
                              json.dumps(record.to_dict()), record.created_at))
            except psycopg.errors.UniqueViolation:
                holder = self.live_run(record.op)
                where = f"run {holder.run_id} ({holder.status}, stage {holder.stage})" if holder else "another run"
                raise PipelineError(f"{record.op} already has a live run in the shared database: {where}",
                                    hint="decide or abort that run first (`metalport review` lists it)") from None

    @_retrying
    def put(self, record: RunRecord, host: str | None = None) -> None:
        """Insert or update the record of a run (the host driving it, when given); fenced by the lease held."""
        with self.connect() as conn:
            self.fence(record.run_id, conn)
            conn.execute(
                "INSERT INTO metalport_runs (run_id, repository, op, status, stage, host, record, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET status = "
                "EXCLUDED.status, stage = EXCLUDED.stage, record = EXCLUDED.record, host = COALESCE(EXCLUDED.host, "
                "metalport_runs.host), updated_at = now()",
                (record.run_id, self.repository, record.op, record.status, record.stage, host,
                 json.dumps(record.to_dict()), record.created_at))

    @_retrying
    def get(self, run_id: str) -> RunRecord | None:
        """The record of `run_id` in this repository, or None."""
        with self.connect() as conn:
            row = conn.execute("SELECT record FROM metalport_runs WHERE run_id = %s AND repository = %s",
                               (run_id, self.repository)).fetchone()
        return RunRecord.from_dict(row[0]) if row else None

    @_retrying
    def list(self) -> list[RunRecord]:
        """Every run of this repository, oldest first."""
        with self.connect() as conn:
            rows = conn.execute("SELECT record FROM metalport_runs WHERE repository = %s",
                                (self.repository,)).fetchall()
        records = [RunRecord.from_dict(row[0]) for row in rows]
        return sorted(records, key=lambda r: (r.created_at, r.run_id))

    @_retrying
    def live_run(self, op: str) -> RunRecord | None:
        """The live run of `op` (running or awaiting review), if any."""
        with self.connect() as conn:
            row = conn.execute("SELECT record FROM metalport_runs WHERE repository = %s AND op = %s AND status = "
                               "ANY(%s)", (self.repository, op, list(LIVE_STATUSES))).fetchone()
        return RunRecord.from_dict(row[0]) if row else None

    @_retrying
    def placement(self, run_id: str) -> tuple[str | None, str | None]:
        """(host driving or holding the run, its workflow id)."""
        with self.connect() as conn:
            row = conn.execute("SELECT host, workflow_id FROM metalport_runs WHERE run_id = %s", (run_id,)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    @_retrying
    def set_workflow(self, run_id: str, workflow_id: str) -> None:
        """Remember the Temporal workflow that drives `run_id`."""
        with self.connect() as conn:
            conn.execute("UPDATE metalport_runs SET workflow_id = %s WHERE run_id = %s", (workflow_id, run_id))

    # Portable worktrees and run files ------------------------------------------------------------

    @_retrying
    def put_portable(self, run_id: str, base_commit: str, branch: str, diff: str, host: str) -> None:
        """Record the run's worktree as base commit + diff (what another machine rebuilds it from)."""
        with self.connect() as conn:
            conn.execute("INSERT INTO metalport_portable (run_id, base_commit, branch, diff, host) VALUES "
                         "(%s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET base_commit = EXCLUDED.base_commit, "
                         "branch = EXCLUDED.branch, diff = EXCLUDED.diff, host = EXCLUDED.host, updated_at = now()",
                         (run_id, base_commit, branch, diff, host))

    @_retrying
    def portable(self, run_id: str) -> dict | None:
        """{base_commit, branch, diff, host} of the run's last recorded worktree, or None."""
        with self.connect(dict_rows=True) as conn:
            return conn.execute("SELECT base_commit, branch, diff, host FROM metalport_portable WHERE run_id = %s",
                                (run_id,)).fetchone()

    @_retrying
    def put_file(self, run_id: str, name: str, content: str) -> None:
        """Keep a run file (plan.json, evidence.json) for machines that do not have its run folder."""
        with self.connect() as conn:
            conn.execute("INSERT INTO metalport_run_files (run_id, name, content) VALUES (%s, %s, %s) "
                         "ON CONFLICT (run_id, name) DO UPDATE SET content = EXCLUDED.content", (run_id, name, content))

    @_retrying
    def get_file(self, run_id: str, name: str) -> str | None:
        """A kept run file, or None."""
        with self.connect() as conn:
            row = conn.execute("SELECT content FROM metalport_run_files WHERE run_id = %s AND name = %s",
                               (run_id, name)).fetchone()
        return row[0] if row else None

    @_retrying
    def drop_files(self, run_id: str, prefix: str) -> None:
        """Forget the run's kept files whose name starts with `prefix`."""
        with self.connect() as conn:
            conn.execute("DELETE FROM metalport_run_files WHERE run_id = %s AND starts_with(name, %s)",
                         (run_id, prefix))

    @_retrying
    def files(self, run_id: str, prefix: str = "") -> list[tuple[str, int]]:
        """(name, characters) of the run's kept files whose name starts with `prefix`."""
        with self.connect() as conn:
            rows = conn.execute("SELECT name, length(content) FROM metalport_run_files WHERE run_id = %s AND "
                                "starts_with(name, %s) ORDER BY name", (run_id, prefix)).fetchall()
        return [(name, int(size)) for name, size in rows]

    # Run leases (Note [run leases]) --------------------------------------------------------------

    def fence(self, run_id: str, conn: Any | None = None) -> None:
        """Raise LeaseLost when this store holds `run_id`'s lease no more (before any write of the run)."""
        if self._lease is not None and self._lease.run_id == run_id:
            self._lease.check(conn)

    @contextmanager
    def hold(self, run_id: str) -> Iterator[Lease]:
        """Hold the run's lease for the block; PipelineError naming the holder while another holds it."""
        lease_s = self.settings.lease_s
        holder = f"{self.settings.host_name()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        with self.connect() as conn:
            row = conn.execute(
                "INSERT INTO metalport_leases (run_id, holder, host, deadline) VALUES (%s, %s, %s, now() + "
                "make_interval(secs => %s)) ON CONFLICT (run_id) DO UPDATE SET holder = EXCLUDED.holder, host = "
                "EXCLUDED.host, deadline = EXCLUDED.deadline, renewed_at = now() WHERE metalport_leases.deadline < "
                "now() RETURNING holder", (run_id, holder, self.settings.host_name(), lease_s)).fetchone()
        if row is None:
            held = self.lease(run_id)
            where = f"on {held['host']}, lease for {held['left_s']:.0f}s more" if held else "on another host"
            raise RunBusy(f"run {run_id} is being driven by another process ({where})",
                                hint="wait for it to finish, or stop that process first")
        lease = Lease(self, run_id, holder, lease_s, self.stall_s)
        self._lease = lease
        _LEASES[run_id] = lease
        lease.start()
        try:
            yield lease
        finally:
            self._lease = None
            lease.release()

    @_retrying
    def lease(self, run_id: str) -> dict | None:
        """{host, holder, left_s} of the run's unexpired lease, or None when nobody holds it."""
        with self.connect(dict_rows=True) as conn:
            return conn.execute("SELECT host, holder, extract(epoch FROM deadline - now())::float AS left_s FROM "
                                "metalport_leases WHERE run_id = %s AND deadline > now()", (run_id,)).fetchone()

    def is_live(self, run_id: str) -> bool:
        """True while some process on some machine holds the run's lease."""
        return self.lease(run_id) is not None

    # Queued runs: workflows started whose worker has not claimed the run yet ------------------------

    @contextmanager
    def sweep_lock(self) -> Iterator[None]:
        """Serialise the sweeps of this repository (count open runs, then start: `--max-open` holds)."""
        key = f"metalport-sweep:{self.repository}"
        with self.connect() as conn:
            while not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:
                time.sleep(0.1)
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    @_retrying
    def queue_run(self, run_id: str, op: str, workflow_id: str) -> None:
        """Count `run_id` as open from its workflow's start until its worker claims it."""
        with self.connect() as conn:
            conn.execute("INSERT INTO metalport_queued (run_id, repository, op, workflow_id) VALUES (%s, %s, %s, %s) "
                         "ON CONFLICT (run_id) DO NOTHING", (run_id, self.repository, op, workflow_id))

    @_retrying
    def unqueue_run(self, run_id: str) -> None:
        """Forget a queued run (its workflow was refused, or it ended before claiming the run)."""
        with self.connect() as conn:
            conn.execute("DELETE FROM metalport_queued WHERE run_id = %s", (run_id,))

    @_retrying
    def open_count(self) -> int:
        """Runs open on the fleet: live runs plus queued ones not claimed yet (queued within a day)."""
        with self.connect() as conn:
            return int(conn.execute(
                "SELECT (SELECT count(*) FROM metalport_runs WHERE repository = %s AND status = ANY(%s)) + "
                "(SELECT count(*) FROM metalport_queued q WHERE q.repository = %s AND q.created_at > now() - "
                "interval '1 day' AND NOT EXISTS (SELECT 1 FROM metalport_runs r WHERE r.run_id = q.run_id))",
                (self.repository, list(LIVE_STATUSES), self.repository)).fetchone()[0])

    # Sweeps and workers ----------------------------------------------------------------------------

    @_retrying
    def put_report(self, report: dict) -> None:
        """Keep the latest sweep report of the repository (the dashboard's data)."""
        with self.connect() as conn:
            conn.execute("INSERT INTO metalport_sweeps (repository, report) VALUES (%s, %s) ON CONFLICT "
                         "(repository) DO UPDATE SET report = EXCLUDED.report, updated_at = now()",
                         (self.repository, json.dumps(finite_json(report))))

    @_retrying
    def report(self) -> dict | None:
        """The latest sweep report of the repository, or None."""
        with self.connect() as conn:
            row = conn.execute("SELECT report FROM metalport_sweeps WHERE repository = %s",
                               (self.repository,)).fetchone()
        return row[0] if row else None

    @_retrying
    def worker_seen(self, identity: str, host: str, queues: list[str], checkout: Path) -> None:
        """Record (or refresh) a running worker."""
        with self.connect() as conn:
            conn.execute("INSERT INTO metalport_workers (identity, host, queues, repository, checkout) VALUES "
                         "(%s, %s, %s, %s, %s) ON CONFLICT (identity) DO UPDATE SET seen_at = now()",
                         (identity, host, ",".join(queues), self.repository, str(checkout)))

    @_retrying
    def workers(self) -> list[dict]:
        """The workers of this repository that reported, newest first, with seconds since last seen."""
        with self.connect(dict_rows=True) as conn:
            return conn.execute("SELECT identity, host, queues, checkout, extract(epoch FROM now() - seen_at) AS "
                                "silent_s FROM metalport_workers WHERE repository = %s ORDER BY seen_at DESC",
                                (self.repository,)).fetchall()


def _fenced_saver(base: type, pool: Any, store: RunStore) -> Any:
    """A `PostgresSaver` on `pool` whose writes first check `store`'s lease (Note [run leases])."""

    import psycopg

    def waited(write: Any, config: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        while True:
            store.fence(config["configurable"]["thread_id"])
            try:
                return write(config, *args, **kwargs)  # an upsert by checkpoint id: safe to repeat
            except psycopg.OperationalError:
                if time.monotonic() - started >= store.wait_s:
                    raise
                time.sleep(1.0)

    class FencedSaver(base):  # type: ignore[misc, valid-type]
        def put(self, config: Any, *args: Any, **kwargs: Any) -> Any:
            return waited(super().put, config, *args, **kwargs)

        def put_writes(self, config: Any, *args: Any, **kwargs: Any) -> Any:
            return waited(super().put_writes, config, *args, **kwargs)

    return FencedSaver(pool)
