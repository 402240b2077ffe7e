"""Shared state in a real PostgreSQL: runs seen, refused and approved from another checkout; db migrate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.cli import main
from tests.fleet.conftest import git


def _cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_local_run_migrated_then_listed_refused_and_approved_from_another_checkout(
        checkouts: tuple[Path, Path], postgres: object, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture, request: pytest.FixtureRequest) -> None:
    a, b = checkouts
    monkeypatch.delenv("METALPORT_DATABASE_URL", raising=False)
    code, out, _ = _cli(capsys, "run", "special_ndtri", "--repo", str(a), "--executor", "command", "--no-input",
                        "--json")
    run_id = json.loads(out.strip().splitlines()[-1])["run_id"]
    assert code == 0

    url = request.getfixturevalue("database_url")  # the shared database from here on
    assert _cli(capsys, "runs", "--repo", str(b), "--json")[1].strip() == "[]"
    code, out, _ = _cli(capsys, "db", "migrate", "--repo", str(a))
    assert code == 0 and out.startswith(f"copied 1 runs and ") and url.rsplit("/", 1)[1] in out
    assert _cli(capsys, "db", "migrate", "--repo", str(a))[0] == 0  # idempotent

    code, out, _ = _cli(capsys, "runs", "--repo", str(b), "--json")
    assert [(r["run_id"], r["status"]) for r in json.loads(out)] == [(run_id, "awaiting-review")]

    code, _, err = _cli(capsys, "run", "special_ndtri", "--repo", str(b), "--executor", "command", "--no-input")
    assert code == 2 and f"run {run_id} of aten::special_ndtri is waiting for review" in err

    code, out, _ = _cli(capsys, "review", "approve", run_id, "--repo", str(b))
    assert code == 0 and f"run {run_id} (aten::special_ndtri) published" in out
    subjects = git(b, "log", "--format=%s%n%b", "main..metalport/special_ndtri")
    assert subjects.count("[MPS] Add native Metal kernel for special_ndtri") == 1
    assert f"Metalport-Run: {run_id}" in subjects
    assert "special_ndtri_mps_kernel" in git(b, "show", "metalport/special_ndtri")
    code, out, _ = _cli(capsys, "runs", "--repo", str(a), "--json")
    assert [(r["run_id"], r["status"]) for r in json.loads(out)] == [(run_id, "published")]


def test_one_live_run_per_op_across_machines(checkouts: tuple[Path, Path], database_url: str) -> None:
    from metalport.errors import PipelineError
    from metalport.run_record import RunRecord
    from metalport.store import open_store

    a, b = checkouts
    first, second = open_store(a), open_store(b)
    assert first is not None and second is not None and first.repository == second.repository
    stamp = "2026-12-03T10:00:00Z"
    first.claim(RunRecord("heaviside-1", "aten::heaviside", "running", "resolve", 0, None, None, stamp, stamp), "mac-1")
    with pytest.raises(PipelineError) as err:
        second.claim(RunRecord("heaviside-2", "aten::heaviside", "running", "resolve", 0, None, None, stamp, stamp),
                     "linux-1")
    assert str(err.value).startswith("aten::heaviside already has a live run in the shared database: run heaviside-1")
    first.put(RunRecord("heaviside-1", "aten::heaviside", "rejected", "approve", 1, None, None, stamp, stamp))
    second.claim(RunRecord("heaviside-2", "aten::heaviside", "running", "resolve", 0, None, None, stamp, stamp), "l")
    assert [r.run_id for r in open_store(b).list()] == ["heaviside-1", "heaviside-2"]


def test_run_lease_is_held_across_connections(checkouts: tuple[Path, Path], database_url: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from metalport.errors import PipelineError
    from metalport.run_record import RunRecord
    from metalport.store import open_store

    a, b = checkouts
    monkeypatch.setenv("METALPORT_HOST", "mac-1")
    store = open_store(a)
    stamp = "2026-12-03T10:00:00Z"
    store.claim(RunRecord("sub-1", "aten::sub", "running", "build", 0, None, None, stamp, stamp), "mac-1")
    with store.hold("sub-1"):
        assert open_store(b).is_live("sub-1")
        with pytest.raises(PipelineError, match="run sub-1 is being driven by another process \\(on mac-1, lease "
                                                "for [0-9]+s more\\)"):
            with open_store(b).hold("sub-1"):
                pass
    assert not open_store(b).is_live("sub-1")


def test_a_holder_that_stops_renewing_loses_the_lease_and_its_writes_are_refused(
        checkouts: tuple[Path, Path], database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Note [run leases]: a stopped process (its renewal thread frozen) loses the run after lease_s."""
    import time

    from metalport.run_record import RunRecord
    from metalport.store import LeaseLost, open_store

    a, b = checkouts
    monkeypatch.setenv("METALPORT_LEASE_S", "1.5")
    monkeypatch.setenv("METALPORT_HOST", "mac-1")
    asleep = open_store(a)
    stamp = "2026-12-03T10:00:00Z"
    record = RunRecord("mul-1", "aten::mul", "running", "build", 0, None, None, stamp, stamp)
    asleep.claim(record, "mac-1")
    with asleep.hold("mul-1") as lease:
        time.sleep(1.0)
        asleep.put(record)  # renewed: still ours after most of a lease
        lease._stop.set()  # the machine goes to sleep: nothing renews any more
        time.sleep(2.0)
        monkeypatch.setenv("METALPORT_HOST", "mac-2")
        awake = open_store(b)
        with awake.hold("mul-1"):
            awake.put(RunRecord("mul-1", "aten::mul", "awaiting-review", "approve", 1, None, None, stamp, stamp))
            with pytest.raises(LeaseLost, match="run mul-1: this machine's lease was lost to mac-2"):
                asleep.put(record)  # the woken holder cannot overwrite the new holder's record
        assert lease.lost_to == "mac-2"
    assert awake.get("mul-1").status == "awaiting-review"


def test_password_in_metalport_yaml_is_refused_and_never_printed(
        checkouts: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    a, _ = checkouts
    monkeypatch.delenv("METALPORT_DATABASE_URL", raising=False)
    (a / "metalport.yaml").write_text("database:\n  url: postgresql://metalport:s3cret-pw@127.0.0.1:1/metalport\n")
    code, out, err = _cli(capsys, "runs", "--repo", str(a))
    assert code == 2 and "database.url in metalport.yaml carries a password" in err
    assert "s3cret-pw" not in out + err


def test_unreachable_database_is_one_line_without_the_password(
        checkouts: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
        tmp_path: Path) -> None:
    from tests.fleet.services import free_port

    a, _ = checkouts
    secret = tmp_path / "pw"
    secret.write_text("s3cret-pw\n")
    monkeypatch.setenv("METALPORT_DATABASE_URL", f"postgresql://metalport@127.0.0.1:{free_port()}/metalport")
    monkeypatch.setenv("METALPORT_DATABASE_PASSWORD_FILE", str(secret))
    code, out, err = _cli(capsys, "runs", "--repo", str(a))
    assert code == 2 and err.startswith("metalport: error: cannot connect to the database postgresql://metalport@127")
    assert len(err.strip().splitlines()) == 1 and "s3cret-pw" not in out + err


def test_processes_setting_up_one_database_at_once_do_not_deadlock(checkouts: tuple[Path, Path],
                                                                   database_url: str) -> None:
    """Note [schema lock]: eight first uses of an empty database at once (LangGraph's migrations included)."""
    import subprocess
    import sys

    a, _ = checkouts
    code = ("import sys; from metalport.store import open_store\n"
            "with open_store(sys.argv[1]).saver() as saver: print(len(saver.MIGRATIONS))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(a)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(8)]
    results = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 8, [err[-500:] for _, err in results]
    assert len({out for out, _ in results}) == 1


def test_temporal_tls_settings_are_read_from_metalport_yaml_and_a_missing_file_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from metalport.errors import UsageError
    from metalport.store import load_settings

    for key in ("CA", "CERT", "KEY"):
        monkeypatch.delenv(f"METALPORT_TEMPORAL_TLS_{key}", raising=False)
    (tmp_path / "ca.pem").write_bytes(b"-----BEGIN CERTIFICATE-----\nca\n")
    (tmp_path / "w.pem").write_bytes(b"cert")
    (tmp_path / "w.key").write_bytes(b"key")
    (tmp_path / "metalport.yaml").write_text(f"fleet:\n  temporal: temporal.internal:7233\n  tls_ca: {tmp_path}/ca.pem\n"
                                             f"  tls_cert: {tmp_path}/w.pem\n  tls_key: {tmp_path}/w.key\n")
    tls = load_settings(tmp_path).temporal_tls()
    assert (tls.server_root_ca_cert, tls.client_cert, tls.client_private_key) == (
        b"-----BEGIN CERTIFICATE-----\nca\n", b"cert", b"key")
    assert load_settings(tmp_path, environ={}).temporal_tls() is not False
    (tmp_path / "metalport.yaml").write_text("fleet:\n  temporal: 127.0.0.1:7233\n")
    assert load_settings(tmp_path).temporal_tls() is False  # plain TCP: loopback or a tunnel
    monkeypatch.setenv("METALPORT_TEMPORAL_TLS_CA", str(tmp_path / "missing.pem"))
    with pytest.raises(UsageError, match="cannot read a Temporal TLS file: No such file or directory") as err:
        load_settings(tmp_path).temporal_tls()
    assert str(tmp_path / "missing.pem") in str(err.value.location)


def test_a_lease_whose_pipeline_makes_no_progress_is_given_up(checkouts: tuple[Path, Path], database_url: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A hung step (a build that never returns) stops renewing after stall_s; progress keeps the lease."""
    import time

    from metalport.run_record import RunRecord
    from metalport.store import LeaseLost, open_store

    a, _ = checkouts
    monkeypatch.setenv("METALPORT_LEASE_S", "0.9")
    monkeypatch.setenv("METALPORT_STALL_S", "1.5")
    store = open_store(a)
    stamp = "2026-12-03T10:00:00Z"
    record = RunRecord("div-1", "aten::div", "running", "build", 0, None, None, stamp, stamp)
    store.claim(record, "mac-1")
    with store.hold("div-1") as lease:
        for _ in range(4):  # 2 s of steady progress: longer than stall_s, still held
            time.sleep(0.5)
            lease.progressed()
        store.put(record)
        time.sleep(2.5)  # then nothing: the step hangs
        assert lease.lost_to is not None and "no progress for 1.5s" in lease.lost_to
        assert not store.is_live("div-1")  # lapsed: another worker may take the run
        with pytest.raises(LeaseLost):
            store.put(record)


def test_a_cli_run_whose_lease_is_taken_stops_its_build_at_once(checkouts: tuple[Path, Path], database_url: str,
                                                                 tmp_path: Path) -> None:
    """A plain `metalport run` on the shared store (not a fleet worker) whose lease another machine
    took, e.g. after a laptop slept past it, kills its build within seconds and says who has the run,
    instead of building to the end."""
    import os
    import subprocess
    import sys
    import time

    import psycopg

    from metalport.store import open_store
    from tests.sandbox.test_runner import _alive

    a, _ = checkouts
    marker = tmp_path / "build.pid"
    (a / "metalport.yaml").write_text(
        f'executor:\n  build: [sh, -c, "sleep 120 & echo $! > {marker}; wait"]\n  test: ["true"]\n')
    env = {**os.environ, "METALPORT_LEASE_S": "3", "METALPORT_HOST": "mac-1"}
    proc = subprocess.Popen([sys.executable, "-m", "metalport", "run", "special_ndtri", "--repo", str(a),
                             "--executor", "command", "--no-input"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.2)
        build = int(marker.read_text())
        store = open_store(a)
        run_id = store.list()[0].run_id
        with psycopg.connect(database_url, autocommit=True) as conn:  # mac-2 takes the run over
            taken = conn.execute("UPDATE metalport_leases SET holder = 'mac-2:1:x', host = 'mac-2' WHERE run_id = %s",
                                 (run_id,)).rowcount
        assert taken == 1
        stolen = time.monotonic()
        _, err = proc.communicate(timeout=60)
        assert time.monotonic() - stolen < 20, "the run built on after losing its lease"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0 and "Traceback" not in err
    assert f"run {run_id}: this machine's lease was lost to mac-2" in err, err[-2000:]
    deadline = time.monotonic() + 10
    while _alive(build) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(build), "the build outlived the lost lease"


def _strict(text: str) -> object:
    """`text` parsed as strict JSON (no Infinity or NaN, which PostgreSQL and most readers refuse)."""
    def refuse(name: str) -> object:
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def test_a_record_holding_infinities_and_nan_round_trips_through_every_store(
        checkouts: tuple[Path, Path], database_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    import math

    from metalport.graph.records import list_runs, run_dir, write_record
    from metalport.run_record import RunRecord
    from metalport.store import open_store

    a, b = checkouts
    stamp = "2026-12-03T10:00:00Z"
    report = {"dtypes": [{"dtype": "float32", "worst_ulps_vs_truth": [math.inf, 3.0], "worst_error": -math.inf,
                          "relative_bound_used": math.nan, "note": "a string stays a string"}]}
    record = RunRecord("special_log_ndtr-1", "aten::special_log_ndtr", "running", "test", 1, None, None, stamp,
                       stamp, verdicts={"test": {"ok": True, "report": report}})

    def same(got: RunRecord) -> None:
        dtype = got.verdicts["test"]["report"]["dtypes"][0]
        assert dtype["worst_ulps_vs_truth"] == [math.inf, 3.0] and dtype["worst_error"] == -math.inf
        assert math.isnan(dtype["relative_bound_used"]) and dtype["note"] == "a string stays a string"

    store = open_store(a)
    store.claim(record, "mac-1")  # PostgreSQL's jsonb refuses Infinity: this raised before
    same(open_store(b).get(record.run_id))
    store.put(RunRecord(**{**record.__dict__, "status": "awaiting-review"}))
    [listed] = open_store(b).list()
    same(listed)
    assert listed.status == "awaiting-review"
    code, out, err = _cli(capsys, "runs", "--repo", str(b), "--json")
    assert code == 0 and _strict(out)[0]["verdicts"]["test"]["report"]["dtypes"][0]["worst_error"] == "-inf", err

    monkeypatch.delenv("METALPORT_DATABASE_URL")  # the embedded store: run.json
    write_record(record, run_dir(a, record.run_id))
    _strict((run_dir(a, record.run_id) / "run.json").read_text())
    [local] = list_runs(a)
    same(local)
