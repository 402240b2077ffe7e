"""Scanner and router on sources messier than the corpus, written in our own words.

What the real files lack: a registration macro from an included header of the tree, a macro
that calls another macro, `REGISTER_MPS_DISPATCH`, registrations in comments, strings and a dead
`#if 0` branch, braces inside strings, comments and character literals, an Objective-C block and a
lambda nested in an argument list, a helper defined in another `.mm` file, and CPU kernels that
call their stub from a braceless `if`/`else`, through a plain (not structured) function, or by
passing it as an argument.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.checkout import Checkout, scan_sources
from metalport.checkout.sources import ImplKind, Sources
from tests.fixture_repo import make_fixture_checkout

OPS = "aten/src/ATen/native/mps/operations"

HEADER = """\
#pragma once
// Registration helpers shared by several host files.
#define MESSY_KERNEL_NAME(NAME) #NAME
#define REGISTER_MESSY_DISPATCH(NAME, KERNEL)          \\
  static void NAME##_messy_kernel(TensorIteratorBase& iter) { \\
    lib.exec_unary_kernel(iter, MESSY_KERNEL_NAME(KERNEL));   \\
  }                                                           \\
  REGISTER_MPS_DISPATCH(NAME##_stub, &NAME##_messy_kernel)
"""

HELPERS_MM = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::native::mps {
// runs a kernel from the bundled library
void run_native(const std::string& name, TensorIteratorBase& iter) {
  lib.exec_binary_kernel(iter, name);
}
} // namespace at::native::mps
"""

MESSY_MM = r"""//  A host file in the shape of PyTorch's, deliberately awkward.
#include <ATen/native/mps/MessyMacros.h>
#include <ATen/native/mps/NotInTheTree.h>

namespace at::native {
namespace {
const char* kNote = "REGISTER_DISPATCH(fake_stub, &nothing) { not code";
const char kBrace = '{';
} // namespace

// REGISTER_DISPATCH(commented_stub, &nothing_kernel)
/* REGISTER_DISPATCH(block_commented_stub, &nothing_kernel); { */
#if 0
REGISTER_DISPATCH(dead_stub, &nothing_kernel);
#endif

static void graph_helper(const Tensor& self, const Tensor& out) {
  @autoreleasepool {
    auto block = ^MPSGraphTensor*(MPSGraph* graph, MPSGraphTensor* input) {
      if (input) { return [graph absoluteWithTensor:input name:nil]; }
      return input; // } unbalanced in a comment
    };
    runMPSGraph(getCurrentMPSStream(), nil, nil, nil);
  }
}

static void
lambda_kernel(TensorIteratorBase& iter)
{
  auto pick = [&](int i) { return i == 0 ? "}" : "{"; };
  mps::run_native(std::string("lambda_") + pick(0), iter);
}

TORCH_IMPL_FUNC(wobble_out_mps)
(const Tensor& self,
 const Tensor& output) {
  graph_helper(self, output);
}

REGISTER_MESSY_DISPATCH(frobnicate, frob)
REGISTER_MPS_DISPATCH(lambda_stub, &lambda_kernel);
} // namespace at::native
"""

ROUTING_CPP = """\
// CPU side of the fixture's messy ops.
#include <ATen/native/UnaryOps.h>
namespace at::native {

TORCH_IMPL_FUNC(frobnicate_out) (const Tensor& self, const Tensor& result) {
  if (self.is_complex())
    frob_complex_stub(device_type(), *this);
  else
    frobnicate_stub(device_type(), *this, /*flag=*/true);
}

Tensor& plain_sgn_out(const Tensor& self, Tensor& result) {
  auto iter = TensorIterator::unary_op(result, self);
  if (!self.is_complex()) {
    sign_stub(iter.device_type(), iter);
  } else {
    sgn_stub(iter.device_type(), iter);
  }
  return result;
}

Tensor& passed_out(const Tensor& self, Tensor& result) {
  return unary_op_impl_out(result, self, abs_stub);
}

#if 0
TORCH_IMPL_FUNC(retired_out) (const Tensor& self, const Tensor& result) {
  retired_stub(device_type(), *this);
}
#endif

DEFINE_DISPATCH(frobnicate_stub);
} // namespace at::native
"""


@pytest.fixture(scope="module")
def messy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Checkout, Sources]:
    checkout = make_fixture_checkout(tmp_path_factory.mktemp("messy"))
    (checkout.mps_dir / "MessyMacros.h").write_text(HEADER)
    (checkout.mps_operations / "Helpers.mm").write_text(HELPERS_MM)
    (checkout.mps_operations / "Messy.mm").write_text(MESSY_MM)
    (checkout.native_dir / "Messy.cpp").write_text(ROUTING_CPP)
    return checkout, scan_sources(checkout)


def test_only_live_registrations_are_found(messy: tuple[Checkout, Sources]) -> None:
    _, src = messy
    found = {(r.stub, r.kernel, str(r.where), r.macro, r.kind) for r in src.registrations
             if r.where.file.endswith("Messy.mm")}
    assert found == {
        ("frobnicate_stub", "frobnicate_messy_kernel", f"{OPS}/Messy.mm:40", "REGISTER_MESSY_DISPATCH",
         ImplKind.METAL),
        ("lambda_stub", "lambda_kernel", f"{OPS}/Messy.mm:41", None, ImplKind.METAL),
    }


def test_bodies_end_at_their_own_brace(messy: tuple[Checkout, Sources]) -> None:
    _, src = messy
    mine = [(f.name, f.kind, f.impl_func, f.where.line) for f in src.functions if f.where.file.endswith("Messy.mm")]
    assert mine == [("graph_helper", ImplKind.GRAPH, False, 17),
                    ("lambda_kernel", ImplKind.METAL, False, 28),  # via run_native in Helpers.mm
                    ("wobble_out_mps", ImplKind.GRAPH, True, 34),
                    ("frobnicate_messy_kernel", ImplKind.METAL, False, 40)]
    frob = src.function("frobnicate_messy_kernel")
    assert frob is not None and [c.kernel for c in frob.calls] == ["frob"]


def test_routes_through_braceless_branches_plain_functions_and_arguments(messy: tuple[Checkout, Sources]) -> None:
    _, src = messy
    route = src.route("frobnicate_out")
    assert route is not None and [(c.stub, c.dtypes, c.args, c.line) for c in route.calls] == [
        ("frobnicate_stub", "real", ("true",), 9), ("frob_complex_stub", "complex", (), 7)]
    assert route.describe() == ("frobnicate_out calls frobnicate_stub (real; with true), frob_complex_stub "
                                "(complex) (aten/src/ATen/native/Messy.cpp:5)")
    sgn = src.route("plain_sgn_out")
    assert sgn is not None and [(c.stub, c.dtypes) for c in sgn.calls] == [("sign_stub", "real"),
                                                                          ("sgn_stub", "complex")]
    passed = src.route("passed_out")
    assert passed is not None and passed.stubs == ("abs_stub",)
    assert src.callers("frobnicate_stub") == (route,)
    assert src.route("retired_out") is None  # inside #if 0


def test_wheel_workspace_routes_are_assumed(wheel_workspace: Checkout) -> None:
    from metalport.registry import load_registry

    registry = load_registry(wheel_workspace.native_functions)
    src = scan_sources(wheel_workspace)
    sub = src.route_op(registry.resolve("sub"), registry)
    assert sub is not None and (sub.stub, sub.assumed) == ("sub_stub", True)
    assert sub.describe() == "sub_out calls sub_stub (assumed: no body of sub_out in the tree; the stub is named after it)"
    add = src.route_op(registry.resolve("add"), registry)
    assert add is not None and (add.stub, add.assumed, add.file) == ("add_stub", True, None)


def test_scan_is_stable_when_a_file_is_unbalanced(tmp_path: Path) -> None:
    checkout = make_fixture_checkout(tmp_path)
    (checkout.mps_operations / "Broken.mm").write_text("static void half_done(TensorIteratorBase& iter) {\n"
                                                       "  lib.exec_unary_kernel(iter, \"half\");\n")
    src = scan_sources(checkout)
    broken = src.function("half_done")
    assert broken is not None and [c.kernel for c in broken.calls] == ["half"]


def test_units_are_kept_by_content_and_redone_when_an_included_header_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Note [units by content]: a second tree (a run's worktree, the next run's base) with the same
    files reads the kept units without pcpp; a changed MPS header (or one appearing where the
    include found none) makes every file that looked at it preprocessed again."""
    from metalport.checkout import cpp

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    trees = []
    for name in ("base", "worktree", "edited", "appeared"):
        checkout = make_fixture_checkout(tmp_path / name)
        (checkout.mps_dir / "MessyMacros.h").write_text(HEADER)
        (checkout.mps_operations / "Messy.mm").write_text(MESSY_MM)
        trees.append(checkout)
    (trees[2].mps_dir / "MessyMacros.h").write_text(HEADER.replace("_messy_kernel", "_edited_kernel"))
    (trees[3].mps_dir / "NotInTheTree.h").write_text("#define LATE_MACRO(X) X\n")
    runs = []
    real = cpp._preprocess
    monkeypatch.setattr(cpp, "_preprocess", lambda *a: runs.append(a[2]) or real(*a))
    cpp.forget_units()

    def registrations(checkout: Checkout) -> list[tuple[str, str]]:
        return [(r.stub, r.kernel) for r in scan_sources(checkout).registrations if r.stub == "frobnicate_stub"]

    assert registrations(trees[0]) == [("frobnicate_stub", "frobnicate_messy_kernel")]
    first = len(runs)
    assert f"{OPS}/Messy.mm" in runs
    cpp.forget_units()  # a new process: only the user cache is left
    assert registrations(trees[1]) == [("frobnicate_stub", "frobnicate_messy_kernel")]
    assert len(runs) == first  # nothing preprocessed again
    assert registrations(trees[2]) == [("frobnicate_stub", "frobnicate_edited_kernel")]
    assert runs[first:] == [f"{OPS}/Messy.mm"]  # only the file that includes the edited header
    registrations(trees[3])
    assert runs[first + 1:] == [f"{OPS}/Messy.mm"]
