"""One conformance case, and the one driver that draws a dtype row's cases for every launch kind.

`build_cases` takes what a launch kind knows of its calls, a `CaseSource`: the OpInfo samples it
can launch (and why it cannot launch the others), then the templates it draws from, each giving
random cases and, for the gate, held-out ones. An elementwise port's source is
`elementwise.ElementwiseCases` (a template per selector value of the recorded calls, Note
[argument-selected kernels] in `hostcode`); a launch spec's is `spec.SpecCases` (one template, the
spec's shapes and its own `cases`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from metalport.checks.cases.samples import Call
from metalport.checks.host.spec import INDEX_LIMIT


@dataclass(frozen=True)
class Case:
    """One call to check: `kind` is opinfo, random or held-out (the cases modules' notes say the rest)."""

    label: str
    call: Call
    kind: str
    force: str | None = None  # the dense flavour the host's override would pin ("ilp"/"scalar")
    accepted: str | None = None  # the OpInfo skip/xfail putting this value set out of scope
    index_limit: int = INDEX_LIMIT  # elements one launch of a launch spec may address (a forced split)

    def describe(self) -> str:
        return self.call.describe()

    def operands(self) -> tuple[torch.Tensor, ...]:
        return self.call.operands()


class CaseTemplate(Protocol):
    """What random and held-out cases are drawn from (a recorded call, a launch spec)."""

    def random(self) -> list[Case]: ...

    def held_out(self) -> list[Case]: ...


class CaseSource(Protocol):
    """One dtype row's calls as a launch kind knows them."""

    def recorded(self) -> tuple[list[Case], list[str]]:
        """The OpInfo samples to judge, and why each recorded call left out was left out."""
        ...

    def templates(self) -> Sequence[CaseTemplate]: ...


def build_cases(source: CaseSource, held_out: bool) -> tuple[list[Case], list[str]]:
    """The row's cases (OpInfo samples, then each template's random and, with `held_out`, held-out
    cases) and why recorded calls were left out."""
    cases, skipped = source.recorded()
    for template in source.templates():
        cases += template.random()
        if held_out:
            cases += template.held_out()
    return cases, skipped


__all__ = ["Case", "CaseSource", "CaseTemplate", "build_cases"]
