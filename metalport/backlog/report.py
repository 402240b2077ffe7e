"""Render a backlog as a rich table, JSON or a Markdown report for a tracking issue."""

from __future__ import annotations

import json
from collections import Counter

from metalport.backlog.model import BacklogItem, Family, Status


def _xfail_text(item: BacklogItem) -> str:
    return ", ".join(x.list_name + (f"[{', '.join(x.dtypes)}]" if x.dtypes else "") for x in item.xfail)


def to_json(items: list[BacklogItem]) -> str:
    """The items as a JSON list of objects."""
    return json.dumps([item.to_json() for item in items], indent=2)


def to_markdown(items: list[BacklogItem], source: str) -> str:
    """A report to paste into a tracking issue: counts per status and family, then one row per op."""
    by_status = Counter(i.status for i in items)
    by_family = Counter(i.family for i in items)
    lines = [f"## MPS backlog ({len(items)} ops, from `{source}`)", "",
             "| status | ops |", "|---|---|"]
    lines += [f"| {s.value} | {by_status[s]} |" for s in Status if by_status[s]]
    lines += ["", "| family | ops |", "|---|---|"]
    lines += [f"| {f.value} | {by_family[f]} |" for f in Family if by_family[f]]
    lines += ["", "| ease | op | status | family | stub | MPS implementation | xfail/skip |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {i.ease} | `{i.op}` | {i.status.value} | {i.family.value} | {i.stub or ''} | "
              f"{i.mps_impl or ''} | {_xfail_text(i)} |" for i in items]
    return "\n".join(lines) + "\n"


COLUMNS = ("ease", "op", "status", "family", "stub", "MPS implementation", "xfail/skip")


def row(item: BacklogItem) -> tuple[str, ...]:
    """The table row of one item, in `COLUMNS` order."""
    return (str(item.ease), item.op, item.status.value, item.family.value, item.stub or "", item.mps_impl or "",
            _xfail_text(item))


def status_counts(items: list[BacklogItem]) -> str:
    """`missing: 12, mps-graph: 40, ...`: the table's caption."""
    counts = Counter(i.status.value for i in items)
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
