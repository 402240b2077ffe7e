"""Faults and bad inputs, as a table, through the real CLI on real repositories.

Every row runs `python -m metalport ...` in a child process on its own copy of a repository: a
fresh wheel workspace, one with a run (`gate-1`) waiting at the approval gate, or one where that
run is published. Faults are real (see `harness.py`): read-only mounts (EROFS), tiny full tmpfs
disks (ENOSPC) and `nobody` facing root's folders (EACCES).

Each row says the exit code and the one line on stderr (a regex), and after every row nothing
may be left behind: no traceback, no stray `metalport/*` branch or worktree, no temp file, no
JSON file half-written, no run folder other than the ones the row expects (with their status).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.adversarial.harness import (
                                       Fault,
                                       Outcome,
                                       can_drop_to_nobody,
                                       child_env,
                                       give_to_nobody,
                                       metalport_argv,
                                       namespaces_work,
                                       run_case,
                                       )

NS = namespaces_work()
NOBODY = can_drop_to_nobody()
RUN = "gate-1"
GIT = ["git", "-c", "user.name=Human", "-c", "user.email=human@example.com"]
KERNEL = """#include <metal_stdlib>
using namespace metal;
kernel void add_one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] += 1.0f; }
"""
_TEMP = re.compile(r"(\.tmp$|^\.probe-|\.tmp\.|^\.bundle\.tmp$)")


@dataclass(frozen=True)
class Case:
    """One row: the command, what it must answer, and what it must leave."""

    name: str
    argv: tuple[str, ...]  # after `python -m metalport`; {repo} {tmp} {cache} {home} {run} expand
    code: int
    message: str  # regex searched in the one `metalport: error:` line (or in all output for exit 0)
    state: str = "fresh"  # fresh | gate | published
    faults: tuple[Fault, ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # written under {tmp} first
    setup: Callable[[Path], None] | None = None  # changes the repository copy first
    env: dict[str, str] = field(default_factory=dict)
    runs: tuple[str, ...] | None = None  # statuses of the copy's runs afterwards (default: as before)
    keystrokes: bytes | None = None  # typed at the approval prompt on a terminal
    prelude: str = ""
    own_cache: bool = False  # an empty cache folder of its own instead of the shared, warm one
    after: Callable[[Path, Outcome], None] | None = None  # checks of this row (the copy, the outcome)
    slow: bool = False  # resolves and plans the op first (several seconds)


def _git(repo: Path, *argv: str) -> str:
    return subprocess.run([*GIT, *argv], cwd=repo, capture_output=True, text=True, check=True, timeout=60).stdout


def _human_branch(repo: Path) -> None:
    _git(repo, "checkout", "-q", "-b", "metalport/heaviside")
    (repo / "NOTES.md").write_text("my own work\n")
    _git(repo, "add", "NOTES.md")
    _git(repo, "commit", "-q", "-m", "my own work")
    _git(repo, "checkout", "-q", "main")


def _bad_registry(repo: Path) -> None:
    path = repo / "aten/src/ATen/native/native_functions.yaml"
    path.write_text(path.read_text() + "\n- func: broken(Tensor self -> Tensor\n  dispatch: [\n")
    _git(repo, "commit", "-q", "-am", "a broken registry")


def _fork_remote(repo: Path) -> None:
    _git(repo, "remote", "add", "fork", "/nonexistent/fork.git")
    (repo / "metalport.yaml").write_text("remote:\n  name: fork\n  fork_owner: someone\n")


def _touch_state(repo: Path) -> None:
    (repo / ".git/metalport").mkdir(parents=True, exist_ok=True)
    (repo / ".git/metalport/state.sqlite").touch()


def _bundle_refused(copy: Path, outcome: Outcome) -> None:
    """The run folder as the full disk held it: approved and committed, failed at publish, no bundle."""
    folder = outcome.snapshots[0]
    record = json.loads((folder / "run.json").read_text())
    assert (record["status"], record["stage"]) == ("failed", "publish")
    assert "retries it" in record["reason"] and not (folder / "bundle").exists()
    assert _commits_on_branch(copy) == 1


def F(kind: str, path: str, size_kb: int = 64, fill: bool = True) -> Fault:
    return Fault(kind, path, size_kb, fill)


RUNS, MDIR, WT = "{repo}/.git/metalport/runs", "{repo}/.git/metalport", "{repo}/.git/metalport/worktrees"
STATE = "{repo}/.git/metalport/state.sqlite"
RUN_ARGS = ("run", "aten::heaviside", "--repo", "{repo}", "--no-input")
NEW_RUN = r"then `run-migration aten::heaviside --repo {repo}` again"
RESUME = r"then `metalport resume gate-1 --repo {repo}` retries"
CACHE_FIX = r"or set METALPORT_CACHE_DIR to a writable folder"
KERNELS = ("kernels", "{tmp}/k.metal", "--repo", "{repo}")
SWEEP = ("sweep", "--repo", "{repo}", "--limit", "1", "--executor", "emulated")

CASES: list[Case] = [
    # --- bad input: one line, exit 2, nothing written ---
    Case("unknown op", ("run", "aten::not_an_op_at_all", "--repo", "{repo}", "--no-input"), 2, r"not_an_op_at_all"),
    Case("op that cannot name a branch", ("run", "aten::x;rm -rf", "--repo", "{repo}", "--no-input"), 2,
         r"cannot name a branch"),
    Case("unknown model", (*RUN_ARGS, "--model", "gpt"), 2, r"unknown model 'gpt'"),
    Case("openai model without a key", (*RUN_ARGS, "--model", "openai:m"), 2, r"OPENAI_API_KEY"),
    Case("zero attempts", (*RUN_ARGS, "--max-attempts", "0"), 2, r"--max-attempts must be at least 1"),
    Case("negative wall time", (*RUN_ARGS, "--wall-time", "-5"), 2, r"--wall-time must be positive"),
    Case("--repo is not a checkout", ("run", "aten::heaviside", "--repo", "{tmp}", "--no-input"), 2, r"{tmp}"),
    Case("--config names a missing file", (*RUN_ARGS, "--config", "{tmp}/nope.yaml"), 2,
         r"{tmp}/nope.yaml: --config does not exist"),
    Case("--config names a folder", (*RUN_ARGS, "--config", "{tmp}"), 2, r"--config is a directory"),
    Case("sweep --config missing", (*SWEEP, "--config", "{tmp}/nope.yaml"), 2, r"--config does not exist"),
    Case("doctor --config missing", ("doctor", "--no-endpoint", "--config", "{tmp}/nope.yaml"), 2,
         r"--config does not exist"),
    Case("unknown key in metalport.yaml", (*RUN_ARGS, "--config", "{tmp}/bad.yaml"), 2,
         r"bad.yaml:2: unknown key 'modle' in provider; did you mean 'model'\?",
         files={"bad.yaml": "provider:\n  modle: x\n"}),
    Case("malformed registry", RUN_ARGS, 2, r"native_functions.yaml:\d+", setup=_bad_registry),
    Case("resume an unknown run", ("resume", "nope-1", "--repo", "{repo}"), 2, r"unknown run id 'nope-1'"),
    Case("resume a run id with a path in it", ("resume", "../../etc", "--repo", "{repo}"), 2,
         r"not a valid run id"),
    Case("review approve an unknown run", ("review", "approve", "nope-1", "--repo", "{repo}"), 2,
         r"unknown run id 'nope-1'"),
    Case("kernels on a missing file", ("kernels", "{tmp}/missing.metal", "--repo", "{repo}"), 2, r"missing.metal"),
    Case("workspace init into a non-empty folder", ("workspace", "init", "{tmp}"), 2, r"not empty",
         files={"keep.txt": "mine\n"}),
    Case("base that is not a commit", (*RUN_ARGS, "--base", "no-such-ref"), 2,
         r"base 'no-such-ref' is not a commit", slow=True),
    Case("branch holding a human's commit", RUN_ARGS, 2, r"metalport did not make", setup=_human_branch,
         slow=True),
    # --- run records (.git/metalport/runs) ---
    Case("run records on a read-only filesystem", RUN_ARGS, 2,
         r"runs/heaviside-[\w-]+: cannot write the run record: read-only filesystem; remount it read-write; "
         + NEW_RUN, faults=(F("ro", RUNS),)),
    Case("run records on a full disk", RUN_ARGS, 2,
         r"runs/heaviside-[\w-]+/run.json: cannot write the run record: disk full; free space on that "
         r"filesystem; " + NEW_RUN, faults=(F("full", RUNS),)),
    Case("run records not writable", RUN_ARGS, 2,
         r"runs/heaviside-[\w-]+: cannot write the run record: permission denied; make it writable",
         faults=(F("denied", RUNS),)),
    Case("whole metalport folder read-only", RUN_ARGS, 2, r"cannot write the run record: read-only filesystem",
         faults=(F("ro", MDIR),)),
    Case("whole repository read-only", RUN_ARGS, 2, r"cannot write the run record: read-only filesystem",
         faults=(F("ro", "{repo}"),)),
    # --- checkpoints (.git/metalport/state.sqlite) ---
    Case("checkpoints on a read-only filesystem", RUN_ARGS, 2,
         r"state.sqlite: cannot write the checkpoints: read-only filesystem; remount it read-write",
         faults=(F("ro", STATE),), setup=_touch_state),
    Case("checkpoints on a full disk", RUN_ARGS, 2,
         r"state.sqlite: cannot write the checkpoints: disk full; free space", faults=(F("full-file", STATE),),
         setup=_touch_state),
    Case("checkpoints not writable", RUN_ARGS, 2, r"state.sqlite: cannot write the checkpoints: permission denied",
         faults=(F("denied", STATE),), setup=_touch_state),
    # --- worktrees (git worktree add at the sandbox step) ---
    Case("worktree on a full disk", RUN_ARGS, 2,
         r"worktrees: cannot write the worktree of metalport/heaviside: disk full; free space on that filesystem; "
         r"then start a new run", faults=(F("full", WT, size_kb=300, fill=False),), slow=True),
    Case("worktree on a read-only filesystem", RUN_ARGS, 2,
         r"worktrees: cannot write the worktree of metalport/heaviside: read-only filesystem",
         faults=(F("ro", WT),), slow=True),
    Case("worktree folder not writable", RUN_ARGS, 2,
         r"worktrees: cannot write the worktree of metalport/heaviside: permission denied",
         faults=(F("denied", WT),), slow=True),
    # --- the shader cache ---
    Case("shader cache on a read-only filesystem", KERNELS, 2,
         r"{cache}: cannot write the shader cache: read-only filesystem; remount it read-write, " + CACHE_FIX,
         faults=(F("ro", "{cache}"),), own_cache=True),
    Case("shader cache on a full disk", KERNELS, 2,
         r"{cache}: cannot write the shader cache: disk full; free space on that filesystem, " + CACHE_FIX,
         faults=(F("full", "{cache}"),), own_cache=True),
    Case("shader cache not writable", KERNELS, 2, r"{cache}: cannot write the shader cache: permission denied",
         faults=(F("denied", "{cache}"),), own_cache=True),
    Case("default cache under a read-only home", KERNELS, 2,
         r"{home}/.cache/metalport/shaders: cannot write the shader cache: read-only filesystem",
         faults=(F("ro", "{home}"),), env={"METALPORT_CACHE_DIR": ""}),
    # --- the sweep lock and dashboard ---
    Case("sweep lock on a read-only filesystem", SWEEP, 2,
         r"sweep.lock: cannot write the sweep lock: read-only filesystem", faults=(F("ro", MDIR),)),
    Case("sweep lock on a full disk", SWEEP, 2, r"cannot write the sweep lock: disk full",
         faults=(F("full", MDIR),)),
    Case("sweep lock not writable", SWEEP, 2, r"sweep.lock: cannot write the sweep lock: permission denied",
         faults=(F("denied", MDIR),)),
    Case("a second sweep while one holds the lock", SWEEP, 3, r"another sweep is running on this repository",
         prelude="mkdir -p {repo}/.git/metalport; flock {repo}/.git/metalport/sweep.lock sleep 60 </dev/null >/dev/null 2>&1 & HOLDER=$!; "
                 "sleep 0.5"),
    Case("dashboard on a read-only filesystem", (*SWEEP, "--dashboard", "{tmp}/board/dash.md"), 2,
         r"board/dash.md: cannot write the sweep dashboard: read-only filesystem; remount it read-write, or pass "
         r"--dashboard a writable path", faults=(F("ro", "{tmp}/board"),)),
    Case("dashboard on a full disk", (*SWEEP, "--dashboard", "{tmp}/board/dash.md"), 2,
         r"board/dash.md: cannot write the sweep dashboard: disk full", faults=(F("full", "{tmp}/board"),)),
    Case("dashboard not writable", (*SWEEP, "--dashboard", "{tmp}/board/dash.md"), 2,
         r"cannot write the sweep dashboard: permission denied", faults=(F("denied", "{tmp}/board"),)),
    # --- workspace init ---
    Case("workspace init on a read-only filesystem", ("workspace", "init", "{tmp}/ro/ws"), 2,
         r"read-only filesystem", faults=(F("ro", "{tmp}/ro"),)),
    Case("workspace init on a full disk", ("workspace", "init", "{tmp}/small/ws"), 2, r"disk full",
         faults=(F("full", "{tmp}/small", size_kb=256, fill=False),)),
    # --- a run at the gate ---
    Case("second run of an op waiting for review", RUN_ARGS, 2,
         r"run gate-1 of aten::heaviside is waiting for review on metalport/heaviside", state="gate"),
    Case("Ctrl-D at the approval prompt", ("resume", RUN, "--repo", "{repo}"), 130, r"interrupted",
         state="gate", keystrokes=b"\x04"),
    Case("Ctrl-C at the approval prompt", ("resume", RUN, "--repo", "{repo}"), 130, r"interrupted",
         state="gate", keystrokes=b"\x03"),
    Case("reject without feedback", ("resume", RUN, "--reject", " ", "--repo", "{repo}"), 2,
         r"--reject needs feedback", state="gate"),
    Case("approve with read-only checkpoints", ("resume", RUN, "--approve", "--repo", "{repo}"), 2,
         r"state.sqlite: cannot write the checkpoints: read-only filesystem", state="gate",
         faults=(F("ro", STATE),)),
    Case("approve with a read-only run folder", ("resume", RUN, "--approve", "--repo", "{repo}"), 2,
         r"runs/gate-1/.lock: cannot write the run lock: read-only filesystem; remount it read-write",
         state="gate", faults=(F("ro", RUNS + "/gate-1"),)),
    Case("approve with no room for the PR bundle", ("resume", RUN, "--approve", "--repo", "{repo}"), 2,
         r"runs/gate-1: cannot write the PR bundle: disk full; free space on that filesystem; " + RESUME,
         state="gate", faults=(F("full", RUNS + "/gate-1", size_kb=-8, fill=False),), after=_bundle_refused),
    Case("approve with a read-only object store", ("resume", RUN, "--approve", "--repo", "{repo}"), 2,
         r"read-only filesystem; remount it read-write; " + RESUME, state="gate",
         faults=(F("ro", "{repo}/.git/objects"),), runs=("failed",)),
    Case("approve when the push fails", ("resume", RUN, "--approve", "--repo", "{repo}"), 2,
         RESUME + r" the publish", state="gate", setup=_fork_remote, env={"GITHUB_TOKEN": "ghp_faultsuite0123456789"},
         runs=("failed",)),
    # --- a published run ---
    Case("approve a published run", ("resume", RUN, "--approve", "--repo", "{repo}"), 2,
         r"run gate-1 is published at stage publish, not awaiting review; it is already published \(",
         state="published"),
    Case("review approve a published run", ("review", "approve", RUN, "--repo", "{repo}"), 2,
         r"it is already published \(.*bundle\); nothing left to decide", state="published"),
    Case("abort a published run", ("resume", RUN, "--abort", "--repo", "{repo}"), 2, r"it is already published",
         state="published"),
    Case("list runs of a read-only repository", ("runs", "--repo", "{repo}"), 0, r"gate-1\s.*published",
         state="published", faults=(F("ro", "{repo}"),)),
]


@pytest.fixture(scope="session")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """state -> (canonical path, repository to copy): a fresh workspace, one at the gate, one published."""
    if not NS:
        pytest.skip("unshare -Urm cannot make mounts here (user namespaces disabled)")
    top = tmp_path_factory.mktemp("adversarial")
    cache, home = top / "cache", top / "home"
    home.mkdir()
    env = child_env(home, cache)
    fresh = top / "fresh" / "ws"
    subprocess.run(metalport_argv(["workspace", "init", str(fresh)]), env=env, check=True, capture_output=True,
                   timeout=300)
    gate = top / "gate" / "ws"
    shutil.copytree(fresh, gate, symlinks=True)
    proc = subprocess.run(metalport_argv(["run", "aten::heaviside", "--repo", str(gate), "--no-input",
                                          "--run-id", RUN, "--executor", "emulated"]),
                          env=env, capture_output=True, text=True, timeout=600, cwd=top)
    assert proc.returncode == 0 and "waiting for review" in proc.stderr, proc.stderr[-2000:]
    published = top / "published" / "ws"
    shutil.copytree(gate, published, symlinks=True)
    done = run_case(metalport_argv(["resume", RUN, "--approve", "--repo", str(gate)]), canonical=gate,
                    copy=published, faults=[], env=env, cwd=top, scratch=top)
    assert done.code == 0 and "published" in done.stderr, done.stderr[-2000:]
    return {"fresh": (fresh, fresh), "gate": (gate, gate), "published": (gate, published), "cache": (cache, home)}


def _metalport_branches(repo: Path) -> set[str]:
    return set(_git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/metalport/").split())


def _statuses(repo: Path) -> tuple[str, ...]:
    runs = repo / ".git/metalport/runs"
    found = []
    for path in sorted(runs.glob("*/run.json")) if runs.is_dir() else ():
        found.append(json.loads(path.read_text())["status"])
    folders = sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []
    assert len(folders) == len(found), f"run folders without a record: {folders}"
    return tuple(sorted(found))


def _assert_nothing_half_written(*roots: Path) -> None:
    for root in roots:
        if not root.exists():
            continue
        for path in root.rglob("*"):
            assert not _TEMP.search(path.name), f"temp file left behind: {path}"
            if path.suffix == ".json" and path.is_file():
                json.loads(path.read_text())  # a half-written record would not parse


def _commits_on_branch(repo: Path) -> int:
    if "metalport/heaviside" not in _metalport_branches(repo):
        return 0
    return len(_git(repo, "rev-list", "main..metalport/heaviside").split())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fault(case: Case, places: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    if any(f.kind == "denied" for f in case.faults) and not NOBODY:
        pytest.skip("EACCES needs root (to hand folders to nobody) and setpriv")
    canonical, source = places[case.state]
    shared_cache, _ = places["cache"]
    denied = any(f.kind == "denied" for f in case.faults)
    scratch = Path(tempfile.mkdtemp(prefix="fault-", dir=tmp_path))
    work, copy_parent = scratch / "cwd", scratch / "copy"
    work.mkdir()
    copy = copy_parent / "ws"
    shutil.copytree(source, copy, symlinks=True)
    if denied:
        canonical = copy  # no namespace: nobody works on the copy where it is
    home, cache = scratch / "home", (scratch / "cache" if case.own_cache else shared_cache)
    home.mkdir()
    values = {"repo": str(canonical), "tmp": str(work), "cache": str(cache), "home": str(home), "run": RUN}
    for name, text in case.files.items():
        (work / name).write_text(text)
    if "{tmp}/k.metal" in case.argv:
        (work / "k.metal").write_text(KERNEL)
    if case.setup:
        case.setup(copy)
    before_branches, before_runs = _metalport_branches(copy), _statuses(copy)
    before_commits = _commits_on_branch(copy)
    env = child_env(home, cache)
    env.update({k: v for k, v in case.env.items() if v})
    for key in [k for k, v in case.env.items() if not v]:
        env.pop(key, None)

    def place(template: str) -> Path:
        text = template.format(**values)
        return Path(text.replace(str(canonical), str(copy), 1)) if denied else Path(text)

    faults = [(f.kind, place(f.path), f) for f in case.faults]
    if denied:
        give_to_nobody(scratch, [path for kind, path, _ in faults if kind == "denied"])
    argv = metalport_argv([a.format(**values) for a in case.argv])
    outcome = run_case(argv, canonical=canonical, copy=copy, faults=faults, env=env, cwd=work, scratch=scratch,
                       keystrokes=case.keystrokes, prelude=case.prelude.format(**values))
    if denied:
        subprocess.run(["chown", "-R", "0:0", str(scratch)], check=True, timeout=60)

    _assert_answer(case, outcome, {k: re.escape(v) for k, v in values.items()})
    assert _metalport_branches(copy) <= before_branches, "a stray metalport branch was left"
    worktrees = copy / ".git/metalport/worktrees"
    if case.state == "fresh":
        assert not worktrees.exists() or not any(worktrees.iterdir()), "a stray worktree was left"
        assert _git(copy, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert _statuses(copy) == (case.runs if case.runs is not None else before_runs)
    if case.state == "gate":
        assert _commits_on_branch(copy) <= max(before_commits, 1)  # never a second commit
    _assert_nothing_half_written(copy / ".git/metalport", cache, home, *outcome.snapshots)
    if case.after:
        case.after(copy, outcome)


def _assert_answer(case: Case, outcome: Outcome, values: dict[str, str]) -> None:
    pattern = case.message.format(**values)
    output = outcome.stdout + outcome.stderr
    assert "Traceback" not in output, output[-3000:]
    assert outcome.code == case.code, output[-3000:]
    if case.code == 0:
        assert re.search(pattern, output), output[-3000:]
        return
    prefix = "metalport: interrupted" if case.code == 130 else "metalport: error: "
    lines = [line for line in outcome.stderr.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, outcome.stderr[-3000:]
    assert re.search(pattern, lines[0]), lines[0]


def test_the_table_covers_every_fault_and_place() -> None:
    """At least 40 rows; each place metalport writes meets EROFS, ENOSPC and EACCES."""
    assert len(CASES) >= 40
    places = {"run record": RUNS, "checkpoints": STATE, "worktree": WT, "shader cache": "{cache}",
              "sweep lock": MDIR, "dashboard": "{tmp}/board"}
    for what, path in places.items():
        kinds = {f.kind for c in CASES for f in c.faults if f.path == path}
        assert {"ro", "denied"} <= kinds and kinds & {"full", "full-file"}, (what, kinds)


def test_approval_publishes_with_the_template_when_the_model_is_down(
        places: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    """`--model openai:…`: the endpoint answers the port, is gone at approval; the PR text falls back."""
    from metalport.port.plan.functors import recipe_table
    from tests.llm_server import ScriptedLLM, json_reply

    fresh, _ = places["fresh"]
    cache, _ = places["cache"]
    repo = tmp_path / "ws"
    shutil.copytree(fresh, repo, symlinks=True)
    home = tmp_path / "home"
    home.mkdir()
    env = {**child_env(home, cache), "OPENAI_API_KEY": "sk-faultsuite-0123456789abcdef"}
    answer = {"functor_source": recipe_table()["heaviside"].source, "summary": "heaviside from the table"}
    with ScriptedLLM([json_reply(answer)]) as server:
        config = tmp_path / "metalport.yaml"
        config.write_text(f"provider:\n  base_url: {server.base_url}\n  max_retries: 0\n  timeout_s: 5\n")
        gate = subprocess.run(metalport_argv(["run", "aten::heaviside", "--repo", str(repo), "--no-input",
                                              "--model", "openai:scripted-model", "--config", str(config),
                                              "--run-id", "llm-1", "--executor", "emulated"]),
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert gate.returncode == 0 and "waiting for review" in gate.stderr, gate.stderr[-3000:]
    approved = subprocess.run(metalport_argv(["resume", "llm-1", "--approve", "--repo", str(repo)]), env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert approved.returncode == 0, approved.stderr[-3000:]
    assert "note: PR text from the template: the model gave none (" in approved.stderr
    assert "Traceback" not in approved.stderr
    record = json.loads((repo / ".git/metalport/runs/llm-1/run.json").read_text())
    assert record["status"] == "published"
    body = (repo / ".git/metalport/runs/llm-1/bundle/PR.md").read_text()
    assert "Ports `aten::heaviside` to a native Metal kernel on MPS" in body
    assert "sk-faultsuite" not in body
    assert len(_git(repo, "rev-list", "main..metalport/heaviside").split()) == 1


def test_a_failed_publish_says_how_to_retry_and_the_retry_publishes(
        places: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    """The push to a fork that is not there fails after the commit; the printed resume finishes it."""
    canonical, source = places["gate"]
    cache, _ = places["cache"]
    copy = tmp_path / "copy" / "ws"
    shutil.copytree(source, copy, symlinks=True)
    _fork_remote(copy)
    home = tmp_path / "home"
    home.mkdir()
    env = {**child_env(home, cache), "GITHUB_TOKEN": "ghp_faultsuite0123456789abcd"}
    failed = run_case(metalport_argv(["resume", RUN, "--approve", "--repo", str(canonical)]), canonical=canonical,
                      copy=copy, faults=[], env=env, cwd=tmp_path, scratch=tmp_path)
    line = [x for x in failed.stderr.splitlines() if x.startswith("metalport: error: ")]
    assert failed.code == 2 and len(line) == 1, failed.stderr[-3000:]
    command = re.search(r"then `(metalport resume gate-1 --repo \S+)` retries the publish", line[0])
    assert command, line[0]
    (copy / "metalport.yaml").unlink()  # the fix: no fork after all, a PR bundle instead
    retried = run_case(metalport_argv(command.group(1).split()[1:]), canonical=canonical, copy=copy, faults=[],
                       env=env, cwd=tmp_path, scratch=tmp_path)
    assert retried.code == 0 and "published" in retried.stderr, retried.stderr[-3000:]
    assert len(_git(copy, "rev-list", "main..metalport/heaviside").split()) == 1  # the one commit, reused
