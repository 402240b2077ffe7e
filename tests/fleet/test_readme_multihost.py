"""The README's "Several machines" blocks, run as written (with the substitutions a single test host
needs: a scratch folder for / , loopback for the private address, free ports, `cp` for `scp`, this
checkout's metalport instead of a pip install): a services host with PostgreSQL (as user postgres,
scram password, TLS) and Temporal, then a machine whose `db status` and `fleet status` answer over
verify-full TLS. Needs root, openssl and a PostgreSQL built with SSL under /usr/lib/postgresql
(Debian's `postgresql` package); skipped without them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.fleet.services import free_port

README = Path(__file__).resolve().parents[2] / "README.md"
_PG = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


def _blocks() -> tuple[str, str]:
    """The two indented shell blocks of the README's "Several machines" paragraph."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("**Several machines.**"):text.index("*Verified where*")]
    blocks = [re.sub(r"(?m)^    ", "", b) for b in re.findall(r"\n\n((?:    .*\n|\n(?=    ))+)", section)]
    assert len(blocks) >= 2, "the README's multi-host section lost its two command blocks"
    return blocks[0], blocks[1]


@pytest.mark.skipif(os.geteuid() != 0 or not _PG or subprocess.run(["which", "openssl"], capture_output=True)
                    .returncode != 0, reason="needs root, openssl and Debian's PostgreSQL (apt-get install postgresql)")
def test_the_readme_multi_host_blocks_run_as_written(wheel_workspace: object, tmp_path: Path) -> None:
    services, machine = _blocks()
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="metalport-readme-"))  # under /tmp: user postgres reaches it
    os.chmod(root, 0o755)
    pg_port, temporal_port = free_port(), free_port()
    services_script = (re.sub(r"(?m)^python3 -m venv /opt/metalport .*$", ": metalport from this checkout", services)
                       .replace("apt-get install", "true apt-get install")
                       .replace("DB_HOST=db.internal DB_ADDR=10.0.0.5", "DB_HOST=localhost DB_ADDR=127.0.0.1")
                       .replace("/etc/metalport", f"{root}/etc/metalport")
                       .replace("/var/lib/metalport", f"{root}/var/lib/metalport")
                       .replace("listen_addresses = '$DB_ADDR'", f"listen_addresses = '$DB_ADDR'\nport = {pg_port}")
                       .replace("-d postgres -q", f"-p {pg_port} -d postgres -q")
                       .replace("--ip $DB_ADDR", f"--ip $DB_ADDR --port {temporal_port} --ui-port {free_port()} "
                                                 f"--http-port {free_port()} --metrics-port {free_port()}")
                       .replace("temporal.db &", "temporal.db > /dev/null 2>&1 &"))
    for step in ("true apt-get", ": metalport from this checkout", "DB_HOST=localhost", f"port = {pg_port}",
                 f"--port {temporal_port}"):
        assert step in services_script, f"the README's services block changed: {step!r} no longer applies"
    env = {**os.environ, "PATH": f"{Path(os.sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", services_script + "\nwait\n"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    pgbin = _PG[-1].parent
    data = root / "var/lib/metalport-pg/data"
    try:
        import socket
        import time

        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", temporal_port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"the services block failed:\n{proc.stdout.read()[-3000:]}")
                time.sleep(0.2)
        else:
            pytest.fail("the services block did not start Temporal in 180 s")

        home = tmp_path / "home"
        home.mkdir()
        checkout = Path(getattr(wheel_workspace, "root", wheel_workspace))
        machine_script = (machine
                          .replace("pip install metalport", "true pip install metalport")
                          .replace("scp root@db.internal:/etc/metalport/", f"cp {root}/etc/metalport/")
                          .replace("db.internal:5432", f"localhost:{pg_port}")
                          .replace("db.internal:7233", f"localhost:{temporal_port}")
                          .replace("cd ~/pytorch", f"cd {checkout}")
                          .replace("metalport worker --queue linux", "true metalport worker --queue linux"))
        for step in ("cp ", f"localhost:{pg_port}", f"localhost:{temporal_port}", f"cd {checkout}"):
            assert step in machine_script, f"the README's machine block changed: {step!r} no longer applies"
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", machine_script], env={**env, "HOME": str(home)},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"database postgresql://metalport@localhost:{pg_port}/metalport?sslmode=verify-full" in done.stdout
        assert f"on localhost:{temporal_port}" in done.stdout and "runs: none open" in done.stdout
        assert oct((home / ".config/metalport/pg-password").stat().st_mode & 0o777) == "0o600"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the Temporal dev server the block left running
            proc.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()
        if data.is_dir():
            subprocess.run(["su", "postgres", "-s", "/bin/sh", "-c", f"{pgbin}/pg_ctl -D {data} -m fast -w stop"],
                           capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)
