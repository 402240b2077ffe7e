"""The `Provider` protocol the graph calls: recipes and the OpenAI provider both implement it.

A deterministic implementation (the recipe engine) may ignore `tools` except to apply its edits
through `tools.call("propose_edit", ...)`; it must return the same result types, and raise a
`MetalportError` subclass (never a bare exception) when it cannot answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from metalport.agent.tools import ToolBox


@dataclass(frozen=True)
class FunctorRequest:
    """What the model needs to write one functor: the op, its family and dtypes, the plan."""

    op: str
    family: str  # unary, binary, alpha, ternary, or another kernel family
    dtypes: tuple[str, ...]
    plan_summary: str
    kernel_file: str
    functor_name: str
    feedback: str = ""  # reviewer feedback or the previous attempt's verdict
    diagnostics: tuple[dict, ...] = ()  # structured failures of the previous attempt
    # Note [params route] (port/plan/params.py): the struct the op's scalars reach the functor in, and its
    # fields ("float beta"); "" / () for an op without scalars.
    params_type: str = ""
    params_fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class FunctorResult:
    """The functor's C++ source (inserted by the deterministic edit step) and the model's notes."""

    functor_source: str
    summary: str
    usage: dict = field(default_factory=dict)


@dataclass(frozen=True)
class KernelRequest:
    """An op outside both recipe tables whose port writes its own kernel (reduction-stub,
    custom-kernel, multi-tensor): the model writes the kernel and its launch spec."""

    op: str
    kind: str  # port.kinds value, e.g. "custom-kernel"
    kind_reason: str
    schemas: tuple[tuple[str, str], ...]  # (entry full name, `func:` schema) of every entry of the op
    plan_summary: str
    feedback: str = ""
    diagnostics: tuple[dict, ...] = ()


# Judges a kernel answer (spec YAML, kernel source) before the loop accepts it: None, or the one-line
# reason sent back to the model (the graph checks the spec and plans the port with it).
KernelCheck = Callable[[str, str], str | None]


@dataclass(frozen=True)
class KernelResult:
    """The model's launch spec (YAML text) and kernel source, accepted by the run's `KernelCheck`,
    and its notes."""

    spec_text: str
    kernel_source: str
    summary: str
    usage: dict = field(default_factory=dict)


@dataclass(frozen=True)
class FixRequest:
    """A failed attempt to fix in place: the op, what failed, and the files that may change."""

    op: str
    failure_stage: str  # check, build or test
    diagnostics: tuple[dict, ...]
    allowed_paths: tuple[str, ...]
    plan_summary: str = ""


@dataclass(frozen=True)
class FixResult:
    """The outcome of a fix: the model's summary after `finish` was accepted."""

    summary: str
    usage: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PlanRequest:
    """An op outside the pointwise families to plan: its registry rows, current code and dtypes."""

    op: str
    family: str
    entries: tuple[str, ...]  # the op's overload names, e.g. ("logit", "logit.out", "logit_")
    rows: tuple[str, ...]  # the registry text of those rows, shown to the model
    current_impl: str
    dtypes: tuple[str, ...]


@dataclass(frozen=True)
class PlanResult:
    """The model's plan, validated (schema and paths); deterministic code still makes every edit."""

    plan: dict
    summary: str
    usage: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PrRequest:
    """The evidence a PR description is written from."""

    op: str
    plan_summary: str
    diff_stat: str
    verdicts: tuple[str, ...]
    usage: dict = field(default_factory=dict)


class Provider(Protocol):
    """Writes functors, fixes failures and describes PRs for the migration graph.

    `usage()` is the run's model usage so far (calls, tokens, cost, wall time) for the run record;
    the recipe provider reports zeros. Only the OpenAI provider also offers `plan(request, tools)`.
    """

    def write_functor(self, request: FunctorRequest, tools: ToolBox) -> FunctorResult:
        """Return the functor source for `request`; may read the tree through `tools`."""
        ...

    def write_kernel(self, request: KernelRequest, tools: ToolBox, accept: KernelCheck) -> KernelResult:
        """Return a kernel and launch spec for `request` that `accept` takes."""
        ...

    def fix(self, request: FixRequest, tools: ToolBox) -> FixResult:
        """Edit allow-listed files through `tools` until `check()` passes and `finish` is accepted."""
        ...

    def describe_pr(self, request: PrRequest) -> str:
        """Return the PR body in Markdown."""
        ...

    def usage(self) -> dict:
        """The model usage of this run so far."""
        ...
