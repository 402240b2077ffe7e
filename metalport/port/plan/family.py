"""Family ports: several ops that share a kernel file, host file or legacy macro/helper, ported in
one change (one plan, one worktree, one branch, one PR), as PyTorch's maintainers port them
(`logical_and/or/xor` in one PR, `addcmul` + `addcdiv`).

Note [family plans]: the members are planned one after another, each on the tree the previous
members' edits leave (a scratch worktree of the base), so member `i`'s anchors, line numbers and
"last user" decisions (a helper or macro goes with the member that removes its last caller) are
exact; `apply_family` replays the members in order and reaches the same tree. Each member's
contract is checked against the tree before it (`checks.contract.family.check_family`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metalport.checkout.layout import Checkout
from metalport.errors import PipelineError
from metalport.port.plan.launch import LaunchKind
from metalport.port.plan.model import PortPlan, ReuseVerifier
from metalport.port.tree.reuse import macro_of
from metalport.port.tree.scratch import scratch as _scratch


@dataclass(frozen=True)
class FamilyPlan:
    """The plan of a family port: its members' plans in order and why they go together."""

    ops: tuple[str, ...]
    members: tuple[PortPlan, ...]
    reasons: tuple[str, ...]

    @property
    def title(self) -> str:
        return "/".join(self.ops) if len(self.ops) <= 3 else f"{self.ops[0]} and {len(self.ops) - 1} more"

    @classmethod
    def of_one(cls, plan: PortPlan) -> FamilyPlan:
        """The family of one op's plan."""
        return cls((plan.op,), (plan,), ())

    def with_member(self, plan: PortPlan) -> FamilyPlan:
        """The family with the member of `plan`'s op replaced by `plan` (a model's spec replanned it)."""
        return FamilyPlan(self.ops, tuple(plan if m.op == plan.op else m for m in self.members), self.reasons)

    @property
    def several(self) -> bool:
        """More than one op: a family port proper (a family of one is one op's port)."""
        return len(self.members) > 1

    @property
    def allowed_paths(self) -> tuple[str, ...]:
        return tuple(sorted({p for m in self.members for p in m.allowed_paths}))

    def to_dict(self) -> dict[str, Any]:
        return {"ops": list(self.ops), "members": [m.to_dict() for m in self.members], "reasons": list(self.reasons)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FamilyPlan:
        return cls(tuple(data["ops"]), tuple(PortPlan.from_dict(m) for m in data["members"]),
                   tuple(data.get("reasons", ())))


def _legacy_links(checkout: Checkout, op: str) -> dict[str, set[str]]:
    """What the op's legacy MPS code shares with others: {"macro M": functions M makes,
    "helper H": functions calling H}, functions named as the `.mm` files define them."""
    from metalport.port.tree.resolve import resolve_op

    res = resolve_op(checkout, op)
    links: dict[str, set[str]] = {}
    functions = res.sources.functions
    for fn in res.legacy:
        text = (checkout.root / fn.where.file).read_text(encoding="utf-8", errors="replace")
        macro = macro_of(text, fn.where.line)
        if macro:
            made = {m.group(1) for m in re.finditer(rf"^\s*{re.escape(macro)}\(\s*(\w+)", text, re.M)}
            links[f"legacy macro {macro} ({fn.where.file})"] = made
        lines = text.splitlines()
        in_file = sorted((f for f in functions if f.where.file == fn.where.file), key=lambda f: f.where.line)
        starts = [f.where.line for f in in_file]

        def owner(line: int) -> str | None:
            before = [f for f, s in zip(in_file, starts) if s <= line]
            return before[-1].name if before else None

        body_end = next((s for s in starts if s > fn.where.line), len(lines) + 1)
        body = "\n".join(lines[fn.where.line - 1:body_end - 1])
        for helper in (f for f in in_file if not f.impl_func and f.name != fn.name):
            if not re.search(rf"\b{re.escape(helper.name)}\s*\(", body):
                continue
            callers = {owner(i + 1) for i, line in enumerate(lines)
                       if re.search(rf"\b{re.escape(helper.name)}\s*\(", line) and i + 1 != helper.where.line}
            links[f"legacy helper {helper.name} ({fn.where.file})"] = {c for c in callers if c and c != helper.name}
    return links


def family_of(checkout: Checkout, op: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the op and every op whose legacy MPS code shares its legacy macro or helper, the reasons).

    Only ops that are still to port join (their rows name the shared function)."""
    from metalport.registry.index import load_registry

    name = op.removeprefix("aten::")
    registry = load_registry(checkout.native_functions)
    by_kernel: dict[str, str] = {}
    for entry in registry.entries:
        for d in entry.dispatch:
            if "MPS" in d.keys:
                by_kernel.setdefault(d.kernel, entry.base)
    ops = [name]
    reasons: list[str] = []
    for why, functions in _legacy_links(checkout, name).items():
        joined = sorted({by_kernel[f] for f in functions if f in by_kernel} - {name})
        if joined:
            ops += [o for o in joined if o not in ops]
            reasons.append(f"{why} serves {', '.join(sorted({name, *joined}))}")
    return tuple(ops), tuple(reasons)


def _shared_reasons(members: list[PortPlan]) -> list[str]:
    """Why planned members go together: the kernel, host and legacy files they both edit."""
    out = []
    for label, pick in (("kernel file", lambda m: m.kernel_file), ("host file", lambda m: m.host_file),
                        ("legacy file", lambda m: m.legacy[0] if m.legacy else None)):
        files: dict[str, list[str]] = {}
        for m in members:
            if pick(m):
                files.setdefault(pick(m), []).append(m.op)
        out += [f"{label} {f} is edited by {', '.join(ops)}" for f, ops in files.items() if len(ops) > 1]
    return out


def plan_family(checkout: Checkout, ops: tuple[str, ...], *, force: bool = False,
                reasons: tuple[str, ...] = (), verify_reuse: ReuseVerifier | None = None) -> FamilyPlan:
    """Plan every op of the family in order (Note [family plans]); `verify_reuse` as `plan_port`'s.
    Every port is a family: a family of one is its op's plan, made on the checkout itself.

    Raises PipelineError when a member cannot be planned (its message names the op when there are
    several), or when the ops share no file (then they are separate changes)."""
    from metalport.port.plan.planner import apply_port, plan_port

    names = tuple(dict.fromkeys(o.removeprefix("aten::") for o in ops))
    if len(names) == 1:
        return FamilyPlan(names, (plan_port(checkout, names[0], force=force, verify_reuse=verify_reuse),),
                          tuple(reasons))
    members: list[PortPlan] = []
    with _scratch(checkout.root) as tree:
        for i, name in enumerate(names):
            try:
                plan = plan_port(Checkout(tree), name, force=force, verify_reuse=verify_reuse)
            except PipelineError as err:
                raise PipelineError(f"family member aten::{name}: {err.message}", location=err.location,
                                    hint=err.hint) from err
            members.append(plan)
            if plan.launch_kind is LaunchKind.PENDING:  # its launch would be planned on the base tree alone
                raise PipelineError(f"family member aten::{name} needs a model for its kernel and launch",
                                    hint="port it alone with --model openai:MODEL, or leave it out of the family")
            if i + 1 < len(names):
                # Note [family members a model writes]: the later members are planned on the tree with
                # this member's rows, host stub and legacy edits; its functor is a placeholder here.
                apply_port(plan, tree, functor_source=placeholder_functor(plan) if plan.needs_llm else None)
    shared = _shared_reasons(members)
    if len(members) > 1 and not shared and not reasons:
        raise PipelineError(f"{', '.join(names)} share no kernel, host or legacy file: they are separate changes",
                            hint="run them one at a time")
    return FamilyPlan(names, tuple(members), tuple(dict.fromkeys([*reasons, *shared])))


def placeholder_functor(plan: PortPlan) -> str:
    """An empty functor of the member's name: what later members are planned around (Note [family
    members a model writes]); it never reaches a worktree."""
    return f"struct {plan.functor} {{}};\n"


def written_functor(root: Path, plan: PortPlan) -> str | None:
    """The member's functor as the worktree at `root` has it (`struct x_functor {...};`), None when
    its kernel file holds none."""
    from metalport.port.write.host import skip_to_close

    path = root / (plan.kernel_file or "")
    if not plan.functor or not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    found = re.search(rf"^struct {re.escape(plan.functor)}\s*\{{", text, re.MULTILINE)
    close = skip_to_close(text, found.end() - 1) if found else -1
    if found is None or close < 0:
        return None
    end = text.find(";", close)
    return text[found.start():end + 1] + "\n"


def apply_family(family: FamilyPlan, root: Path, *, functor_sources: dict[str, str] | None = None,
                 **kwargs: Any) -> None:
    """Apply each member's plan in order in the worktree at `root`; a member a model writes takes
    its functor from `functor_sources` (op -> source)."""
    from metalport.port.plan.planner import apply_port

    for plan in family.members:
        apply_port(plan, root, functor_source=(functor_sources or {}).get(plan.op), **kwargs)


def describe_family(family: FamilyPlan) -> list[str]:
    """The family's lines for the plan view and the PR body (none for a family of one)."""
    if not family.several:
        return []
    lines = [f"family port of {', '.join(f'aten::{o}' for o in family.ops)} in one change"]
    lines += [f"together because {r}" for r in family.reasons]
    return lines
