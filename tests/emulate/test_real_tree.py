"""Real upstream kernel files ($METALPORT_REAL_TREE) through the emulated tier, unmodified: every
file type-checks with every host-named kernel instantiated, with each compiler present; a build
restricted to some host names instantiates and exports exactly those."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch

from metalport.checkout.layout import KERNELS_DIR
from metalport.emulate import Compiler, check_file, checkout_include_dirs, compile_file
from tests.emulate.conftest import COMPILERS

REAL_TREE = os.environ.get("METALPORT_REAL_TREE")
pytestmark = pytest.mark.skipif(not REAL_TREE, reason="METALPORT_REAL_TREE is not set (a PyTorch checkout, "
                                                      "or ../shared/pytorch-real overlaid on the wheel)")
_REGISTER = re.compile(r"^\s*REGISTER_\w+\s*\(", re.M)


def _real_kernel_files() -> list[str]:
    """The `.metal` files under the real tree's kernels directory, relative to the tree."""
    if not REAL_TREE:
        return []
    root = Path(REAL_TREE)
    return sorted(str(p.relative_to(root)) for p in (root / KERNELS_DIR).glob("*.metal"))


@pytest.mark.parametrize("compiler", COMPILERS, ids=lambda c: c.family)
@pytest.mark.parametrize("rel", _real_kernel_files() or ["(no kernel files)"])
def test_every_real_kernel_file_type_checks(rel: str, compiler: Compiler, shader_cache: Path) -> None:
    root = Path(REAL_TREE or ".")
    path = root / rel
    assert path.is_file(), f"{root / KERNELS_DIR} holds no .metal file"
    checked = check_file(path, include_dirs=checkout_include_dirs(root), compiler=compiler,
                         cache_dir=shader_cache, filename=rel)
    # Each REGISTER_* line instantiates several host-named kernels (flavours x dtypes).
    assert checked > len(_REGISTER.findall(path.read_text())) > 0


@pytest.fixture(scope="module")
def binary_file() -> Path:
    path = Path(REAL_TREE or ".") / KERNELS_DIR / "BinaryKernel.metal"
    if not path.is_file():
        pytest.skip(f"{path} is not in the real tree")
    return path


def test_a_subset_build_exports_only_the_requested_host_names(binary_file: Path, gxx: Compiler,
                                                              shader_cache: Path) -> None:
    root = Path(REAL_TREE or ".")
    wanted = ["hypot_dense_float_float", "hypot_strided_bfloat_bfloat", "fmod_dense_scalar_*"]
    with compile_file(binary_file, include_dirs=checkout_include_dirs(root), compiler=gxx,
                      cache_dir=shader_cache, kernels=wanted) as lib:
        names = lib.function_names()
        assert "hypot_dense_float_float" in names and "hypot_strided_bfloat_bfloat" in names
        scalar = [n for n in names if n.startswith("fmod_dense_scalar_")]
        assert scalar and set(names) == {"hypot_dense_float_float", "hypot_strided_bfloat_bfloat", *scalar}
        # The upstream functor runs: hypot through binary_dense (out, a, b), one thread per element.
        a, b = torch.linspace(-3, 3, 64), torch.linspace(5, -1, 64)
        out = torch.full_like(a, float("nan"))
        lib.hypot_dense_float_float(out, a, b, threads=64)
        assert torch.allclose(out, torch.hypot(a, b), rtol=1e-6, atol=0)
