"""The behavioural check of a reused kernel (Note [reuse an existing kernel] in port/tree/reuse.py): the
op run through the kernel the plan would launch, judged against torch CPU, before the plan keeps it.
The planner runs no kernel: its callers pass `verify_reuse` to `plan_port`."""

from __future__ import annotations

from metalport.checkout.layout import Checkout


def verify_reuse(checkout: Checkout, plan) -> tuple[bool, str]:
    """(passed, one line) of conformance of `plan.op` through its reused kernel: the plan applied
    on a scratch worktree of the checkout's HEAD, the op run through the host stub it writes over
    the plan's dtypes, judged against torch CPU (Note [reuse an existing kernel])."""
    from metalport.checks.conformance import run_conformance
    from metalport.errors import MetalportError
    from metalport.port import apply_port, METAL_TYPES, scratch

    torch_names = {m: t for t, m in METAL_TYPES.items()}
    dtypes = [torch_names[t] for t in plan.dtypes if t in torch_names]
    try:
        with scratch(checkout.root) as tree:
            apply_port(plan, tree)
            report = run_conformance(tree, plan.op, dtypes=dtypes, include_held_out=False, backend="emulated")
    except MetalportError as err:
        return False, f"conformance through it could not run ({err.message})"
    if report.ok():
        return True, (f"conformance of aten::{plan.op} through it passed before planning ({report.cases} cases over "
                      f"{len(report.dtypes)} dtype(s), seed {report.seed})")
    return False, f"conformance of aten::{plan.op} through it is {report.status}: {report.reason or 'values differ'}"
