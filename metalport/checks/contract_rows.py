"""What both contract checks (the pointwise one in `contract`, the launch-spec one in
`speccontract`) start from: a contract failure, and the plan's op in the edited registry."""

from __future__ import annotations

from pathlib import Path

from metalport.errors import MetalportError, RegistryError
from metalport.failure import Failure
from metalport.port.plan_model import NATIVE_FUNCTIONS, PortPlan
from metalport.registry.model import Op
from metalport.registry.validate import validate_registry

TAGS = "aten/src/ATen/native/tags.yaml"


def contract_failure(check: str, message: str, file: str | None = None, line: int | None = None) -> Failure:
    """One contract failure, tagged with the check that found it."""
    return Failure("contract", file, line, None, f"[{check}] {message}")


def registry_op(worktree_root: Path, plan: PortPlan) -> tuple[Op | None, list[Failure]]:
    """The plan's op in the worktree's registry after torchgen validates it, or (None, the failure)."""
    try:
        registry = validate_registry(worktree_root / NATIVE_FUNCTIONS, worktree_root / TAGS)
    except RegistryError as err:
        where = (err.location or "").rsplit(":", 1)
        line = int(where[1]) if len(where) == 2 and where[1].isdigit() else None
        return None, [contract_failure("registry", err.message, NATIVE_FUNCTIONS, line)]
    try:
        return registry.resolve(plan.op), []
    except MetalportError as err:
        return None, [contract_failure("rows", f"aten::{plan.op} is no longer in the registry: {err.message}",
                                       NATIVE_FUNCTIONS)]


__all__ = ["TAGS", "contract_failure", "registry_op"]
