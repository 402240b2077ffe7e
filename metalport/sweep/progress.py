"""What a person sees during and after a sweep: a live view on stderr and the final summary.

On a terminal the view is a rich `Live` table, one line per running op (stage, attempt,
elapsed), read from each run's record. Elsewhere (cron, CI logs) it prints one line per change
of an op's outcome or stage, so logs stay short and greppable.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from metalport.sweep.dashboard import SweepReport
from metalport.sweep.launch import RunProcess
from metalport.sweep.model import OpOutcome

_STYLE = {"awaiting-review": "green", "published": "green", "running": "cyan", "failed": "red",
          "rejected": "yellow", "aborted": "yellow", "skipped": "dim", "candidate": "dim"}


class SweepView:
    """The live view; a `Progress` callback for `run_sweep` and a context manager."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._live: Live | None = None
        self._seen: dict[str, tuple[str, str | None]] = {}

    def __enter__(self) -> SweepView:
        if self.console.is_terminal:
            self._live = Live(Table(), console=self.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)

    def __call__(self, running: list[RunProcess], outcomes: list[OpOutcome]) -> None:
        if self._live is not None:
            self._live.update(_table(running, outcomes))
            return
        for o in outcomes:
            key = (o.outcome, o.stage)
            if self._seen.get(o.op) != key:
                self._seen[o.op] = key
                if o.outcome != "candidate":
                    stage = f" [{o.stage}]" if o.stage and o.outcome == "running" else ""
                    self.console.print(f"sweep: {o.op}: {o.outcome}{stage} — {o.reason}", highlight=False,
                                       soft_wrap=True)


def _table(running: list[RunProcess], outcomes: list[OpOutcome]) -> Table:
    table = Table(title="metalport sweep", expand=False)
    for name in ("op", "state", "stage", "attempt", "elapsed"):
        table.add_column(name)
    for proc in running:
        rec = proc.record
        table.add_row(proc.op, "running", rec.stage if rec else "starting",
                      str(rec.attempts) if rec else "-", f"{proc.elapsed_s():.0f}s")
    done = [o for o in outcomes if o.outcome not in ("running", "candidate")]
    for o in done[-8:]:
        table.add_row(o.op, f"[{_STYLE.get(o.outcome, '')}]{o.outcome}[/]", o.stage or "",
                      "" if o.attempts is None else str(o.attempts), "")
    waiting = sum(1 for o in outcomes if o.outcome == "candidate")
    table.caption = f"{len(done)} done, {len(running)} running, {waiting} waiting"
    return table


def print_summary(console: Console, report: SweepReport) -> None:
    """The end-of-sweep summary: counts, why starting stopped, and where the dashboard is."""
    counts = ", ".join(f"{n} {k}" for k, n in report.counts().items()) or "nothing to do"
    console.print(f"sweep: {len(report.outcomes)} ops looked at: {counts}", highlight=False)
    for o in report.outcomes:
        if o.outcome in ("awaiting-review", "failed", "published", "rejected", "running"):
            nxt = f"  → {o.command}" if o.command else ""
            console.print(f"  [{_STYLE.get(o.outcome, '')}]{o.outcome:16}[/] {o.op}: {o.reason}{nxt}",
                          highlight=False, soft_wrap=True)
    if report.stop_reason:
        console.print(f"sweep: stopped starting runs: {report.stop_reason}", highlight=False, soft_wrap=True)
    console.print(f"sweep: dashboard {report.markdown_path} (JSON {report.json_path})", highlight=False,
                  soft_wrap=True)
