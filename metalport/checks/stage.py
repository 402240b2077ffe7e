"""The emulated checks stage of a port: one entry point that takes the `PortPlan` and runs the
launch kind the plan describes, so no caller asks which path a port came from.

A plan with a launch spec (reduction, window, scan, tensor-list kinds) runs its kernel as the
spec's host launches it (`specconformance`); a pointwise plan (the elementwise launch kind) runs
the op's functors through the modelled `exec_*_kernel` host (`conformance`). The contract check
(`contract.check_contract`) dispatches the same way inside itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from metalport.port.plan_model import PortPlan

if TYPE_CHECKING:
    from metalport.checks.report import ConformanceReport


def check_port_conformance(root: Path, plan: PortPlan, *, held_out: bool,
                           backend: str = "emulated") -> ConformanceReport:
    """The conformance report of `plan`'s kernels in the checkout at `root`; `held_out`: run the
    held-out cases too (the gate). CompileError and usage errors propagate as from the runners."""
    root = Path(root)
    if plan.spec is not None:  # a launch-spec kind: the spec's own host launch
        from metalport.checks.specconformance import run_spec_conformance
        from metalport.port.spec import load_spec

        return run_spec_conformance(root, load_spec(plan.spec), include_held_out=held_out)
    from metalport.checks.conformance import run_conformance

    return run_conformance(root, plan.op, include_held_out=held_out, backend=backend)


__all__ = ["check_port_conformance"]
