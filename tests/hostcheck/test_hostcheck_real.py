"""The host check on real PyTorch host files (METALPORT_REAL_TREE): the corpus's `.mm` as they are,
and planted host bugs a port can make, each failing at its line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from metalport.hostcheck import check_file
from metalport.hostcheck.port import check_port, gap_line

REAL = os.environ.get("METALPORT_REAL_TREE")
pytestmark = pytest.mark.skipif(not REAL, reason="METALPORT_REAL_TREE is unset (real PyTorch host files)")
OPS = "aten/src/ATen/native/mps/operations"
# The corpus files that do not match the 2.13 wheel's registry/headers (PROVENANCE.md): the check
# must say so, as a base mismatch, not pass them.
FULL = pytest.mark.skipif(not os.environ.get("METALPORT_HOSTCHECK_FULL"),
                          reason="opt-in (~20 s a file): set METALPORT_HOSTCHECK_FULL=1")
# CI runs one real file and one planted bug of each kind of diagnostic; the rest are opt-in.
MISMATCHED = {"BinaryOps.mm": "structured_eq_scalar_out_mps", "UnaryOps.mm": "MACOS_15_0"}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostcheck-cache")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the real tree over the wheel workspace's registry (so the yaml can be edited)."""
    from tests.real_tree import overlay_real_tree

    return overlay_real_tree(tmp_path_factory.mktemp("hc") / "tree").root


def _plant(tree: Path, tmp: Path, rel: str, edit) -> Path:  # noqa: ANN001
    """A copy of `tree` (hard links for speed) whose `rel` is `edit(text)`; returns its root."""
    root = tmp / "planted"
    shutil.copytree(tree, root, copy_function=os.link, ignore=shutil.ignore_patterns(".git"))
    target = root / rel
    text = edit(target.read_text())
    target.unlink()
    target.write_text(text)
    return root


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize("name", [pytest.param("UnaryKernel.mm", marks=FULL),
                                  pytest.param("BinaryKernel.mm", marks=FULL), "PointwiseOps.mm"])
def test_real_host_files_type_check_unmodified(tree: Path, cache_dir: Path, name: str) -> None:
    result = check_file(tree / OPS / name, tree, cache_dir=cache_dir)
    assert result.ok, "\n".join(map(str, result.errors))
    assert check_file(tree / OPS / name, tree, cache_dir=cache_dir).cached  # warm: from the cache


@FULL
@pytest.mark.parametrize("name", sorted(MISMATCHED))
def test_corpus_files_out_of_step_with_the_registry_are_named_not_passed(tree: Path, cache_dir: Path,
                                                                         name: str) -> None:
    result = check_file(tree / OPS / name, tree, cache_dir=cache_dir)
    assert not result.ok
    line = gap_line(result)
    assert line.startswith("base mismatch:") and MISMATCHED[name] in line and "\n" not in line


@FULL
def test_leftover_structured_impl_whose_registry_row_the_port_deleted(tree: Path, cache_dir: Path,
                                                                     tmp_path: Path) -> None:
    registry = "aten/src/ATen/native/native_functions.yaml"
    text = (tree / registry).read_text()
    assert "MPS: addcmul_out_mps" in text
    root = _plant(tree, tmp_path, registry, lambda t: t.replace("MPS: addcmul_out_mps", "MPS: addcmul_out", 1))
    mm = (root / OPS / "PointwiseOps.mm").read_text()
    result = check_port(tree, root, cache_dir=cache_dir)
    assert f"{OPS}/PointwiseOps.mm" in result.files  # found through the dropped kernel name
    assert result.failures and not result.gaps
    first = result.failures[0]
    assert first.file == f"{OPS}/PointwiseOps.mm"
    assert first.line == _line_of(mm, "TORCH_IMPL_FUNC(addcmul_out_mps)")
    assert "addcmul_out_mps" in first.message


PLANTS = {
    "wrong-stub-signature": ("UnaryKernel.mm",
                             lambda t: t.replace("static void erfcx_kernel(TensorIteratorBase& iter) {",
                                                 "static void erfcx_kernel(TensorIteratorBase& iter, double x) {"),
                             "REGISTER_DISPATCH(special_erfcx_stub, erfcx_kernel);"),
    "launcher-missing-argument": ("UnaryKernel.mm",
                                  lambda t: t.replace('lib.exec_unary_kernel(iter, "erfcx");',
                                                      'lib.exec_unary_kernel("erfcx");'),
                                  'lib.exec_unary_kernel("erfcx");'),
    "include-removed-while-used": ("UnaryKernel.mm",
                                   lambda t: t.replace("#include <ATen/native/UnaryOps.h>\n", ""),
                                   "REGISTER_UNARY_TI_DISPATCH(exp);"),
    "undeclared-helper": ("BinaryKernel.mm",
                          lambda t: t.replace('lib.exec_binary_kernel(iter, "copysign");',
                                              'exec_copysign_kernel(iter, "copysign");'),
                          'exec_copysign_kernel(iter, "copysign");'),
    "selector-the-sdk-lacks": ("PointwiseOps.mm",
                               lambda t: t.replace("divisionWithPrimaryTensor:firstTensor",
                                                   "dividedWithPrimaryTensor:firstTensor"),
                               "dividedWithPrimaryTensor:firstTensor"),
}


@pytest.mark.parametrize("plant", [pytest.param(p, marks=() if p == "launcher-missing-argument" else FULL)
                                   for p in sorted(PLANTS)])
def test_planted_host_bug_fails_at_its_line(tree: Path, cache_dir: Path, tmp_path: Path, plant: str) -> None:
    name, edit, needle = PLANTS[plant]
    root = _plant(tree, tmp_path, f"{OPS}/{name}", edit)
    text = (root / OPS / name).read_text()
    result = check_port(tree, root, cache_dir=cache_dir)
    assert result.files == (f"{OPS}/{name}",) and not result.gaps
    assert result.failures, f"{plant} type-checked"
    lines = {f.line for f in result.failures if f.file == f"{OPS}/{name}"}
    assert _line_of(text, needle) in lines, [str(f) for f in result.failures]
    assert result.verdict()["ok"] is False


def test_the_corpus_binaryops_is_named_out_of_step_with_its_registry_in_one_line(tree: Path, cache_dir: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                                  capsys: pytest.CaptureFixture) -> None:
    """The corpus's BinaryOps.mm implements 16 kernels (eq_scalar_out_mps, ...) that the 2.13 registry
    routes through shared `CPU, CUDA, MPS: x_out` rows (PROVENANCE.md): a real build of this tree fails
    there too, so the errors stay (no false pass), and one line says why."""
    from metalport.cli import main

    monkeypatch.setenv("METALPORT_CACHE_DIR", str(cache_dir))
    assert main(["hostcheck", str(tree / OPS / "BinaryOps.mm"), "--repo", str(tree)]) == 1
    err = capsys.readouterr().err
    [line] = [x for x in err.splitlines() if "no row of" in x]
    assert line == (f"{OPS}/BinaryOps.mm: no row of aten/src/ATen/native/native_functions.yaml routes to 16 "
                    "kernel(s) the file implements with TORCH_IMPL_FUNC (atan2_out_mps, eq_scalar_out_mps, "
                    "eq_tensor_out_mps, ge_scalar_out_mps and 12 more): torchgen declares structured_<kernel> "
                    "only for a kernel a row names, so the file and the registry come from different PyTorch "
                    "versions")
