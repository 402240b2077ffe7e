"""The CLI side of a run: live progress per node on stderr, the gate, the final line and exit code.

Shared by `metalport run`, `run-migration` and `metalport resume`; `--json` prints one object on
stdout (the record plus per-node wall and CPU seconds) and nothing else there.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from metalport.run_record import RunRecord
from metalport.graph.evidence import verdict_lines
from metalport.graph.records import repo_arg
from metalport.graph.review import ask_decision, gate_commands

EXIT_OK_STATUSES = frozenset({"published", "awaiting-review", "aborted"})
_MARK = {"ok": "[green]✓[/]", "fail": "[red]✗[/]"}


class ProgressPrinter:
    """Prints one line per node start/finish and notes; keeps per-node wall times (summed)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.timings_s: dict[str, float] = {}
        self.cpu_s: dict[str, float] = {}
        self._t0 = time.monotonic()

    def __call__(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "start":
            self.console.print(f"[dim]{time.monotonic() - self._t0:6.1f}s[/] → {event['node']}", highlight=False)
        elif kind == "done":
            node, seconds = event["node"], float(event.get("seconds", 0.0))
            self.timings_s[node] = round(self.timings_s.get(node, 0.0) + seconds, 3)
            self.cpu_s[node] = round(self.cpu_s.get(node, 0.0) + float(event.get("cpu_s", 0.0)), 3)
            failed = event.get("failures") or event.get("status") not in (None, "running", "published")
            extra = f" ({event['failures']} failure(s))" if event.get("failures") else ""
            self.console.print(f"[dim]{time.monotonic() - self._t0:6.1f}s[/] {_MARK['fail' if failed else 'ok']} "
                               f"{node} {seconds:.2f}s{extra}", highlight=False)
        elif kind == "note":
            self.console.print(f"[yellow]note:[/] {escape(str(event.get('message')))}", highlight=False)


def make_progress(quiet: bool = False) -> ProgressPrinter:
    """A progress printer on stderr (silent when `quiet`)."""
    return ProgressPrinter(Console(stderr=True, quiet=quiet, soft_wrap=True))


def conclude(record: RunRecord, repo_root: Path, progress: ProgressPrinter, *, interactive: bool,
             as_json: bool, resume: Callable[..., RunRecord]) -> int:
    """Handle the gate (prompt on a TTY, else print how to decide), print the end, return the exit code.

    `resume(run_id, decision)` continues the run after an interactive decision.
    """
    console = progress.console
    while record.status == "awaiting-review" and interactive:
        try:
            decision = ask_decision(console, repo_root, record)
        except KeyboardInterrupt:  # Ctrl-C or Ctrl-D: the run stays at the gate, say how to decide later
            _print_gate(console, record, repo_root)
            raise
        record = resume(record.run_id, decision)
    if as_json:
        print(json.dumps({**record.to_dict(), "timings_s": progress.timings_s, "cpu_s": progress.cpu_s},
                         sort_keys=True))
    if record.status == "awaiting-review":
        _print_gate(console, record, repo_root)
    else:
        style = "green" if record.status in EXIT_OK_STATUSES else "red"
        console.print(f"[{style}]{record.status}[/]: {escape(record.reason or '')}".rstrip(": "), highlight=False)
    return 0 if record.status in EXIT_OK_STATUSES else 1


def _print_gate(console: Console, record: RunRecord, repo_root: Path) -> None:
    """The evidence first (each verdict with its conformance counts), where to read the change, then the
    commands that decide."""
    console.print(f"run {record.run_id} is waiting for review at the gate; the evidence:", highlight=False)
    for line in verdict_lines({"verdicts": record.verdicts}) or ["(no verdicts recorded)"]:
        console.print(f"  {line}", highlight=False, markup=False)
    console.print(f"read the plan, the diff and the evidence: metalport review show {record.run_id}"
                  f"{repo_arg(repo_root)}", highlight=False, markup=False)
    console.print("then decide with:", highlight=False)
    for command in gate_commands(record.run_id, repo_root):
        console.print(f"  {command}", highlight=False, markup=False)


def is_interactive(no_input: bool, as_json: bool) -> bool:
    """Prompt only with a TTY on stdin and stderr, and neither --no-input nor --json."""
    return not no_input and not as_json and sys.stdin.isatty() and sys.stderr.isatty()


class Interruptible:
    """While a run is driven: Ctrl-C says at once that the run is stopping (its processes take a
    few seconds to end), and `interrupted_line` then says where it stopped and how to go on.

        with Interruptible(root, run_id) as guard:
            ...
        # except KeyboardInterrupt: print(guard.interrupted_line()); return 130
    """

    def __init__(self, repo_root: Path, run_id: str) -> None:
        self.repo_root, self.run_id = repo_root, run_id
        self._previous: object = None

    def _on_sigint(self, signum: int, frame: object) -> None:
        print(f"metalport: Ctrl-C: stopping run {self.run_id} (its build or test processes end first; the run "
              "stays resumable)", file=sys.stderr, flush=True)
        raise KeyboardInterrupt

    def __enter__(self) -> "Interruptible":
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]

    def interrupted_line(self) -> str:
        """`metalport: interrupted run X at stage S; continue it with `metalport resume X`` (or why not)."""
        from metalport.errors import MetalportError
        from metalport.graph.records import get_run

        repo = repo_arg(self.repo_root)
        try:
            record = get_run(self.repo_root, self.run_id)
        except MetalportError:
            return f"metalport: interrupted before run {self.run_id} started; nothing to resume"
        if record.status == "awaiting-review":
            return (f"metalport: interrupted; run {self.run_id} waits at the gate: decide with "
                    f"`metalport review show {self.run_id}{repo}`, then approve, reject or abort")
        if record.status != "running":
            return f"metalport: interrupted; run {self.run_id} is {record.status} at stage {record.stage}"
        return (f"metalport: interrupted run {self.run_id} at stage {record.stage}; continue it with "
                f"`metalport resume {self.run_id}{repo}` (or drop it: `metalport resume {self.run_id} --abort{repo}`)")
