"""Which backlog ops a sweep may start, and the stated reason for every op it skips.

An op is skipped when someone is already on it or a person said no: a run in progress or
awaiting review, a published run, a rejection on record (unless retried), a needs-LLM end with
the recipe model, a failed last run (unless retried), an existing `metalport/<op>` branch, or an
open PR that names it upstream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import git

from metalport.backlog import BacklogItem, scan_backlog
from metalport.sandbox.worktree import branch_name
from metalport.sweep.model import SKIPPED, OpOutcome, from_record, status_of


def backlog_candidates(repo_root: Path, statuses: Sequence[str], families: Sequence[str],
                       kinds: Sequence[str] = (), porters: Sequence[str] = ()) -> list[BacklogItem]:
    """Backlog items with one of `statuses` (and `families`, `kinds`, `porters` when given), in ease
    order; never an op that is no port candidate (`port.tree.kinds`), nor one only a person can port
    (unranked: porter `none`, e.g. frexp's two outputs)."""
    from metalport.checkout import find_checkout

    items = scan_backlog(find_checkout(repo_root))
    return [i for i in items if i.candidate and i.ease is not None and i.status.value in statuses
            and (not families or i.family.value in families)
            and (not kinds or (i.kind is not None and i.kind.kind.value in kinds))
            and (not porters or (i.porter is not None and i.porter.porter.value in porters))]


def offline_portable(item: BacklogItem, recipe_ops: frozenset[str]) -> bool:
    """Whether a port of `item` needs no model: a recipe covers it, or the translate porter takes it."""
    return item.op in recipe_ops or (item.porter is not None and item.porter.porter.value == "translate")


def local_branches(repo_root: Path) -> set[str]:
    """Names of the repository's local branches."""
    return {head.name for head in git.Repo(repo_root).heads}


def runs_by_op(records: Iterable[Any]) -> dict[str, list[Any]]:
    """Run records grouped by op name (`aten::` dropped), oldest first."""
    grouped: dict[str, list[Any]] = {}
    for record in sorted(records, key=lambda r: r.created_at):
        grouped.setdefault(record.op.removeprefix("aten::"), []).append(record)
    return grouped


def local_skip(item: BacklogItem, records: Sequence[Any], branches: set[str], *, model: str,
               retry_rejected: bool, retry_failed: bool, live: Callable[[str], bool],
               repo_flag: str = "") -> OpOutcome | None:
    """The skip for `item` from this repository's runs and branches, or None when it may start.

    `records` are the op's run records, oldest first; `live(run_id)` tells whether a process is
    driving a `running` run now (else it was interrupted and waits for `metalport resume`).
    """
    op = item.op

    def skip(kind: str, reason: str, record: Any | None = None, command: str | None = None) -> OpOutcome:
        extra = {}
        if record is not None:
            extra = dict(run_id=record.run_id, stage=record.stage, attempts=record.attempts,
                         branch=record.branch, feedback=record.feedback)
        return OpOutcome(op=op, outcome=SKIPPED, reason=reason, ease=item.ease, skip=kind, command=command,
                         **extra)

    for record in reversed(records):
        status, rid = status_of(record), record.run_id
        if status == "running" and live(rid):
            return skip("in-progress", f"run {rid} is in progress (stage {record.stage})", record)
        if status == "running":
            return skip("interrupted", f"run {rid} was interrupted at stage {record.stage} and is resumable",
                        record, f"metalport resume {rid}{repo_flag}")
        if status == "awaiting-review":
            return skip("awaiting-review", f"run {rid} awaits review", record,
                        f"metalport review show {rid}{repo_flag}")
        if status == "published":
            link = record.pr_url or record.bundle_path
            return skip("published", f"already published by run {rid} ({link})", record)
    rejected = [r for r in records if status_of(r) == "rejected"]
    if rejected and not retry_rejected:
        last = rejected[-1]
        return skip("rejected", f"rejected in run {last.run_id}: \"{last.feedback or last.reason}\"; "
                    "pass --retry-rejected to try it again", last)
    last = records[-1] if records else None
    if last is not None and status_of(last) == "needs-llm" and model == "recipe":
        return skip("needs-llm", f"run {last.run_id} found no recipe for it (needs an LLM); "
                    "sweep with --model openai:MODEL to port it", last)
    if last is not None and status_of(last) in ("failed", "budget-exhausted") and not retry_failed:
        was = from_record(last)
        return skip("failed", f"the last run {last.run_id} {was.reason}; pass --retry-failed to try again",
                    last, f"metalport runs show {last.run_id}{repo_flag}")
    branch = branch_name(op)
    if branch in branches:
        owner = next((r for r in reversed(records) if r.branch == branch), None)
        if owner is not None:
            was = from_record(owner)
            return skip("branch", f"branch {branch} exists from run {owner.run_id} ({was.outcome}: "
                        f"{was.reason}); remove its worktree and branch to let a sweep retry", owner)
        return skip("branch", f"branch {branch} exists and no metalport run made it; the sweep leaves "
                    "it alone (rename or delete it to let a sweep start one)")
    return None


def open_pr_skip(item: BacklogItem, pulls: Sequence[dict]) -> OpOutcome | None:
    """The skip for `item` when an open PR names its op in its title or head branch, else None."""
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(item.op)}(?![A-Za-z0-9_])")
    for pr in pulls:
        head = str((pr.get("head") or {}).get("ref", "")) if isinstance(pr.get("head"), dict) else ""
        if word.search(str(pr.get("title", ""))) or word.search(head):
            who = (pr.get("user") or {}).get("login", "someone")
            return OpOutcome(op=item.op, outcome=SKIPPED, ease=item.ease, skip="open-pr", link=pr.get("html_url"),
                             reason=f"open PR #{pr.get('number')} by {who} is on it: \"{pr.get('title')}\" "
                                    f"({pr.get('html_url')})")
    return None


def search_open_prs(client: Any, op: str) -> list[dict]:
    """Open PRs of the client's repository that name `op` in their title or come from `metalport/<op>`."""
    found = list(client.search_pulls(op))
    found += [dict(pr, head={"ref": branch_name(op)}) for pr in client.search_pulls_by_head(branch_name(op))]
    return found
