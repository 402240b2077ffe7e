"""Failure text is data: brackets in a reason or a note print whole, never eaten as rich markup."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from metalport.graph.console import ProgressPrinter, conclude
from metalport.run_record import RunRecord

REASON = "test failed: heaviside float32 HL=[home,main,[bold]x[/bold]] at sample 3 [red]"


def _record(status: str, reason: str) -> RunRecord:
    return RunRecord(run_id="r-1", op="aten::heaviside", status=status, stage="test", attempts=1, branch=None,
                     worktree=None, created_at="2026-01-01T00:00:00+00:00", updated_at="2026-01-01T00:00:00+00:00",
                     reason=reason, feedback=None, pr_url=None, bundle_path=None, verdicts={}, usage={})


def test_a_failure_reason_with_brackets_prints_whole(tmp_path: Path) -> None:
    out = io.StringIO()
    progress = ProgressPrinter(Console(file=out, soft_wrap=True, width=400))
    progress({"event": "note", "node": "test", "message": "tensor HL=[home,main,…] kept"})
    code = conclude(_record("failed", REASON), tmp_path, progress, interactive=False, as_json=False,
                    resume=lambda *a: None)
    assert code == 1
    text = out.getvalue()
    assert "note: tensor HL=[home,main,…] kept" in text
    assert f"failed: {REASON}" in text


def test_elapsed_leaves_out_the_wait_at_the_gate() -> None:
    record = RunRecord.from_dict({**_record("published", "ok").to_dict(), "created_at": "2026-01-01T00:00:00Z",
                                  "updated_at": "2026-01-01T01:00:30Z", "paused_s": 3600.0})
    assert record.elapsed_s() == 30.0
    old = {k: v for k, v in record.to_dict().items() if k != "paused_s"}  # a record from before the field
    assert RunRecord.from_dict(old).elapsed_s() == 3630.0
