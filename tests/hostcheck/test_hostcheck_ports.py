"""Every port the recipes make on the real tree type-checks as host code (METALPORT_REAL_TREE):
the touched `.mm` whose base type-checks must still type-check after the port."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.hostcheck.port import check_port
from metalport.port.plan.planner import apply_port, plan_port

REAL = os.environ.get("METALPORT_REAL_TREE")
pytestmark = pytest.mark.skipif(not REAL, reason="METALPORT_REAL_TREE is unset (real PyTorch host files)")
FULL = pytest.mark.skipif(not os.environ.get("METALPORT_HOSTCHECK_FULL"),
                          reason="opt-in (~20 s a port): set METALPORT_HOSTCHECK_FULL=1")
OPS = "aten/src/ATen/native/mps/operations"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.real_tree import overlay_real_tree

    return overlay_real_tree(tmp_path_factory.mktemp("hcp") / "base").root


@pytest.mark.parametrize(("op", "judged"), [
    ("heaviside", "BinaryKernel.mm"),
    pytest.param("frac", "UnaryKernel.mm", marks=FULL),
    pytest.param("addcmul", "PointwiseOps.mm", marks=FULL),
])
def test_a_recipe_port_type_checks(base: Path, tmp_path: Path, op: str, judged: str) -> None:
    work = tmp_path / "work"
    shutil.copytree(base, work, symlinks=True)
    apply_port(plan_port(Checkout(work), op), work)
    result = check_port(base, work, cache_dir=tmp_path.parent / "hostcheck-cache")
    assert f"{OPS}/{judged}" in {c.file for c in result.checked}, result.gaps
    assert not result.failures, "\n".join(map(str, result.failures))
    # a touched file whose base does not type-check is named in one line, not judged
    assert all(line.count("\n") == 0 for line in result.gaps)


def _table_ops() -> list[str]:
    from metalport.port import recipe_table

    return sorted(recipe_table())


@FULL
@pytest.mark.parametrize("op", _table_ops())
def test_every_recipe_port_on_the_real_tree_type_checks(base: Path, tmp_path: Path, op: str) -> None:
    work = tmp_path / "work"
    shutil.copytree(base, work, symlinks=True)
    apply_port(plan_port(Checkout(work), op), work)
    result = check_port(base, work, cache_dir=tmp_path.parent / "hostcheck-cache")
    assert result.files and not result.failures, "\n".join(map(str, result.failures))


def _spec_ops() -> list[str]:
    from metalport.port.spec.recipes import spec_recipes

    return sorted(spec_recipes())


@FULL
@pytest.mark.parametrize("op", _spec_ops())
def test_every_spec_port_on_the_wheel_workspace_type_checks(wheel_workspace, tmp_path: Path, op: str) -> None:  # noqa: ANN001
    base = Path(wheel_workspace.root)
    work = tmp_path / "work"
    shutil.copytree(base, work, symlinks=True)
    apply_port(plan_port(Checkout(work), op), work)
    result = check_port(base, work, cache_dir=tmp_path.parent / "hostcheck-cache")
    assert result.files and all(c.ok for c in result.checked), "\n".join(map(str, result.failures))


def test_a_port_of_a_file_whose_base_is_out_of_step_is_judged_against_the_base(base: Path, tmp_path: Path) -> None:
    """logical_and's port edits the corpus's BinaryOps.mm, older than the 2.13 registry (PROVENANCE.md):
    its 39 base errors are inherited, not the port's, and an error the port adds still fails it."""
    name = f"{OPS}/BinaryOps.mm"
    work = tmp_path / "work"
    shutil.copytree(base, work, symlinks=True)
    apply_port(plan_port(Checkout(work), "logical_and"), work)
    cache = tmp_path.parent / "hostcheck-cache"
    result = check_port(base, work, cache_dir=cache)
    assert name in {c.file for c in result.checked} and not result.failures, "\n".join(map(str, result.failures))
    [gap] = [g for g in result.gaps if name in g]
    assert gap.startswith(f"base mismatch: {name} does not type-check against its own registry and headers: "
                          "structured_eq_scalar_out_mps is not declared") and "its edit is judged against" in gap

    text = (work / name).read_text()
    planted = text.replace("TORCH_IMPL_FUNC(add_out_mps)", "static void planted() { undeclared_helper(1); }\n"
                           "TORCH_IMPL_FUNC(add_out_mps)", 1)
    (work / name).write_text(planted)
    result = check_port(base, work, cache_dir=cache)
    line = planted[:planted.index("undeclared_helper")].count("\n") + 1
    assert [(f.file, f.line) for f in result.failures] == [(name, line)], "\n".join(map(str, result.failures))
    assert "undeclared_helper" in result.failures[0].message
