"""Which value sets are out of scope (Note [accepted divergences] in checks/cases/numerics.py): only where
the op's OpInfo skips or xfails the value set's reference-numerics test on a non-CPU device; a skip
on every device is about NumPy's reference, and torch's own definition still judges the port."""

from __future__ import annotations

import torch
from torch.testing._internal.common_methods_invocations import op_db

from metalport.checks.cases.numerics import numerics_for


def _numerics(name: str, variant: str = ""):
    info = next(o for o in op_db if o.name == name and o.variant_test_name == variant)
    return numerics_for(name, info, 1)


def test_a_skip_on_every_device_keeps_torchs_own_definition_in_scope() -> None:
    # sign's extremal test is skipped everywhere (NumPy's sign(NaN) is NaN, torch's is 0)
    assert _numerics("sign").accepted("extremal", torch.float32) is None
    assert torch.sign(torch.tensor(float("nan"))).item() == 0.0


def test_a_declared_unhandled_value_set_is_out_of_scope() -> None:
    sinc = _numerics("sinc")
    assert not sinc.handles_large_floats
    reason = sinc.accepted("large", torch.float32)
    assert reason is not None and "handles_large_floats=False" in reason
