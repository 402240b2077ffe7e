"""The repository model: a PyTorch checkout recognised by its layout."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from metalport.errors import RepoError

NATIVE = Path("aten/src/ATen/native")
KERNELS_DIR = "aten/src/ATen/native/mps/kernels"  # shaders, relative to a checkout's root
OPERATIONS_DIR = "aten/src/ATen/native/mps/operations"  # host stubs, relative to a checkout's root
REQUIRED = (
    NATIVE / "native_functions.yaml",
    Path(OPERATIONS_DIR),
    Path(KERNELS_DIR),
    Path("c10/metal"),
    Path("torch/testing/_internal/common_mps.py"),
)
WORKSPACE_MARKER = "METALPORT_WORKSPACE.md"


@dataclass(frozen=True)
class Checkout:
    """A PyTorch source tree (or a wheel workspace) at `root`; every layout path is a property."""

    root: Path

    @property
    def native_dir(self) -> Path:
        """`aten/src/ATen/native`: the registry and the DECLARE_DISPATCH headers."""
        return self.root / NATIVE

    @property
    def native_functions(self) -> Path:
        """The registry, native_functions.yaml."""
        return self.native_dir / "native_functions.yaml"

    @property
    def tags(self) -> Path:
        """tags.yaml next to the registry."""
        return self.native_dir / "tags.yaml"

    @property
    def mps_dir(self) -> Path:
        """`aten/src/ATen/native/mps`."""
        return self.native_dir / "mps"

    @property
    def mps_operations(self) -> Path:
        """Host stubs, `mps/operations/*.mm`."""
        return self.mps_dir / "operations"

    @property
    def mps_kernels(self) -> Path:
        """Shaders, `mps/kernels/*.metal`."""
        return self.mps_dir / "kernels"

    @property
    def c10_metal(self) -> Path:
        """`c10/metal/*.h`, the shader helper headers."""
        return self.root / "c10/metal"

    @property
    def common_mps(self) -> Path:
        """`torch/testing/_internal/common_mps.py`, the MPS xfail/skip lists."""
        return self.root / "torch/testing/_internal/common_mps.py"

    @property
    def test_mps(self) -> Path:
        """`test/test_mps.py` (absent in a wheel workspace)."""
        return self.root / "test/test_mps.py"

    @property
    def is_wheel_workspace(self) -> bool:
        """True for a tree made by `metalport workspace init` (no `.mm`/`.metal` sources)."""
        return (self.root / WORKSPACE_MARKER).is_file()

    def rel(self, path: Path) -> str:
        """`path` relative to the root, as written in messages."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


def _missing(root: Path) -> Path | None:
    return next((p for p in REQUIRED if not (root / p).exists()), None)


def find_checkout(path: Path | None = None) -> Checkout:
    """The checkout at `path`, or the one enclosing the working directory when `path` is None."""
    hint = "pass --repo at a PyTorch checkout, or create one with `metalport workspace init DIR`"
    if path is not None:
        root = Path(path).expanduser().resolve()
        if not root.is_dir():
            raise RepoError("not a directory", location=str(root), hint=hint)
        missing = _missing(root)
        if missing is not None:
            raise RepoError(f"not a PyTorch checkout: missing {missing}", location=str(root), hint=hint)
        return Checkout(root)
    start = Path.cwd().resolve()
    for candidate in (start, *start.parents):
        if _missing(candidate) is None:
            return Checkout(candidate)
    raise RepoError(f"not inside a PyTorch checkout: missing {_missing(start)}", location=str(start), hint=hint)
