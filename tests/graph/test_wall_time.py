"""`--wall-time` bounds the whole run: once spent, the run ends budget-exhausted at the next node."""

from __future__ import annotations

from pathlib import Path

from metalport.graph import get_run
from tests.graph.conftest import branches, metalport, worktrees


def test_a_spent_wall_time_ends_the_run_at_the_next_node(fixture_repo: Path) -> None:
    result = metalport("run", "aten::heaviside", "--repo", str(fixture_repo), "--executor", "emulated",
                       "--no-input", "--run-id", "wall-1", "--wall-time", "0.05")  # below resolve's own time
    assert result.returncode == 1, result.stderr[-2000:]
    assert "→ test" not in result.stderr and "→ approve" not in result.stderr
    record = get_run(fixture_repo, "wall-1")
    assert record.status == "budget-exhausted"
    assert "reached the budget of 0.05 s (--wall-time) before" in (record.reason or "")
    assert "budget-exhausted: wall time" in result.stderr
    assert branches(fixture_repo) == ["main"] and worktrees(fixture_repo) == 1
