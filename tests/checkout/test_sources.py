"""The shared source scanners on the fixture checkout and on the wheel workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.checkout import Checkout, scan_sources
from metalport.checkout.sources import ImplKind, Where
from metalport.errors import RepoError
from tests.fixture_repo import make_fixture_checkout

OPS = "aten/src/ATen/native/mps/operations"


def test_fixture_sources(tmp_path: Path) -> None:
    src = scan_sources(make_fixture_checkout(tmp_path))
    reg = src.registration("atan2_stub")
    assert (reg.kernel, str(reg.where)) == ("atan2_mps_kernel", f"{OPS}/BinaryKernel.mm:10")
    heaviside = src.function("heaviside_out_mps")
    assert (heaviside.kind, heaviside.impl_func, str(heaviside.where)) == (
        ImplKind.GRAPH, True, f"{OPS}/BinaryOps.mm:8")
    assert src.function("logaddexp_out_mps").kind is ImplKind.METAL
    assert src.function("atan2_mps_kernel").kind is ImplKind.METAL
    assert [(c.helper, c.kernel) for c in src.kernel_calls] == [
        ("exec_binary_kernel", "atan2"), ("exec_binary_kernel", "logaddexp")]
    assert [(s.macro, s.name, s.args) for s in src.shader_ops][:2] == [
        ("REGISTER_BINARY_OP", "atan2", ("float", "float")), ("REGISTER_BINARY_OP", "atan2", ("half", "half"))]
    assert src.stub("heaviside_stub").where == Where("aten/src/ATen/native/BinaryOps.h", 8)
    assert [(x.list_name, x.op, x.dtypes, x.where.line) for x in src.xfails] == [
        ("UNIMPLEMENTED_XFAILLIST", "heaviside", None, 8),
        ("UNIMPLEMENTED_XFAILLIST", "hypot", ("float16", "bfloat16"), 9),
        ("SKIPLIST", "logaddexp", ("bfloat16",), 12)]


def test_wheel_sources(wheel_workspace: Checkout) -> None:
    src = scan_sources(wheel_workspace)
    assert src.stub("heaviside_stub").where.file == "aten/src/ATen/native/BinaryOps.h"
    (entry,) = src.xfails_for("heaviside")
    assert (entry.list_name, entry.dtypes) == ("UNIMPLEMENTED_XFAILLIST", None)
    assert src.functions == () and src.registrations == ()


def test_broken_common_mps_names_its_line(tmp_path: Path) -> None:
    checkout = make_fixture_checkout(tmp_path)
    checkout.common_mps.write_text("X = {\n  'a': [\n")
    with pytest.raises(RepoError, match=r"^torch/testing/_internal/common_mps.py:2: cannot parse"):
        scan_sources(checkout)


MACRO_MM = """\
namespace at::native {
namespace mps {
static void run_graph_op(const Tensor& a, const Tensor& out) {
  MPSGraph* g = make_graph();
  runMPSGraph(stream(), g, nil, nil);
}
} // namespace mps

#define MAKE_GRAPH_OP(func_out, name)                                   \\
  TORCH_IMPL_FUNC(func_out)(const Tensor& self, const Tensor& output) { \\
    mps::run_graph_op(self, output);                                    \\
  }

MAKE_GRAPH_OP(minimum_out_mps, minimum);

TORCH_IMPL_FUNC(div_out_mode_mps)
(const Tensor& self, const Tensor& output) {
  mps::run_graph_op(self, output);
}
} // namespace at::native
"""


def test_macro_made_and_split_line_functions(tmp_path: Path) -> None:
    checkout = make_fixture_checkout(tmp_path)
    (checkout.mps_operations / "Extra.mm").write_text(MACRO_MM)
    src = scan_sources(checkout)
    extra = [(f.name, f.kind, f.impl_func, f.where.line) for f in src.functions if f.where.file.endswith("Extra.mm")]
    assert extra == [("run_graph_op", ImplKind.GRAPH, False, 3), ("minimum_out_mps", ImplKind.GRAPH, True, 14),
                     ("div_out_mode_mps", ImplKind.GRAPH, True, 16)]
