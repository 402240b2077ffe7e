"""A conformance verdict the emulated host cannot reach is shown as "not judged", never as passed or
failed (Note [not judged] in checks.report)."""

from __future__ import annotations

import pytest

from metalport.graph.evidence import verdict_lines


@pytest.mark.parametrize("status, skipped", [("no-host-model", 0), ("partial", 18)])
def test_a_not_judged_test_verdict_says_so(status: str, skipped: int) -> None:
    dtypes = [{"dtype": "float32", "skipped": skipped, "opinfo": {"samples": 9, "passed": 9}}] if skipped else []
    state = {"verdicts": {"test": {"ok": True, "status": status, "judged": False,
                                   "report": {"status": status, "reason": "no emulated host model; verify on macOS",
                                              "dtypes": dtypes, "backend": "emulated"}}}}
    (line,) = verdict_lines(state)
    assert line.startswith(f"test: not judged: {status} (") and "verify on macOS" in line
    assert "passed" not in line.split(";")[0] and "failed" not in line
