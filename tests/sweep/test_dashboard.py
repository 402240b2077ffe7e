"""The dashboard's Markdown and JSON: every op with its outcome and reason, written atomically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metalport.sweep import OpOutcome, SweepReport, load_report, refresh_dashboard, render_markdown
from metalport.sweep.dashboard import write_dashboard


def _report(outcomes: tuple[OpOutcome, ...], **kwargs: object) -> SweepReport:
    return SweepReport(repo="/src/pytorch", started_at="2026-12-02 14:00:00 UTC",
                       finished_at="2026-12-02 14:05:00 UTC", options={"status": "missing", "concurrency": 2},
                       outcomes=outcomes, **kwargs)


OUTCOMES = (
    OpOutcome(op="heaviside", outcome="awaiting-review", reason="run r1 passed its checks and awaits review",
              run_id="r1", stage="approve", attempts=1, branch="metalport/heaviside",
              command="metalport review show r1"),
    OpOutcome(op="frexp", outcome="failed", reason="needs an LLM at stage plan: no recipe for frexp",
              run_id="r2", stage="plan", attempts=0),
    OpOutcome(op="sign", outcome="rejected", reason="rejected by the reviewer: use c10::metal::sign",
              run_id="r3", feedback="use c10::metal::sign"),
    OpOutcome(op="sgn", outcome="published", reason="approved; bundle /tmp/b/sgn", run_id="r4", link="/tmp/b/sgn"),
    OpOutcome(op="mode", outcome="skipped", reason="open PR #7 by alice is on it: \"mps: mode | fast\"",
              skip="open-pr", link="https://github.test/pull/7"),
    OpOutcome(op="acosh", outcome="candidate", reason="not started: --limit 1 runs started"),
)


def test_markdown_has_a_section_per_outcome_with_reasons_and_next_steps() -> None:
    text = render_markdown(_report(OUTCOMES, stop_reason="--limit 1 runs started",
                                   usage={"calls": 3, "input_tokens": 900, "output_tokens": 100, "cost_usd": 0.01}))
    assert text.startswith("# metalport sweep of `/src/pytorch`\n")
    assert "6 ops looked at — 1 awaiting review, 1 failed, 1 rejected, 1 published" in text
    for title in ("## Awaiting review (1)", "## Failed (1)", "## Rejected (1)", "## Published (1)",
                  "## Candidates not started (1)", "## Skipped (1)"):
        assert title in text
    assert "| `heaviside` | `r1` | approve | 1 | run r1 passed its checks and awaits review | " \
           "`metalport review show r1` |" in text
    assert "needs an LLM at stage plan: no recipe for frexp" in text
    assert "rejected by the reviewer: use c10::metal::sign" in text
    assert "/tmp/b/sgn" in text
    assert 'mps: mode \\| fast' in text  # a pipe in a reason cannot break the table
    assert "**Stopped starting runs:** --limit 1 runs started" in text
    assert "3 model calls, 1000 tokens, $0.0100" in text


def test_long_sections_fold_into_details() -> None:
    many = tuple(OpOutcome(op=f"op{i}", outcome="candidate", reason="not started: budget") for i in range(20))
    text = render_markdown(_report(many))
    assert "<details><summary>show all</summary>" in text and text.count("| `op") == 20


def test_an_outcome_needs_a_known_kind_and_a_reason() -> None:
    with pytest.raises(ValueError, match="no reason"):
        OpOutcome(op="x", outcome="skipped", reason="")
    with pytest.raises(ValueError, match="unknown outcome"):
        OpOutcome(op="x", outcome="maybe", reason="why not")


def test_written_atomically_and_refreshed_from_run_records(tmp_path: Path) -> None:
    mdir = tmp_path / "metalport"
    report = write_dashboard(_report(OUTCOMES), mdir)
    md, js = Path(report.markdown_path), Path(report.json_path)
    assert (md, js) == (mdir / "dashboard.md", mdir / "dashboard.json")
    data = json.loads(js.read_text())
    assert data["counts"] == {"awaiting-review": 1, "failed": 1, "rejected": 1, "published": 1, "skipped": 1,
                              "candidate": 1}
    assert [o["op"] for o in data["outcomes"]] == ["heaviside", "frexp", "sign", "sgn", "mode", "acosh"]
    assert sorted(p.name for p in mdir.iterdir()) == ["dashboard.json", "dashboard.md", "sweep"]

    from metalport.run_record import RunRecord

    record = RunRecord("r1", "aten::heaviside", "published", "publish", 1, "metalport/heaviside", None,
                       "2026-12-02T14:00:00Z", "2026-12-02T14:10:00Z", pr_url="https://github.test/pull/9")
    refreshed = refresh_dashboard(mdir, lambda rid: record if rid == "r1" else None)
    assert refreshed is not None and refreshed.outcomes[0].outcome == "published"
    text = md.read_text()
    assert "## Awaiting review" not in text and "approved; PR https://github.test/pull/9" in text
    assert load_report(mdir) == refreshed
    assert load_report(tmp_path / "nowhere") is None


def test_dashboard_flag_names_the_markdown_and_the_json_goes_beside_it() -> None:
    from metalport.sweep.dashboard import paths_for

    assert paths_for(Path("/srv/sweep.md")) == (Path("/srv/sweep.md"), Path("/srv/sweep.json"))
    assert paths_for(Path("/srv/sweep.json")) == (Path("/srv/sweep.md"), Path("/srv/sweep.json"))
