"""The sweep dashboard: one Markdown page (fit for a tracking issue) and its JSON twin.

Both are rendered from a `SweepReport` and written atomically. The report is also kept as
`<git-common-dir>/metalport/sweep/last.json`, so `metalport review` can refresh the dashboard
after an approval, rejection or abort without a new sweep.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from metalport.atomic import write_text_atomic
from metalport.errors import filesystem_error
from metalport.sweep.model import (ABORTED, AWAITING, CANDIDATE, FAILED, PUBLISHED, REJECTED, RUNNING, SKIPPED,
                                   OpOutcome, refreshed)

_SECTIONS = ((AWAITING, "Awaiting review"), (RUNNING, "Running"), (FAILED, "Failed"), (REJECTED, "Rejected"),
             (PUBLISHED, "Published"), (ABORTED, "Aborted"), (CANDIDATE, "Candidates not started"),
             (SKIPPED, "Skipped"))
_FOLD_ROWS = 15  # longer sections go in a <details> block so the issue stays readable


@dataclass(frozen=True)
class SweepReport:
    """What one sweep did: every op it looked at with its outcome, and why launching stopped."""

    repo: str
    started_at: str
    finished_at: str | None
    options: dict[str, Any]
    outcomes: tuple[OpOutcome, ...]
    stop_reason: str | None = None
    usage: dict[str, float] = field(default_factory=dict)
    started_runs: tuple[str, ...] = ()
    resumed_runs: tuple[str, ...] = ()
    markdown_path: str | None = None
    json_path: str | None = None
    repo_flag: str = ""

    def counts(self) -> dict[str, int]:
        """How many ops ended in each outcome (zero counts left out)."""
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the dashboard's JSON and the sweep's saved state)."""
        data = asdict(self)
        data["outcomes"] = [o.to_dict() for o in self.outcomes]
        data["started_runs"] = list(self.started_runs)
        data["resumed_runs"] = list(self.resumed_runs)
        data["counts"] = self.counts()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepReport:
        """The inverse of `to_dict`."""
        data = {k: v for k, v in data.items() if k != "counts"}
        data["outcomes"] = tuple(OpOutcome.from_dict(o) for o in data["outcomes"])
        data["started_runs"] = tuple(data.get("started_runs", ()))
        data["resumed_runs"] = tuple(data.get("resumed_runs", ()))
        return cls(**data)


def render_markdown(report: SweepReport) -> str:
    """The dashboard as Markdown: a summary line, then one table per outcome."""
    counts = report.counts()
    summary = ", ".join(f"{counts[key]} {title.lower()}" for key, title in _SECTIONS if counts.get(key))
    when = f"started {report.started_at}" + (f", finished {report.finished_at}" if report.finished_at
                                              else ", still running")
    lines = [f"# metalport sweep of `{report.repo}`", "",
             f"Sweep {when}: {len(report.outcomes)} ops looked at — {summary or 'nothing to do'}.", ""]
    filters = ", ".join(f"{k} {v}" for k, v in report.options.items() if v not in (None, [], ""))
    if filters:
        lines += [f"Options: {filters}.", ""]
    if report.stop_reason:
        lines += [f"**Stopped starting runs:** {report.stop_reason}", ""]
    if report.usage:
        lines += ["Usage of the runs this sweep started: " + _usage_text(report.usage) + ".", ""]
    for key, title in _SECTIONS:
        rows = [o for o in report.outcomes if o.outcome == key]
        if not rows:
            continue
        table = ["| op | run | stage | attempts | reason | next |", "|---|---|---|---|---|---|"]
        table += [_row(o) for o in rows]
        lines += [f"## {title} ({len(rows)})", ""]
        if len(rows) > _FOLD_ROWS:
            lines += ["<details><summary>show all</summary>", "", *table, "", "</details>"]
        else:
            lines += table
        lines.append("")
    return "\n".join(lines)


def render_json(report: SweepReport) -> str:
    """The dashboard as indented JSON."""
    return json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n"


def default_paths(metalport_dir: Path) -> tuple[Path, Path]:
    """Where the dashboard goes without --dashboard: `dashboard.md` and `dashboard.json`."""
    return metalport_dir / "dashboard.md", metalport_dir / "dashboard.json"


def paths_for(path: Path) -> tuple[Path, Path]:
    """The (Markdown, JSON) pair for a --dashboard PATH: PATH and PATH with `.json` (or `.md` for a .json PATH)."""
    if path.suffix == ".json":
        return path.with_suffix(".md"), path
    return path, path.with_suffix(".json")


def state_path(metalport_dir: Path) -> Path:
    """The saved report of the latest sweep."""
    return metalport_dir / "sweep" / "last.json"


def write_dashboard(report: SweepReport, metalport_dir: Path) -> SweepReport:
    """Write the Markdown, the JSON and the saved state, each atomically; returns the report written."""
    markdown, json_path = Path(report.markdown_path or ""), Path(report.json_path or "")
    if not report.markdown_path or not report.json_path:
        markdown, json_path = default_paths(metalport_dir)
        report = replace(report, markdown_path=str(markdown), json_path=str(json_path))
    try:
        write_text_atomic(markdown, render_markdown(report))
        write_text_atomic(json_path, render_json(report))
        write_text_atomic(state_path(metalport_dir), render_json(report))
    except OSError as err:
        raise filesystem_error(err, what="the sweep dashboard",
                               elsewhere="pass --dashboard a writable path") from None
    return report


def load_report(metalport_dir: Path) -> SweepReport | None:
    """The latest sweep's saved report, or None when no sweep has run here."""
    path = state_path(metalport_dir)
    if not path.exists():
        return None
    return SweepReport.from_dict(json.loads(path.read_text(encoding="utf-8")))


def refresh_dashboard(metalport_dir: Path, lookup: Callable[[str], Any | None]) -> SweepReport | None:
    """Re-derive run-tied outcomes of the latest sweep from `lookup(run_id)` and rewrite its dashboard."""
    report = load_report(metalport_dir)
    if report is None:
        return None
    outcomes = tuple(refreshed(o, lookup(o.run_id) if o.run_id else None, repo_flag=report.repo_flag)
                     for o in report.outcomes)
    return write_dashboard(replace(report, outcomes=outcomes), metalport_dir)


def _row(o: OpOutcome) -> str:
    run = f"`{o.run_id}`" if o.run_id else ""
    nxt = f"`{o.command}`" if o.command else (o.link or "")
    cells = [f"`{o.op}`", run, o.stage or "", "" if o.attempts is None else str(o.attempts), o.reason, nxt]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _usage_text(usage: dict[str, float]) -> str:
    parts = [f"{int(usage.get('calls', 0))} model calls",
             f"{int(usage.get('input_tokens', 0)) + int(usage.get('output_tokens', 0))} tokens",
             f"${usage.get('cost_usd', 0.0):.4f}"]
    return ", ".join(parts)
