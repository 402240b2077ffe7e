"""The source scanners on real upstream files (METALPORT_REAL_TREE, see tests/conftest.py).

Every expectation below was written by reading the corpus files, not by running the scanner:
the line numbers are where a reader finds the definition or the macro invocation.
"""

from __future__ import annotations

import pytest

from metalport.checkout import Checkout, scan_sources
from metalport.checkout.sources import ImplKind, Sources

OPS = "aten/src/ATen/native/mps/operations"
NATIVE = "aten/src/ATen/native"


@pytest.fixture(scope="module")
def src(real_tree_workspace: Checkout) -> Sources:
    return scan_sources(real_tree_workspace)


def test_every_registration_is_found_with_its_macro(src: Sources) -> None:
    by_stub = {r.stub: r for r in src.registrations}
    # BinaryKernel.mm writes 30 REGISTER_DISPATCH lines out; UnaryKernel.mm has 29
    # REGISTER_UNARY_TI_DISPATCH(x) plus 3 written out; UnaryOps.mm 6 REGISTER_MPS_UNARY_STUB.
    assert len(src.registrations) == len(by_stub) == 68
    exp = by_stub["exp_stub"]
    assert (exp.kernel, str(exp.where), exp.macro, exp.kind) == (
        "exp_kernel_mps", f"{OPS}/UnaryKernel.mm:53", "REGISTER_UNARY_TI_DISPATCH", ImplKind.METAL)
    assert str(by_stub["sigmoid_stub"].where) == f"{OPS}/UnaryKernel.mm:81"
    for line, stub in ((176, "acosh_stub"), (177, "asinh_stub"), (178, "atanh_stub"), (181, "trunc_stub")):
        reg = by_stub[stub]
        assert (str(reg.where), reg.macro, reg.kind) == (
            f"{OPS}/UnaryOps.mm:{line}", "REGISTER_MPS_UNARY_STUB", ImplKind.GRAPH)
    cheb = by_stub["chebyshev_polynomial_t_stub"]
    assert (cheb.kernel, str(cheb.where), cheb.macro, cheb.kind) == (
        "chebyshev_polynomial_t_mps_kernel", f"{OPS}/BinaryKernel.mm:225", None, ImplKind.METAL)
    assert by_stub["lerp_kernel_scalar_weight"].kind is ImplKind.METAL  # a stub not named *_stub
    assert by_stub["special_erfcx_stub"].where.line == 82


def test_functions_are_brace_matched_and_follow_helpers_across_files(src: Sources) -> None:
    def fn(name: str) -> tuple[str, ImplKind, bool]:
        found = src.function(name)
        assert found is not None, name
        return str(found.where), found.kind, found.impl_func

    # add/sub: add_sub_lerp_template -> mps::binary_op_kernel, defined in BinaryKernel.mm
    assert fn("add_out_mps") == (f"{OPS}/BinaryOps.mm:261", ImplKind.METAL, True)
    assert fn("sub_out_mps") == (f"{OPS}/BinaryOps.mm:265", ImplKind.METAL, True)
    assert fn("binary_op_kernel") == (f"{OPS}/BinaryKernel.mm:34", ImplKind.METAL, False)
    # an MPSGraph body with an Objective-C block, then a macro-made TORCH_IMPL_FUNC and plain function
    assert fn("atan2_out_mps") == (f"{OPS}/BinaryOps.mm:254", ImplKind.GRAPH, True)
    assert fn("eq_scalar_out_mps") == (f"{OPS}/BinaryOps.mm:233", ImplKind.GRAPH, True)
    assert fn("logical_xor_out_mps") == (f"{OPS}/BinaryOps.mm:252", ImplKind.GRAPH, False)
    assert fn("xlogy_out_mps") == (f"{OPS}/BinaryOps.mm:277", ImplKind.GRAPH, True)
    # the lambda body of sgn_out_mps does not end the function; unary_op is an MPSGraph helper
    assert fn("sgn_out_mps") == (f"{OPS}/UnaryOps.mm:321", ImplKind.GRAPH, True)
    assert fn("mps_acosh_kernel") == (f"{OPS}/UnaryOps.mm:176", ImplKind.GRAPH, False)
    assert fn("addcmul_out_mps") == (f"{OPS}/PointwiseOps.mm:99", ImplKind.GRAPH, True)
    # cumsum runs scan_simple_mps_impl, defined in a file outside the corpus: unknown, not guessed
    assert fn("cumsum_out_mps") == (f"{OPS}/UnaryOps.mm:311", ImplKind.UNKNOWN, True)
    assert fn("pow_Scalar_out_mps")[1] is ImplKind.UNKNOWN  # redispatches through at::pow_out


def test_kernel_names_come_from_expanded_bodies(src: Sources) -> None:
    exp = src.function("exp_kernel_mps")
    assert exp is not None and [(c.helper, c.kernel, c.where.line) for c in exp.calls] == [
        ("exec_unary_kernel", "exp", 53)]
    power = src.function("pow_tensor_scalar_kernel")
    assert power is not None and [c.kernel for c in power.calls] == [
        "sqr", "pow_scalar", "reciprocal", "rsqrt", "sqrt", "pow_scalar", "pow_scalar"]
    assert src.function("add_sub_lerp_template").calls == ()  # its kernel name is computed


def test_routes_read_from_the_cpu_kernels(src: Sources) -> None:
    def calls(kernel: str) -> list[tuple[str, str, tuple[str, ...], str]]:
        route = src.route(kernel)
        assert route is not None and not route.assumed, kernel
        return [(c.stub, c.dtypes, c.args, c.where) for c in route.calls]

    assert calls("sub_out") == [("add_stub", "all", ("-alpha",), f"{NATIVE}/BinaryOps.cpp:448")]
    assert calls("sgn_out") == [("sign_stub", "real", (), f"{NATIVE}/UnaryOps.cpp:751"),
                                ("sgn_stub", "complex", (), f"{NATIVE}/UnaryOps.cpp:749")]
    assert calls("special_chebyshev_polynomial_t_out") == [
        ("chebyshev_polynomial_t_stub", "all", (), f"{NATIVE}/BinaryOps.cpp:491")]
    assert calls("exp_out") == [("exp_stub", "all", (), f"{NATIVE}/UnaryOps.cpp:334")]  # CREATE_UNARY_TORCH_IMPL_FUNC
    assert calls("addcmul_out") == [("addcmul_stub", "all", ("value",), f"{NATIVE}/PointwiseOps.cpp:64")]
    assert [(s, d) for s, d, _, _ in calls("div_out_mode")] == [
        ("div_true_stub", "some"), ("div_trunc_stub", "some"), ("div_floor_stub", "some")]
    # logit_out passes logit_stub to a helper forwarding its trailing `Args... args` to the stub;
    # abs_out's helper takes a bool of its own there, which the stub never sees
    assert calls("logit_out") == [("logit_stub", "all", ("Scalar(eps ? eps.value() : -1.0)",),
                                   f"{NATIVE}/UnaryOps.cpp:778")]
    assert [c[2] for c in calls("abs_out")] == [()]
    route = src.route("sgn_out")
    assert route is not None and route.describe() == (
        f"sgn_out calls sign_stub (real), sgn_stub (complex) ({NATIVE}/UnaryOps.cpp:747)")
    assert src.route("add_out") is None  # generated from ufunc_inner_loop, no body in the tree
    assert [r.kernel for r in src.callers("sub_stub")] == []  # defined, never called
