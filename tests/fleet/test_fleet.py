"""The fleet end to end: a real Temporal dev server, a real PostgreSQL, `metalport worker` processes.

Each checkout stands for a machine; its worker runs the `command` executor (metalport.yaml's
build and test commands) so a "mac" runs on Linux. Nothing is mocked: the workers are
`python -m metalport worker` subprocesses, killed with SIGKILL where the story says so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from metalport.cli import main
from tests.fleet.conftest import git, make_checkouts
from tests.fleet.services import Temporal

FLEET = "fleet:\n  heartbeat_s: 4\n  publish_wait_s: 8\n  lease_s: 4\n"


@pytest.fixture(scope="module")
def temporal() -> Iterator[Temporal]:
    """One Temporal dev server for the module (127.0.0.1, state in a SQLite file)."""
    server = Temporal()
    yield server
    server.close()


@pytest.fixture
def fleet_env(database_url: str, temporal: Temporal, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of every process of one fleet: database, Temporal, a repository name of its own."""
    env = {"METALPORT_DATABASE_URL": database_url, "METALPORT_TEMPORAL_ADDRESS": temporal.address,
           "METALPORT_REPOSITORY": f"test-{uuid.uuid4().hex[:8]}"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return {**os.environ, **env}


class Workers:
    """`metalport worker` subprocesses, by host name."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs, self.procs = env, logs, {}
        self.args: dict[str, tuple[str, Path]] = {}

    def start(self, host: str, queue: str, checkout: Path, env: dict[str, str] | None = None,
              executor: str = "command") -> None:
        """Start a worker (with `env`, default the fleet's) and wait until it polls."""
        from metalport.store import open_store

        self.args[host] = (queue, checkout)
        with open(self.logs / f"{host}.log", "ab") as log:
            self.procs[host] = subprocess.Popen(
                [sys.executable, "-m", "metalport", "worker", "--queue", queue, "--executor", executor, "--host",
                 host, "--repo", str(checkout)], env=env or self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        store = open_store(checkout)
        store.repository = (env or self.env)["METALPORT_REPOSITORY"]
        until(lambda: any(w["host"] == host and w["identity"].endswith(f":{self.procs[host].pid}")
                          for w in store.workers()), f"worker {host} polling", self.log_tail(host))

    def signal(self, host: str, sig: int) -> None:
        """Send `sig` to a worker's process group (SIGSTOP: the machine went to sleep; SIGCONT: it woke)."""
        os.killpg(self.procs[host].pid, sig)

    def kill(self, host: str) -> None:
        """SIGKILL a worker (its process group: nothing of it survives)."""
        os.killpg(self.procs[host].pid, signal.SIGKILL)
        self.procs[host].wait()

    def start_again(self) -> None:
        """Start every worker again as it was (after they were killed)."""
        for host, (queue, checkout) in list(self.args.items()):
            self.start(host, queue, checkout)

    def stop(self) -> None:
        """Stop every worker still running."""
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    def log_tail(self, host: str) -> Callable[[], str]:
        """A reader of the last lines of a worker's log (for failure messages)."""
        return lambda: (self.logs / f"{host}.log").read_text(errors="replace")[-3000:]


@pytest.fixture
def workers(fleet_env: dict[str, str], tmp_path: Path) -> Iterator[Workers]:
    """Worker processes, stopped at the end of the test."""
    fleet = Workers(fleet_env, tmp_path)
    yield fleet
    fleet.stop()


def until(check: Callable[[], object], what: str, details: Callable[[], str] = lambda: "",
          timeout_s: float = 240.0) -> object:
    """Poll `check` until it returns something true; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}\n{details()}")


def _checkouts(wheel_workspace: object, tmp_path: Path, build_s: float) -> tuple[Path, Path, Path]:
    a, b = make_checkouts(wheel_workspace, tmp_path, build_s=build_s)
    for checkout in (a, b):
        with open(checkout / "metalport.yaml", "a") as handle:
            handle.write(FLEET)
    c = tmp_path / "C"  # the reviewer's checkout: no worker, never ran the port
    git(tmp_path, "clone", "-q", str(a), str(c))
    (c / "metalport.yaml").write_text((a / "metalport.yaml").read_text())
    return a, b, c


def _cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _workflow_status(temporal: Temporal, checkout: Path, run_id: str) -> str:
    """The Temporal status name of the workflow recorded with `run_id`."""
    import asyncio

    from temporalio.client import Client

    from metalport.store import open_store

    async def describe() -> str:
        wid = open_store(checkout).placement(run_id)[1]
        client = await Client.connect(temporal.address)
        return (await client.get_workflow_handle(wid).describe()).status.name

    return asyncio.run(describe())


def _runs(checkout: Path) -> dict[str, object]:
    from metalport.store import open_store

    return {r.op.removeprefix("aten::"): r for r in open_store(checkout).list()}


def _sweep(checkout: Path, queue: str, family: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "metalport", "sweep", "--fleet", "--queue", queue, "--status",
                             "missing", "--family", family, "--repo", str(checkout), "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


OUTAGE_S = float(os.environ.get("METALPORT_FLEET_OUTAGE_S", "8"))  # the acceptance's 30 s: set it to 30


def test_routing_concurrent_sweeps_outages_restart_and_approval_from_another_checkout(
        wheel_workspace: object, tmp_path: Path, fleet_env: dict[str, str], workers: Workers, temporal: Temporal,
        postgres: object, capsys: pytest.CaptureFixture) -> None:
    a, b, c = _checkouts(wheel_workspace, tmp_path, build_s=3)
    workers.start("mac-a", "mac", a)
    workers.start("linux-b", "linux", b)

    reports = []
    for batch in ((("mac", "unary-pointwise"), ("mac", "unary-pointwise")), (("linux", "binary-pointwise"),)):
        sweeps = [_sweep(c, queue, family, fleet_env) for queue, family in batch]  # two at once, then linux
        for proc in sweeps:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            reports.append(json.loads(out))
    started = [run_id.rsplit("-", 3)[0] for report in reports for run_id in report["started_runs"]]
    assert sorted(started) == ["heaviside", "special_log_ndtr", "special_ndtri"]  # each op once, over 3 sweeps
    refused = [o for r in reports[:2] for o in r["outcomes"] if o["skip"] == "in-progress"]
    unary = sum(len(r["started_runs"]) for r in reports[:2])
    assert unary == 2 and len(refused) == 2 and all("already porting it" in o["reason"] for o in refused)

    # Runs in flight: PostgreSQL goes away for OUTAGE_S, then the Temporal server restarts. Every worker
    # waits them out (a progress line per retry) and every run still reaches the gate.
    until(lambda: any(r.stage == "build" for r in _runs(c).values()), "a run building")
    postgres.stop()  # type: ignore[attr-defined]
    time.sleep(OUTAGE_S)
    postgres.start()  # type: ignore[attr-defined]
    temporal.stop()
    temporal.start()

    runs = until(lambda: (lambda got: got if len(got) == 3 and all(r.status == "awaiting-review"
                                                                    for r in got.values()) else None)(_runs(c)),
                 "three runs at the gate", lambda: workers.log_tail("mac-a")() + workers.log_tail("linux-b")(),
                 timeout_s=480)  # the mac runs go one at a time, and retried after the restart: slow under load
    assert all(proc.poll() is None for proc in workers.procs.values())  # nobody exited
    logs = "".join((tmp_path / f"{host}.log").read_text(errors="replace") for host in ("mac-a", "linux-b"))
    assert "metalport: database postgresql://postgres@127.0.0.1" in logs and "unreachable" in logs
    assert "retrying in" in logs
    from metalport.store import open_store

    store = open_store(c)
    hosts = {op: store.placement(r.run_id)[0] for op, r in runs.items()}
    assert hosts == {"special_log_ndtr": "mac-a", "special_ndtri": "mac-a", "heaviside": "linux-b"}
    assert {"metalport/special_log_ndtr", "metalport/special_ndtri"} <= set(git(a, "branch", "--format=%(refname:short)").split())
    assert "metalport/heaviside" in git(b, "branch", "--format=%(refname:short)").split()

    code, out, _ = _cli(capsys, "runs", "--repo", str(a), "--json")
    assert code == 0 and {r["op"] for r in json.loads(out)} == {"aten::heaviside", "aten::special_log_ndtr",
                                                                "aten::special_ndtri"}

    # The gate outlives the server and every worker.
    for host in ("mac-a", "linux-b"):
        workers.kill(host)
    temporal.stop()
    temporal.start()
    workers.start_again()

    # The reviewer's checkout C never sees a worker's disk: B's run folders are moved away first.
    heaviside = runs["heaviside"].run_id
    hidden = tmp_path / "hidden-runs"
    (b / ".git" / "metalport" / "runs").rename(hidden)
    code, out, err = _cli(capsys, "review", "show", heaviside, "--repo", str(c))
    assert code == 0, err
    assert "in the shared store (made on linux-b" in out and "run.json" in out and "plan.json" in out
    assert "Subject: [PATCH] [metalport] aten::heaviside" in out and "heaviside" in out and str(b) not in out
    code, out, _ = _cli(capsys, "review", "show", heaviside, "--repo", str(c), "--file", "plan.json")
    assert code == 0 and json.loads(out)
    code, out, err = _cli(capsys, "review", "approve", heaviside, "--repo", str(c))
    assert code == 0, err
    bundle_dir = c / ".git" / "metalport" / "runs" / heaviside / "bundle"
    assert out == f"run {heaviside} (aten::heaviside) published: {bundle_dir}\n"  # one line, the reviewer's side
    log = git(c, "log", "--format=%s%n%b", "main..metalport/heaviside")
    assert log.count("[MPS] Add native Metal kernel for heaviside") == 1 and f"Metalport-Run: {heaviside}" in log
    assert f"Metalport-Run: {heaviside}" not in git(b, "log", "--all", "--format=%b")  # nothing committed on B
    hidden.rename(b / ".git" / "metalport" / "runs")
    until(lambda: _workflow_status(temporal, c, heaviside) == "COMPLETED", "the workflow ended")
    assert not (b / ".git" / "metalport" / "worktrees" / heaviside).exists()  # the worker's copy cleaned up
    assert "metalport/heaviside" not in git(b, "branch", "--format=%(refname:short)").split()

    ndtri = runs["special_ndtri"].run_id
    code, out, _ = _cli(capsys, "review", "abort", ndtri, "--repo", str(c))
    assert code == 0 and "aborted" in out
    assert "metalport/special_ndtri" not in git(a, "branch", "--format=%(refname:short)").split()

    # The latest sweep's dashboard (the linux one, made in C), from A, follows the approval done on B's run.
    code, out, _ = _cli(capsys, "fleet", "dashboard", "--repo", str(a), "--json")
    shown = {o["op"]: (o["outcome"], o["run_id"]) for o in json.loads(out)["outcomes"]}
    assert code == 0 and shown.get("heaviside") == ("published", heaviside), out


def test_stopped_worker_loses_its_lease_the_run_finishes_once_elsewhere_and_the_woken_worker_stands_down(
        wheel_workspace: object, tmp_path: Path, fleet_env: dict[str, str], workers: Workers,
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = _checkouts(wheel_workspace, tmp_path, build_s=6)
    artifacts = tmp_path / "artifacts.git"  # this fleet's artifacts go to a git remote (Note [artifact refs])
    git(tmp_path, "init", "-q", "--bare", str(artifacts))
    workers.env["METALPORT_ARTIFACTS_REMOTE"] = str(artifacts)
    monkeypatch.setenv("METALPORT_ARTIFACTS_REMOTE", str(artifacts))
    workers.start("mac-1", "mac", a)
    workers.start("mac-2", "mac", b)
    checkout = {"mac-1": a, "mac-2": b}

    # The nightly sweep's Schedule, triggered now: a SweepWorkflow whose activity starts heaviside's workflow.
    code, out, err = _cli(capsys, "fleet", "schedule", "--cron", "0 2 * * *", "--trigger", "--queue", "mac",
                          "--status", "missing", "--family", "binary-pointwise", "--limit", "1", "--repo", str(c))
    assert code == 0 and out.startswith("schedule metalport-sweep-") and "triggered once now" in out, err

    from metalport.store import open_store

    store = open_store(c)
    run_id = until(lambda: (r := _runs(c).get("heaviside")) is not None and r.run_id, "the scheduled sweep's run")
    code, _, err = _cli(capsys, "fleet", "start", "heaviside", "--queue", "mac", "--repo", str(c))
    assert code == 2 and "is already porting heaviside" in err  # the engine refuses a second start
    until(lambda: (r := store.get(run_id)) is not None and r.stage == "build", "the run at stage build")
    first = store.placement(run_id)[0]
    other = "mac-2" if first == "mac-1" else "mac-1"
    assert store.placement(run_id)[1].startswith("metalport-")  # the workflow id is recorded with the run

    # A Mac goes to sleep mid-build (its TCP connections stay open): the lease lapses, the other takes the run.
    workers.signal(first, signal.SIGSTOP)
    until(lambda: (r := store.get(run_id)) is not None and r.status == "awaiting-review"
          and store.placement(run_id)[0] == other, "the run at the gate on the other worker", workers.log_tail(other))
    workers.signal(first, signal.SIGCONT)
    until(lambda: "standing down" in workers.log_tail(first)(), "the woken worker standing down",
          workers.log_tail(first))
    assert f"run {run_id}: this machine's lease was lost to " in workers.log_tail(first)()
    until(lambda: not (checkout[first] / ".git" / "metalport" / "worktrees" / run_id).exists(),
          "the woken worker's worktree removed")
    assert "metalport/heaviside" not in git(checkout[first], "branch", "--format=%(refname:short)").split()
    record = store.get(run_id)
    assert (record.status, store.placement(run_id)[0]) == ("awaiting-review", other)  # not overwritten
    assert [r.run_id for r in store.list() if r.op == "aten::heaviside"] == [run_id]
    assert workers.procs[first].poll() is None  # it stood down from the run, not from the fleet

    assert git(artifacts, "for-each-ref", "--format=%(refname)").split() == [
        f"refs/metalport/evidence/{run_id}", f"refs/metalport/runs/{run_id}"]
    code, out, err = _cli(capsys, "review", "show", run_id, "--repo", str(c))
    assert code == 0 and f"evidence in git remote {artifacts} (refs/metalport/evidence/{run_id})" in out, err
    code, out, err = _cli(capsys, "review", "approve", run_id, "--repo", str(c))
    assert code == 0 and out.startswith(f"run {run_id} (aten::heaviside) published: {c}"), err
    log = git(c, "log", "--format=%s%n%b", "main..metalport/heaviside")
    assert log.count("[MPS] Add native Metal kernel for heaviside") == 1 and f"Metalport-Run: {run_id}" in log
    for machine in (a, b):  # the workers committed nothing: the run's one commit is the reviewer's
        assert f"Metalport-Run: {run_id}" not in git(machine, "log", "--all", "--format=%b")

    code, out, _ = _cli(capsys, "fleet", "status", "--repo", str(c), "--json")
    status = json.loads(out)
    mac = [name for name in status["queues"] if name.endswith(".mac")]
    assert code == 0 and status["runs"] == [] and len(mac) == 1 and status["queues"][mac[0]] != []
    assert {w["state"] for w in status["workers"]} == {"alive"}


def test_a_woken_worker_whose_build_outlived_its_lease_stops_the_build_at_once(
        wheel_workspace: object, tmp_path: Path, fleet_env: dict[str, str], workers: Workers) -> None:
    from metalport.store import open_store

    a, b, c = _checkouts(wheel_workspace, tmp_path, build_s=0.5)
    # mac-1's build takes 10 minutes (a cold PyTorch build); mac-2's half a second.
    config = (a / "metalport.yaml").read_text().replace('"sleep 0.5; echo built"', '"sleep 617; echo built"')
    (a / "metalport.yaml").write_text(config)
    workers.start("mac-1", "mac", a)
    start = subprocess.run([sys.executable, "-m", "metalport", "fleet", "start", "heaviside", "--queue", "mac",
                            "--json", "--repo", str(c)], env=fleet_env, capture_output=True, text=True, timeout=120)
    assert start.returncode == 0, start.stderr
    run_id = json.loads(start.stdout)["run_id"]
    store = open_store(c)
    until(lambda: (r := store.get(run_id)) is not None and r.stage == "build", "mac-1 building",
          workers.log_tail("mac-1"))
    building = a / ".git" / "metalport" / "worktrees" / run_id

    def builds_in(tree: Path) -> list[int]:  # processes working in that worktree (the build and its sleep)
        found = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if Path(os.readlink(proc / "cwd")).is_relative_to(tree):
                    found.append(int(proc.name))
            except OSError:
                continue
        return found

    until(lambda: builds_in(building), "mac-1's build running")
    workers.start("mac-2", "mac", b)
    workers.signal("mac-1", signal.SIGSTOP)  # asleep mid-build, past its lease
    until(lambda: (r := store.get(run_id)) is not None and r.status == "awaiting-review"
          and store.placement(run_id)[0] == "mac-2", "the run at the gate on mac-2", workers.log_tail("mac-2"))
    workers.signal("mac-1", signal.SIGCONT)
    # On waking, mac-1's build stops at once (its lease is gone), not after the 10-minute step.
    until(lambda: "standing down" in workers.log_tail("mac-1")(), "mac-1 standing down", workers.log_tail("mac-1"),
          timeout_s=120)
    until(lambda: not builds_in(building), "mac-1's build killed", timeout_s=30)
    assert f"run {run_id}: this machine's lease was lost to " in workers.log_tail("mac-1")()
    assert not building.exists() and workers.procs["mac-1"].poll() is None
    record = store.get(run_id)
    assert (record.status, store.placement(run_id)[0]) == ("awaiting-review", "mac-2")  # not overwritten


def test_another_repositorys_worker_never_takes_this_repositorys_op_and_start_waits_for_the_outcome(
        wheel_workspace: object, tmp_path: Path, fleet_env: dict[str, str], workers: Workers) -> None:
    from metalport.store import open_store

    a, b, c = _checkouts(wheel_workspace, tmp_path, build_s=0.2)
    elsewhere = {**fleet_env, "METALPORT_REPOSITORY": fleet_env["METALPORT_REPOSITORY"] + "-other"}
    workers.start("linux-other", "linux", b, env=elsewhere)  # same Temporal server, same database
    start = subprocess.Popen([sys.executable, "-m", "metalport", "fleet", "start", "heaviside", "--queue", "linux",
                              "--wait", "--json", "--repo", str(c)], env=fleet_env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(8)
    assert start.poll() is None  # nobody of this repository works yet: the run waits
    other_store = open_store(b)
    other_store.repository = elsewhere["METALPORT_REPOSITORY"]
    assert _runs(c) == {} and other_store.list() == []
    assert "heaviside" not in workers.log_tail("linux-other")()

    workers.start("linux-a", "linux", a)
    out, err = start.communicate(timeout=180)
    result = json.loads(out)
    assert start.returncode == 0 and result["outcome"] == "awaiting-review", err
    assert open_store(c).placement(result["run_id"]) == ("linux-a", result["workflow_id"])
    assert "heaviside" not in workers.log_tail("linux-other")()


def test_max_open_holds_across_concurrent_sweeps(wheel_workspace: object, tmp_path: Path,
                                                fleet_env: dict[str, str]) -> None:
    """Two sweeps at once, --max-open 1, no worker yet: started-but-unclaimed workflows count as open."""
    _, _, c = _checkouts(wheel_workspace, tmp_path, build_s=0.2)
    sweeps = [subprocess.Popen([sys.executable, "-m", "metalport", "sweep", "--fleet", "--queue", "mac", "--status",
                                "missing", "--family", family, "--max-open", "1", "--repo", str(c), "--json"],
                               env=fleet_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for family in ("unary-pointwise", "binary-pointwise")]
    reports = []
    for proc in sweeps:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    assert sum(len(r["started_runs"]) for r in reports) == 1
    held = [o for r in reports for o in r["outcomes"] if o["reason"] and "(--max-open 1)" in o["reason"]]
    assert held and all(o["reason"].startswith("not started: 1 runs are open on the fleet") for o in held)


def test_a_task_of_another_repository_is_refused_loudly(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from temporalio.exceptions import ApplicationError

    from metalport.fleet.activities import FleetActivities

    worker = FleetActivities(tmp_path, "mac-1", "command", "git:0123456789abcdef")
    with pytest.raises(ApplicationError, match="worker mac-1 serves repository git:0123456789abcdef and refused a "
                                               "task of git:fedcba9876543210 \\(run heaviside-1\\)") as err:
        worker._refuse_other_repository({"repository": "git:fedcba9876543210", "run_id": "heaviside-1"})
    assert err.value.non_retryable and "REFUSED" in capsys.readouterr().err


def test_fleet_commands_without_a_reachable_server_or_configuration(
        checkouts: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from tests.fleet.services import free_port

    a, _ = checkouts
    monkeypatch.delenv("METALPORT_TEMPORAL_ADDRESS", raising=False)
    monkeypatch.delenv("METALPORT_DATABASE_URL", raising=False)
    code, _, err = _cli(capsys, "sweep", "--fleet", "--repo", str(a))
    assert code == 2 and err.startswith("metalport: error: the fleet needs a Temporal address and a database URL; ")
    port = free_port()
    monkeypatch.setenv("METALPORT_TEMPORAL_ADDRESS", f"127.0.0.1:{port}")
    monkeypatch.setenv("METALPORT_DATABASE_URL", f"postgresql://metalport@127.0.0.1:{free_port()}/metalport")
    code, _, err = _cli(capsys, "fleet", "status", "--repo", str(a))
    assert code == 2 and err == (f"metalport: error: cannot reach the Temporal server at 127.0.0.1:{port} "
                                 "(connection refused); start it (`temporal server start-dev --ip 127.0.0.1`) or "
                                 "check METALPORT_TEMPORAL_ADDRESS\n")


def test_a_fleet_sweep_of_four_recipe_ops_with_real_conformance_reaches_the_gate(
        wheel_workspace: object, tmp_path: Path, fleet_env: dict[str, str], workers: Workers,
        capsys: pytest.CaptureFixture) -> None:
    """Issue #33: special_log_ndtr's conformance record holds an infinity (its worst ulps vs the
    higher-precision truth), which PostgreSQL's jsonb refused: the run never reached the gate. Here a
    worker with the emulated executor (real conformance) takes a sweep of four recipe ops."""
    import math

    a, _, c = _checkouts(wheel_workspace, tmp_path, build_s=0)
    workers.start("linux-a", "linux", a, executor="emulated")
    sweep = subprocess.run([sys.executable, "-m", "metalport", "sweep", "--fleet", "--queue", "linux", "--status",
                            "missing", "--kind", "pointwise-stub,reduction-stub", "--limit", "4", "--repo", str(c),
                            "--json"], env=fleet_env, capture_output=True, text=True, timeout=180)
    assert sweep.returncode == 0, sweep.stderr
    started = sorted(run_id.rsplit("-", 3)[0] for run_id in json.loads(sweep.stdout)["started_runs"])
    assert len(started) == 4 and "special_log_ndtr" in started, started
    runs = until(lambda: (lambda got: got if len(got) == 4 and all(r.status == "awaiting-review"
                                                                    for r in got.values()) else None)(_runs(c)),
                 "four runs at the gate", workers.log_tail("linux-a"), timeout_s=900)
    log = workers.log_tail("linux-a")()
    assert "Traceback" not in log and "db migrate" not in log
    dtypes = runs["special_log_ndtr"].verdicts["test"]["report"]["dtypes"]
    worst = [d["worst_ulps_vs_truth"][0] for d in dtypes if d.get("worst_ulps_vs_truth")]
    assert any(math.isinf(w) for w in worst), worst  # the record holds the infinity, as a float again
    code, out, err = _cli(capsys, "runs", "--repo", str(c), "--json")
    assert code == 0 and sorted(r["op"].removeprefix("aten::") for r in json.loads(out)) == started, err
