"""`RunStore`: run records, portable worktrees, run files, sweeps and workers in PostgreSQL.

One row per run (its `RunRecord` as JSON, plus the host driving it and its workflow id). A partial
unique index allows one live run (running or awaiting review) per (repository, op), so two
machines can never start the same op at once. The run lock is a session advisory lock: the
database drops it when the holder's connection dies (a killed worker), like `flock` on one host.
Checkpoints go to LangGraph's `PostgresSaver` in the same database.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metalport.errors import MetalportError, PipelineError
from metalport.graph.records import RunRecord
from metalport.store.settings import FleetSettings, load_settings, repository_name, safe_url

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


def open_store(repo_root: Path | str) -> RunStore | None:
    """The checkout's store when a database URL is configured, else None (the embedded default)."""
    root = Path(repo_root)
    settings = load_settings(root)
    if settings.database_url is None:
        return None
    return RunStore(settings, repository_name(root.resolve(), settings.repository))


class RunStore:
    """The shared run state of one repository (every checkout of it, on every machine)."""

    def __init__(self, settings: FleetSettings, repository: str) -> None:
        self.settings, self.repository = settings, repository
        self._schema_ready = False

    @contextmanager
    def connect(self, *, dict_rows: bool = False) -> Iterator[Any]:
        """An autocommit connection; DatabaseError (URL without password) when it cannot connect."""
        import psycopg
        from psycopg.rows import dict_row

        try:
            conn = psycopg.connect(**self.settings.connect_kwargs(), autocommit=True, prepare_threshold=0,
                                   connect_timeout=10, row_factory=dict_row if dict_rows else psycopg.rows.tuple_row)
        except psycopg.OperationalError as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise DatabaseError(f"cannot connect to the database {safe_url(self.settings.database_url or '')}: "
                                f"{first}", hint="start PostgreSQL, or check METALPORT_DATABASE_URL") from None
        try:
            if not self._schema_ready:
                self._ensure_schema(conn)
            yield conn
        except psycopg.errors.UniqueViolation:
            raise
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
            if cur.execute("SELECT to_regclass('metalport_workers')").fetchone()[0] is None:
                with _schema_lock(cur):
                    for statement in filter(str.strip, _SCHEMA.split(";")):
                        cur.execute(statement)
        self._schema_ready = True

    @contextmanager
    def saver(self) -> Iterator[Any]:
        """LangGraph's `PostgresSaver` on its own connection (the checkpoints of every run)."""
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import tuple_row

        with self.connect(dict_rows=True) as conn:
            saver = PostgresSaver(conn)
            with conn.cursor(row_factory=tuple_row) as cur:
                done = cur.execute("SELECT to_regclass('checkpoint_migrations')").fetchone()[0] is not None and \
                    cur.execute("SELECT coalesce(max(v), -1) FROM checkpoint_migrations").fetchone()[0] \
                    == len(saver.MIGRATIONS) - 1
                if not done:
                    with _schema_lock(cur):
                        saver.setup()  # LangGraph's own migrations, applied once per database
            yield saver

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

    def put(self, record: RunRecord, host: str | None = None) -> None:
        """Insert or update the record of a run (the host driving it, when given)."""
        with self.connect() as conn:
            conn.execute(
                "INSERT INTO metalport_runs (run_id, repository, op, status, stage, host, record, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET status = "
                "EXCLUDED.status, stage = EXCLUDED.stage, record = EXCLUDED.record, host = COALESCE(EXCLUDED.host, "
                "metalport_runs.host), updated_at = now()",
                (record.run_id, self.repository, record.op, record.status, record.stage, host,
                 json.dumps(record.to_dict()), record.created_at))

    def get(self, run_id: str) -> RunRecord | None:
        """The record of `run_id` in this repository, or None."""
        with self.connect() as conn:
            row = conn.execute("SELECT record FROM metalport_runs WHERE run_id = %s AND repository = %s",
                               (run_id, self.repository)).fetchone()
        return RunRecord.from_dict(row[0]) if row else None

    def list(self) -> list[RunRecord]:
        """Every run of this repository, oldest first."""
        with self.connect() as conn:
            rows = conn.execute("SELECT record FROM metalport_runs WHERE repository = %s",
                                (self.repository,)).fetchall()
        records = [RunRecord.from_dict(row[0]) for row in rows]
        return sorted(records, key=lambda r: (r.created_at, r.run_id))

    def live_run(self, op: str) -> RunRecord | None:
        """The live run of `op` (running or awaiting review), if any."""
        with self.connect() as conn:
            row = conn.execute("SELECT record FROM metalport_runs WHERE repository = %s AND op = %s AND status = "
                               "ANY(%s)", (self.repository, op, list(LIVE_STATUSES))).fetchone()
        return RunRecord.from_dict(row[0]) if row else None

    def placement(self, run_id: str) -> tuple[str | None, str | None]:
        """(host driving or holding the run, its workflow id)."""
        with self.connect() as conn:
            row = conn.execute("SELECT host, workflow_id FROM metalport_runs WHERE run_id = %s", (run_id,)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def set_workflow(self, run_id: str, workflow_id: str) -> None:
        """Remember the Temporal workflow that drives `run_id`."""
        with self.connect() as conn:
            conn.execute("UPDATE metalport_runs SET workflow_id = %s WHERE run_id = %s", (workflow_id, run_id))

    # Portable worktrees and run files ------------------------------------------------------------

    def put_portable(self, run_id: str, base_commit: str, branch: str, diff: str, host: str) -> None:
        """Record the run's worktree as base commit + diff (what another machine rebuilds it from)."""
        with self.connect() as conn:
            conn.execute("INSERT INTO metalport_portable (run_id, base_commit, branch, diff, host) VALUES "
                         "(%s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET base_commit = EXCLUDED.base_commit, "
                         "branch = EXCLUDED.branch, diff = EXCLUDED.diff, host = EXCLUDED.host, updated_at = now()",
                         (run_id, base_commit, branch, diff, host))

    def portable(self, run_id: str) -> dict | None:
        """{base_commit, branch, diff, host} of the run's last recorded worktree, or None."""
        with self.connect(dict_rows=True) as conn:
            return conn.execute("SELECT base_commit, branch, diff, host FROM metalport_portable WHERE run_id = %s",
                                (run_id,)).fetchone()

    def put_file(self, run_id: str, name: str, content: str) -> None:
        """Keep a run file (plan.json, evidence.json) for machines that do not have its run folder."""
        with self.connect() as conn:
            conn.execute("INSERT INTO metalport_run_files (run_id, name, content) VALUES (%s, %s, %s) "
                         "ON CONFLICT (run_id, name) DO UPDATE SET content = EXCLUDED.content", (run_id, name, content))

    def get_file(self, run_id: str, name: str) -> str | None:
        """A kept run file, or None."""
        with self.connect() as conn:
            row = conn.execute("SELECT content FROM metalport_run_files WHERE run_id = %s AND name = %s",
                               (run_id, name)).fetchone()
        return row[0] if row else None

    # Run locks ---------------------------------------------------------------------------------

    @contextmanager
    def hold(self, run_id: str) -> Iterator[None]:
        """Hold the run's lock for the block; PipelineError when another process (anywhere) holds it."""
        with self.connect() as conn:
            taken = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (f"metalport-run:{run_id}",)).fetchone()[0]
            if not taken:
                host, _ = self.placement(run_id)
                raise PipelineError(f"run {run_id} is being driven by another process (on {host or 'another host'})",
                                    hint="wait for it to finish, or stop that process first")
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (f"metalport-run:{run_id}",))

    def is_live(self, run_id: str) -> bool:
        """True while some process on some machine holds the run's lock."""
        key = f"metalport-run:{run_id}"
        with self.connect() as conn:
            free = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]
            if free:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))
        return not free

    # Sweeps and workers ----------------------------------------------------------------------------

    def put_report(self, report: dict) -> None:
        """Keep the latest sweep report of the repository (the dashboard's data)."""
        with self.connect() as conn:
            conn.execute("INSERT INTO metalport_sweeps (repository, report) VALUES (%s, %s) ON CONFLICT "
                         "(repository) DO UPDATE SET report = EXCLUDED.report, updated_at = now()",
                         (self.repository, json.dumps(report)))

    def report(self) -> dict | None:
        """The latest sweep report of the repository, or None."""
        with self.connect() as conn:
            row = conn.execute("SELECT report FROM metalport_sweeps WHERE repository = %s",
                               (self.repository,)).fetchone()
        return row[0] if row else None

    def worker_seen(self, identity: str, host: str, queues: list[str], checkout: Path) -> None:
        """Record (or refresh) a running worker."""
        with self.connect() as conn:
            conn.execute("INSERT INTO metalport_workers (identity, host, queues, repository, checkout) VALUES "
                         "(%s, %s, %s, %s, %s) ON CONFLICT (identity) DO UPDATE SET seen_at = now()",
                         (identity, host, ",".join(queues), self.repository, str(checkout)))

    def workers(self) -> list[dict]:
        """The workers of this repository that reported, newest first, with seconds since last seen."""
        with self.connect(dict_rows=True) as conn:
            return conn.execute("SELECT identity, host, queues, checkout, extract(epoch FROM now() - seen_at) AS "
                                "silent_s FROM metalport_workers WHERE repository = %s ORDER BY seen_at DESC",
                                (self.repository,)).fetchall()
