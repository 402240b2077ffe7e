"""`metalport backlog --json` on real upstream files (METALPORT_REAL_TREE over the 2.13 wheel registry).

Expectations written from reading the corpus: which `.mm` line implements each op, how it runs
(Metal or MPSGraph), and which stub its CPU kernel calls in UnaryOps.cpp / BinaryOps.cpp /
PointwiseOps.cpp.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from metalport.checkout import Checkout
from metalport.cli import main

OPS = "aten/src/ATen/native/mps/operations"
NATIVE = "aten/src/ATen/native"

# op: (status, stub, stubs, MPS implementation, stub_registered, stub_assumed)
EXPECTED = {
    # add/sub run on Metal: add_sub_lerp_template -> binary_op_kernel (BinaryKernel.mm)
    "add": ("mps-metal", "add_stub", ["add_stub"], f"{OPS}/BinaryOps.mm:261", None, True),  # ufunc kernel
    "sub": ("mps-metal", "add_stub", ["add_stub"], f"{OPS}/BinaryOps.mm:265", None, False),  # -alpha
    # registered through REGISTER_MPS_UNARY_STUB, an MPSGraph kernel: port candidates
    "acosh": ("mps-graph-stub", "acosh_stub", ["acosh_stub"], f"{OPS}/UnaryOps.mm:176", True, False),
    "asinh": ("mps-graph-stub", "asinh_stub", ["asinh_stub"], f"{OPS}/UnaryOps.mm:177", True, False),
    "atanh": ("mps-graph-stub", "atanh_stub", ["atanh_stub"], f"{OPS}/UnaryOps.mm:178", True, False),
    "ceil": ("mps-graph-stub", "ceil_stub", ["ceil_stub"], f"{OPS}/UnaryOps.mm:179", True, False),
    "trunc": ("mps-graph-stub", "trunc_stub", ["trunc_stub"], f"{OPS}/UnaryOps.mm:181", True, False),
    # REGISTER_UNARY_TI_DISPATCH(exp) and friends: native, shared
    "exp": ("shared", "exp_stub", ["exp_stub"], f"{OPS}/UnaryKernel.mm:53", True, False),
    "sigmoid": ("shared", "sigmoid_stub", ["sigmoid_stub"], f"{OPS}/UnaryKernel.mm:81", True, False),
    "special_erfcx": ("shared", "special_erfcx_stub", ["special_erfcx_stub"], f"{OPS}/UnaryKernel.mm:82",
                      True, False),
    "special_chebyshev_polynomial_t": ("shared", "chebyshev_polynomial_t_stub", ["chebyshev_polynomial_t_stub"],
                                       f"{OPS}/BinaryKernel.mm:225", True, False),
    # 2.13 routes atan2 through `CPU, CUDA, MPS: atan2_out`, but this BinaryOps.mm predates it
    "atan2": ("shared", "atan2_stub", ["atan2_stub"], None, False, False),
    # sgn_out: sign_stub for real dtypes, sgn_stub for complex; MPS has sgn_out_mps (MPSGraph)
    "sgn": ("mps-graph", "sign_stub", ["sign_stub", "sgn_stub"], f"{OPS}/UnaryOps.mm:321", None, False),
    "signbit": ("mps-graph", "signbit_stub", ["signbit_stub"], f"{OPS}/UnaryOps.mm:139", None, False),
    "addcmul": ("mps-graph", "addcmul_stub", ["addcmul_stub"], f"{OPS}/PointwiseOps.mm:99", None, False),
    "logical_xor": ("mps-graph", "logical_xor_stub", ["logical_xor_stub"], f"{OPS}/BinaryOps.mm:252", None,
                    False),
    # the 2.13 row names logical_not_out_mps, which this UnaryOps.mm lacks; nothing registers the stub
    "logical_not": ("mps-unknown", "logical_not_stub", ["logical_not_stub"], None, None, False),
}


def _backlog_json(*argv: str) -> list[dict]:
    """`metalport backlog ... --json` as a user runs it: exit 0 and the rows it prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["backlog", *argv, "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def rows(real_tree_workspace: Checkout) -> dict[str, dict]:
    argv = ["--repo", str(real_tree_workspace.root)]
    for op in EXPECTED:
        argv += ["--op", op]
    return {r["op"]: r for r in _backlog_json(*argv)}


@pytest.mark.parametrize("op", sorted(EXPECTED))
def test_status_stub_and_implementation_match_the_files(rows: dict[str, dict], op: str) -> None:
    row = rows[op]
    got = (row["status"], row["stub"], row["stubs"], row["mps_impl"], row["stub_registered"], row["stub_assumed"])
    assert got == EXPECTED[op]


def test_routes_say_where_they_were_read(rows: dict[str, dict]) -> None:
    assert rows["sub"]["route"] == f"sub_out calls add_stub (with -alpha) ({NATIVE}/BinaryOps.cpp:445)"
    assert rows["sgn"]["route"] == f"sgn_out calls sign_stub (real), sgn_stub (complex) ({NATIVE}/UnaryOps.cpp:747)"
    assert rows["add"]["route"] == "add_out calls add_stub (assumed: ufunc_inner_loop kernels call <op>_stub)"


def test_graph_stubs_are_port_candidates(real_tree_workspace: Checkout) -> None:
    everything = _backlog_json("--repo", str(real_tree_workspace.root))
    found = [r for r in everything if r["status"] == "mps-graph-stub"]
    assert sorted(r["op"] for r in found) == ["acosh", "asinh", "atanh", "ceil", "floor", "trunc"]
    first_shared = min(r["ease"] for r in everything if r["status"] == "shared" and r["ease"] is not None)
    assert max(r["ease"] for r in found) < first_shared  # ranked with the port candidates


def test_one_op_on_the_real_tree_is_the_scan_item(real_tree_workspace: Checkout, rows: dict[str, dict]) -> None:
    """What `resolve`/`plan` classify alone (`backlog_item`) is the backlog's row but its rank."""
    from metalport.backlog.scan import backlog_item
    from metalport.registry import load_registry

    registry = load_registry(real_tree_workspace.native_functions)
    for op, row in rows.items():
        assert backlog_item(real_tree_workspace, registry, op).to_json() == {**row, "ease": None}, op
