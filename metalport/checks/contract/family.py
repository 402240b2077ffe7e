"""`check_family`: a family port's contract, member by member (Note [family plans] in port/plan/family.py)."""

from __future__ import annotations

from pathlib import Path

from metalport.checks.contract.rules import check_contract
from metalport.failure import Failure
from metalport.port import apply_port, FamilyPlan, scratch as _scratch, scratch_git as _git, written_functor


def check_family(base_root: Path, worktree_root: Path, family: FamilyPlan) -> list:
    """Every member's contract, each checked against the tree its predecessors leave, and the
    worktree checked to hold exactly the family's edits. `[]` when all hold. The worktree's HEAD
    is the base (`base_root` is accepted for symmetry with `check_contract`)."""
    root = Path(worktree_root)
    if not family.several:  # a family of one: the op's own contract on the worktree as it is
        return check_contract(Path(base_root), root, family.members[0])
    failures: list = []
    head = _git(root, "rev-parse", "HEAD").strip()
    with _scratch(root, head) as before, _scratch(root, head) as after:
        for plan in family.members:
            # a member a model wrote is replayed with the functor the worktree holds now
            functor = written_functor(root, plan) if plan.needs_llm else None
            if plan.needs_llm and functor is None:
                failures.append(Failure("family", plan.kernel_file, None, None,
                                        f"no struct {plan.functor} in {plan.kernel_file} for aten::{plan.op}"))
                continue
            apply_port(plan, after, functor_source=functor)
            failures += check_contract(before, after, plan)
            apply_port(plan, before, functor_source=functor)
            _git(before, "add", "-A")
            _git(before, "commit", "-q", "-m", f"family member {plan.op}")
            _git(after, "reset", "-q", "--hard", _git(before, "rev-parse", "HEAD").strip())
        expected = set(_git(after, "diff", "--name-only", head).split())
        got = set(_git(root, "diff", "--name-only", "HEAD").split())
        untracked = set(_git(root, "ls-files", "--others", "--exclude-standard").split())
        for rel in sorted(got - expected - untracked):
            failures.append(Failure("paths", rel, None, None,
                                    f"{rel} is changed but no member of the family plans it"))
        for rel in sorted(expected & got):
            mine = _git(root, "diff", "HEAD", "--", rel)
            theirs = _git(after, "diff", head, "--", rel)
            if _body(mine) != _body(theirs):
                failures.append(Failure("family", rel, None, None,
                                        f"{rel} differs from the members' edits applied in order"))
    return failures


def _body(diff: str) -> str:
    """A diff without its header lines (index hashes differ between repositories)."""
    return "\n".join(line for line in diff.splitlines() if not line.startswith(("diff ", "index ")))
