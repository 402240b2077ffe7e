"""The conformance host lookup on real upstream files: the stub the op's CPU kernel calls leads to
its registration (macro-made too) and the kernel name the registered function passes."""

from __future__ import annotations

import pytest

from metalport.checkout import Checkout
from metalport.checks.hostcode import HostCode, find_host_code

OPS = "aten/src/ATen/native/mps/operations"


@pytest.mark.parametrize(("op", "expected"), [
    # special_chebyshev_polynomial_t_out calls chebyshev_polynomial_t_stub (BinaryOps.cpp:491)
    ("special_chebyshev_polynomial_t", HostCode("chebyshev_polynomial_t", f"{OPS}/BinaryKernel.mm:105")),
    # REGISTER_UNARY_TI_DISPATCH(exp) makes exp_kernel_mps, which passes #NAME
    ("exp", HostCode("exp", f"{OPS}/UnaryKernel.mm:53")),
    ("special_erfcx", HostCode("erfcx", f"{OPS}/UnaryKernel.mm:49")),
    # REGISTER_MPS_UNARY_STUB(acosh, acosh): an MPSGraph kernel, nothing to run in emulation
    ("acosh", HostCode(None, f"{OPS}/UnaryOps.mm:176",
                       f"acosh_stub is registered with the MPSGraph kernel mps_acosh_kernel ({OPS}/UnaryOps.mm:176)")),
])
def test_host_lookup_follows_the_route(real_tree_workspace: Checkout, op: str, expected: HostCode) -> None:
    assert find_host_code(real_tree_workspace.root, op) == expected
