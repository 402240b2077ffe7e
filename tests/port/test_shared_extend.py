"""A port that needs a variant of shared infrastructure adds it in its home file (issue 20): the
ternary launcher with a scalar goes to MetalShaderLibrary (declared in MetalShaderLibrary.h,
defined in OperationUtils.mm) and its kernels and REGISTER_TERNARY_ALPHA_OP to c10/metal/indexing.h,
as upstream's addcmul/addcdiv migration did, not into PointwiseOps.mm/.metal.

On the real corpus ($METALPORT_REAL_TREE over a wheel workspace), with OperationUtils.mm from
tests/port/fixtures/shared_launcher (the corpus lacks it) where the test needs the launcher's home.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.checks.contract.family import check_family
from metalport.port.plan.family import apply_family, plan_family
from metalport.port.plan.planner import plan_port
from metalport.port.write.shared import HOMES, KERNEL_HOME, LAUNCHER_DECL, LAUNCHER_HOME, extend_texts
from tests.real_tree import overlay_real_tree

FIXTURE = Path(__file__).parent / "fixtures" / "shared_launcher" / "OperationUtils.mm"
KERNEL = "aten/src/ATen/native/mps/kernels/PointwiseOps.metal"
HOST = "aten/src/ATen/native/mps/operations/PointwiseOps.mm"


def _git(root: Path, *argv: str) -> str:
    from metalport.checkout.workspace import GIT_IDENTITY

    return subprocess.run(["git", *GIT_IDENTITY, *argv], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def _tree(tmp_path: Path) -> Checkout:
    checkout = overlay_real_tree(tmp_path / "tree", writable=True)
    shutil.copyfile(FIXTURE, checkout.root / LAUNCHER_HOME)
    _git(checkout.root, "add", "-A")
    _git(checkout.root, "commit", "-q", "-m", "OperationUtils.mm")
    return checkout


def _clang_format_clean(root: Path, rel: str) -> str:
    from tests.recipes.test_real_tree import _clang_format_dirty

    return _clang_format_dirty(root, rel)


def test_addcmul_and_addcdiv_extend_the_shared_launcher_and_kernels_in_their_home(tmp_path: Path) -> None:
    from metalport.executors import emulated

    checkout = _tree(tmp_path)
    family = plan_family(checkout, ("addcmul", "addcdiv"))
    first, second = family.members
    assert (first.shared_launcher, second.shared_launcher) == ("extend", "reuse")
    assert first.reuse[0].startswith("extends MetalShaderLibrary::exec_ternary_kernel with a scalar overload")
    assert second.reuse[0].startswith("reuses MetalShaderLibrary::exec_ternary_kernel with a scalar")
    assert set(HOMES) <= set(first.allowed_paths) and not set(HOMES) & set(second.allowed_paths)
    apply_family(family, checkout.root)
    assert check_family(checkout.root, checkout.root, family) == []
    _git(checkout.root, "add", "-A")
    _git(checkout.root, "commit", "-q", "-m", "[MPS] Migrate addcmul/addcdiv to Metal")
    host = (checkout.root / HOST).read_text()
    kernel = (checkout.root / KERNEL).read_text()
    assert "exec_ternary_kernel_with_alpha" not in host and "#include <ATen/OpMathType.h>" not in host
    assert host.count("static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();") == 1
    assert host.index("getBundledLibrary()") < host.index("lib.exec_ternary_kernel(")
    for op in ("addcmul", "addcdiv"):
        assert f'  lib.exec_ternary_kernel(iter, "{op}", scalar);\n' in host
        assert f"REGISTER_TERNARY_ALPHA_OP({op}, float, float, float);" in kernel
    assert "ternary_alpha_dense(" not in kernel and "#define REGISTER_TERNARY_ALPHA_OP" not in kernel
    indexing = (checkout.root / KERNEL_HOME).read_text()
    assert indexing.count("#define REGISTER_TERNARY_ALPHA_OP(") == 1 and indexing.count("kernel void ternary_alpha_dense(") == 1
    assert indexing.index("#define REGISTER_TERNARY_ALPHA_OP(") < indexing.rindex("} // namespace metal")
    decl = (checkout.root / LAUNCHER_DECL).read_text()
    assert decl.count("void exec_ternary_kernel(") == 2 and "const c10::Scalar& alpha);" in decl
    home = (checkout.root / LAUNCHER_HOME).read_text()
    assert home.count("void MetalShaderLibrary::exec_ternary_kernel(") == 2
    assert "exec_ternary_kernel(sub_iter, name, alpha);" in home and "lib." not in home
    for rel in (*HOMES, HOST, KERNEL):
        assert _clang_format_clean(checkout.root, rel) == "", rel
    # The kernel file compiles against the extended c10/metal/indexing.h of the tree, and addcmul's
    # values match torch CPU through the shared kernels.
    assert emulated.build(checkout.root, first) == []
    report, failures = emulated.test(checkout.root, first, held_out=False)
    assert (report.status, [str(f) for f in failures]) == ("pass", [])


def test_extending_twice_changes_nothing(tmp_path: Path) -> None:
    checkout = _tree(tmp_path)
    texts = {rel: (checkout.root / rel).read_text() for rel in HOMES}
    once = extend_texts(texts, checkout.root)
    assert all(once[rel] != texts[rel] for rel in HOMES)
    assert extend_texts(once, checkout.root) == once


def test_without_the_launchers_home_the_file_local_copy_stays_and_the_plan_says_why(tmp_path: Path) -> None:
    checkout = overlay_real_tree(tmp_path / "tree")  # the corpus has no OperationUtils.mm
    plan = plan_port(checkout, "addcmul")
    assert plan.shared_launcher is None and LAUNCHER_HOME not in plan.allowed_paths
    assert plan.reuse[0].startswith("adds a file-local exec_ternary_kernel_with_alpha launcher and kernels")
    assert f"{LAUNCHER_HOME}'s MetalShaderLibrary::exec_ternary_kernel definition" in plan.reuse[0]


@pytest.mark.skipif(not os.environ.get("METALPORT_HOSTCHECK_FULL"), reason="opt-in (~40 s): set METALPORT_HOSTCHECK_FULL=1")
def test_the_extended_launcher_and_the_ports_host_code_type_check(tmp_path: Path) -> None:
    from metalport.hostcheck.port import check_port

    checkout = _tree(tmp_path)
    work = tmp_path / "work"
    shutil.copytree(checkout.root, work, symlinks=True)
    apply_family(plan_family(Checkout(work), ("addcmul", "addcdiv")), work)
    result = check_port(checkout.root, work, cache_dir=tmp_path / "hostcheck-cache")
    assert {HOST, LAUNCHER_HOME} <= {c.file for c in result.checked}, result.gaps
    assert not result.failures, "\n".join(map(str, result.failures))
