"""Render a backlog as a rich table, JSON or a Markdown report for a tracking issue."""

from __future__ import annotations

import json
from collections import Counter

from metalport.backlog.model import BacklogItem, Family, Status
from metalport.port import Kind


def _xfail_text(item: BacklogItem) -> str:
    return ", ".join(x.list_name + (f"[{', '.join(x.dtypes)}]" if x.dtypes else "") for x in item.xfail)


def to_json(items: list[BacklogItem]) -> str:
    """The items as a JSON list of objects."""
    return json.dumps([item.to_json() for item in items], indent=2)


def _kind(item: BacklogItem) -> str:
    return item.kind.kind.value if item.kind else ""


def _porter(item: BacklogItem) -> str:
    """`recipe`, `llm`, or `none: <reason>`."""
    if item.porter is None:
        return ""
    return item.porter.porter.value + (f": {item.porter.reason}" if item.porter.reason else "")


def to_markdown(items: list[BacklogItem], source: str) -> str:
    """A report to paste into a tracking issue: counts per status, family and kind, then one row per op."""
    by_status = Counter(i.status for i in items)
    by_family = Counter(i.family for i in items)
    by_kind = Counter(_kind(i) for i in items if i.kind)
    lines = [f"## MPS backlog ({len(items)} ops, from `{source}`)", "",
             "| status | ops |", "|---|---|"]
    lines += [f"| {s.value} | {by_status[s]} |" for s in Status if by_status[s]]
    lines += ["", "| family | ops |", "|---|---|"]
    lines += [f"| {f.value} | {by_family[f]} |" for f in Family if by_family[f]]
    lines += ["", "| kind | ops |", "|---|---|"]
    lines += [f"| {k.value} | {by_kind[k.value]} |" for k in Kind if by_kind[k.value]]
    lines += ["", "| ease | op | status | family | kind | porter | stub | MPS implementation | xfail/skip |",
              "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {i.ease if i.ease is not None else '-'} | `{i.op}` | {i.status.value} | {i.family.value} | "
              f"{_kind(i)} | {_porter(i)} | {i.stub or ''} | {i.mps_impl or ''} | {_xfail_text(i)} |" for i in items]
    return "\n".join(lines) + "\n"


COLUMNS = ("ease", "op", "status", "family", "kind", "porter", "stub", "MPS implementation", "xfail/skip")


def row(item: BacklogItem) -> tuple[str, ...]:
    """The table row of one item, in `COLUMNS` order; an op that is no candidate has no rank (`-`)."""
    return (str(item.ease) if item.ease is not None else "-", item.op, item.status.value, item.family.value,
            _kind(item), _porter(item), item.stub or "", item.mps_impl or "", _xfail_text(item))


def status_counts(items: list[BacklogItem]) -> str:
    """`missing: 12, mps-graph: 40, ...`: the table's caption."""
    counts = Counter(i.status.value for i in items)
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
