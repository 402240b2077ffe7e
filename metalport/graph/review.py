"""What the reviewer sees at the gate, and the interactive decision on a TTY.

Read from the run folder and the worktree only (never the graph): the plan, the diff stat (full
diff on request), every verdict with its numbers, attempts, elapsed time and cost.
"""

from __future__ import annotations

import json
import os
import select
import sys
from pathlib import Path
from typing import TextIO

import git
from rich.console import Console
from rich.prompt import Prompt

from metalport.graph.evidence import describe_plan, verdict_lines
from metalport.graph.records import Abort, Approve, Decision, Reject, repo_arg, run_dir, shared_store
from metalport.run_record import RunRecord


def gate_commands(run_id: str, repo_root: Path) -> list[str]:
    """The exact commands that decide a paused run (with `--repo` when run from elsewhere)."""
    repo = repo_arg(repo_root)
    return [f"metalport review approve {run_id}{repo}", f"metalport resume {run_id} --approve{repo}",
            f"metalport resume {run_id} --reject \"FEEDBACK\"{repo}", f"metalport resume {run_id} --abort{repo}"]


def plan_lines(repo_root: Path, run_id: str) -> list[str]:
    """The stored plan of a run, one line per step."""
    path = run_dir(repo_root, run_id) / "plan.json"
    store = shared_store(repo_root)
    text = path.read_text(encoding="utf-8") if path.is_file() else store.get_file(run_id, "plan.json") if store else None
    if text is None:
        return ["(no plan recorded)"]
    family = run_dir(repo_root, run_id) / "family.json"
    if family.is_file():  # its reasons and every member's plan (one member: the plan alone)
        from metalport.graph.evidence import describe_run_plan

        return describe_run_plan({"plan": json.loads(text), "family": json.loads(family.read_text(encoding="utf-8"))})
    return describe_plan(json.loads(text))


def worktree_diff(record: RunRecord, *, stat: bool, repo_root: Path | None = None) -> str:
    """The worktree's change against its base (`--stat` or the full patch); new files included.

    A worktree on another machine shows the diff recorded in the shared store (`repo_root` names it).
    """
    if not record.worktree or not Path(record.worktree).is_dir():
        store = shared_store(repo_root) if repo_root is not None and record.worktree else None
        portable = store.portable(record.run_id) if store is not None else None
        return f"(worktree on {portable['host']}; recorded diff below)\n{portable['diff']}" if portable and not stat \
            else f"(worktree on {portable['host']})" if portable else "(worktree removed)"
    repo = git.Repo(record.worktree)
    repo.git.add("-A", "-N")
    base = repo.head.commit.hexsha
    return repo.git.diff("--stat", base) if stat else repo.git.diff(base, strip_newline_in_stdout=False)


def summary_lines(repo_root: Path, record: RunRecord) -> list[str]:
    """The review summary: plan, diff stat, verdicts, attempts, elapsed time and cost."""
    usage = record.usage or {}
    elapsed = record.elapsed_s()  # waiting at the gate is not work
    lines = [f"run {record.run_id}: {record.op} on {record.branch} ({record.status})", "plan:"]
    lines += plan_lines(repo_root, record.run_id)
    lines += ["diff:", *("  " + line for line in worktree_diff(record, stat=True, repo_root=repo_root).splitlines())]
    lines += ["verdicts:", *("  " + line for line in verdict_lines({"verdicts": record.verdicts}))]
    lines.append(f"attempts: {record.attempts}; elapsed: {elapsed:.0f} s; model calls: {usage.get('calls', 0)}, "
                 f"tokens: {usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out, "
                 f"cost: ${float(usage.get('cost_usd', 0.0)):.4f}")
    if record.feedback:
        lines.append(f"last feedback: {record.feedback}")
    return lines


def ask_decision(console: Console, repo_root: Path, record: RunRecord, stream: TextIO | None = None) -> Decision:
    """Show the summary and ask approve / reject (with feedback) / abort; `diff` prints the full diff.

    Answers are read from `stream` (default: the terminal). End of input (Ctrl-D) is an interrupt,
    like Ctrl-C: the run stays at the gate.
    """
    try:
        return _ask(console, repo_root, record, stream or TerminalLines())
    except EOFError:
        raise KeyboardInterrupt from None


class TerminalLines:
    """Lines typed at the terminal, read so that Ctrl-C always interrupts the wait.

    Note [Ctrl-C at the prompt]: the terminal sends SIGINT to the whole process, and Linux hands a
    process-wide signal to any thread that does not block it (another one when the main thread
    already has a signal pending). Python runs its handler in the main thread only, between
    bytecodes, so a main thread blocked in `read()` on the terminal slept on at the prompt (seen in
    CI: the SIGINT caught, the process asleep at "decision"). Waiting in 0.1 s `select` slices
    returns to the interpreter, which raises KeyboardInterrupt; in the terminal's line mode one
    `read` gives one line."""

    def readline(self) -> str:
        fd = sys.stdin.fileno()
        while not select.select([fd], [], [], 0.1)[0]:
            pass  # a pending Ctrl-C raises KeyboardInterrupt here
        data = os.read(fd, 65536)
        if not data:
            raise EOFError  # Ctrl-D
        return data.decode(errors="replace")


def _ask(console: Console, repo_root: Path, record: RunRecord, stream: TextIO | None) -> Decision:
    for line in summary_lines(repo_root, record):
        console.print(line, markup=False, highlight=False)
    while True:
        choice = Prompt.ask("decision", choices=["approve", "reject", "abort", "diff"], console=console,
                            stream=stream)
        if choice == "diff":
            console.print(worktree_diff(record, stat=False), markup=False, highlight=False, soft_wrap=True)
            continue
        if choice == "approve":
            return Approve()
        if choice == "abort":
            return Abort()
        feedback = Prompt.ask("feedback for the next attempt", console=console, stream=stream).strip()
        if feedback:
            return Reject(feedback)
        console.print("a rejection needs feedback", style="yellow")
