"""kill -9 at every node (Note [test kill hook] in metalport/graph/context.py), then `metalport resume`.

One run is killed once per node, each `resume` process dying at the next one, so every node is
entered by a process that dies there and re-run by the next; the run still ends with exactly one
commit. `METALPORT_TEST_KILL_AT` is a test-only hook: the process SIGKILLs itself at that point.
"""

from __future__ import annotations

import signal
from pathlib import Path

from metalport.graph import get_run, run_dir
from metalport.graph.context import KILL_ENV
from metalport.graph.records import is_live
from tests.graph.conftest import branches, commits_on, git, metalport, user_tree, worktrees

KILLED = -signal.SIGKILL
TITLE = "[MPS] Migrate heaviside to native Metal"


def _killed_at(repo: Path, run_id: str, point: str, *argv: str) -> None:
    result = metalport(*argv, env={KILL_ENV: point})
    assert result.returncode == KILLED, (point, result.stderr[-2000:])
    record = get_run(repo, run_id)
    assert (record.status, record.stage) == ("running", point.split(":")[0]) and not is_live(repo, run_id)


def test_kill_at_each_node_then_resume_finishes_with_one_commit(fixture_repo: Path, no_github_token: None) -> None:
    repo, run_id = str(fixture_repo), "kill-1"
    before = user_tree(fixture_repo)
    _killed_at(fixture_repo, run_id, "resolve", "run", "aten::heaviside", "--repo", repo, "--executor", "emulated",
               "--no-input", "--run-id", run_id)
    for point in ("plan", "sandbox", "edit", "check", "build", "test", "approve"):
        _killed_at(fixture_repo, run_id, point, "resume", run_id, "--repo", repo, "--no-input")
    paused = metalport("resume", run_id, "--repo", repo, "--no-input")
    assert paused.returncode == 0 and f"metalport resume {run_id} --approve" in paused.stderr
    assert get_run(fixture_repo, run_id).status == "awaiting-review"

    _killed_at(fixture_repo, run_id, "publish", "resume", run_id, "--repo", repo, "--approve")
    _killed_at(fixture_repo, run_id, "publish:committed", "resume", run_id, "--repo", repo)
    assert commits_on(fixture_repo, "metalport/heaviside") == [TITLE]
    done = metalport("resume", run_id, "--repo", repo)
    assert done.returncode == 0, done.stderr[-2000:]
    record = get_run(fixture_repo, run_id)
    assert record.status == "published" and record.attempts == 1
    assert commits_on(fixture_repo, "metalport/heaviside") == [TITLE]
    assert (run_dir(fixture_repo, run_id) / "bundle/PR.md").is_file()
    assert branches(fixture_repo) == ["main", "metalport/heaviside"] and worktrees(fixture_repo) == 1
    assert user_tree(fixture_repo) == before


def test_kill_at_diagnose_then_resume_ends_failed_and_a_stopped_run_can_be_aborted(fixture_repo: Path) -> None:
    host = fixture_repo / "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
    # Neither a REGISTER_DISPATCH block to join nor a namespace comment to insert before: the edit fails.
    host.write_text(host.read_text().replace("} // namespace at::native", "}")
                    .replace("REGISTER_DISPATCH(atan2_stub, &atan2_mps_kernel)\n", ""))
    git(fixture_repo, "commit", "-q", "-am", "host file without its namespace comment or registrations")
    repo, run_id = str(fixture_repo), "kill-2"
    _killed_at(fixture_repo, run_id, "diagnose", "run", "aten::heaviside", "--repo", repo, "--executor",
               "emulated", "--no-input", "--run-id", run_id)
    result = metalport("resume", run_id, "--repo", repo)
    assert result.returncode == 1 and "failed: edit failed" in result.stderr
    assert get_run(fixture_repo, run_id).status == "failed"
    assert branches(fixture_repo) == ["main"] and worktrees(fixture_repo) == 1

    # A run stopped before the gate can be dropped: worktree and branch go, the record stays.
    _killed_at(fixture_repo, "kill-3", "edit", "run", "aten::heaviside", "--repo", repo, "--executor", "emulated",
               "--no-input", "--run-id", "kill-3")
    dropped = metalport("resume", "kill-3", "--repo", repo, "--abort")
    assert dropped.returncode == 0 and "aborted: aborted by the user at stage edit" in dropped.stderr
    assert get_run(fixture_repo, "kill-3").status == "aborted"
    assert branches(fixture_repo) == ["main"] and worktrees(fixture_repo) == 1
