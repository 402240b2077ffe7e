"""`init_workspace`: a git repository in PyTorch's layout built from the installed torch wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from metalport.checkout.layout import NATIVE, WORKSPACE_MARKER, Checkout
from metalport.errors import RepoError, UsageError, fault_errno, filesystem_error, probe_errno

NOTICE = ("The torch wheel carries no .mm / .metal sources, so this workspace is for trying metalport, "
          "not for upstream work: use a real PyTorch checkout for that.")
_TESTING = ("common_mps.py", "common_utils.py", "__init__.py", "opinfo/__init__.py", "opinfo/core.py",
            "common_methods_invocations.py", "opinfo/definitions/special.py", "opinfo/definitions/linalg.py",
            "opinfo/definitions/fft.py", "opinfo/definitions/_masked.py", "common_modules.py")
GIT_IDENTITY = ("-c", "user.name=metalport", "-c", "user.email=metalport@localhost",
                "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main")


def _wheel_paths() -> tuple[Path, Path]:
    """(torchgen's packaged native dir, torch's package dir), found without importing torch."""
    import importlib.util

    torchgen_spec = importlib.util.find_spec("torchgen")
    torch_spec = importlib.util.find_spec("torch")
    if torchgen_spec is None or torch_spec is None or not torch_spec.origin or not torchgen_spec.origin:
        raise RepoError("the torch wheel is not installed", hint="pip install torch==2.13.0")
    return (Path(torchgen_spec.origin).parent / "packaged/ATen/native", Path(torch_spec.origin).parent)


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _populate(root: Path) -> None:
    packaged, torch_dir = _wheel_paths()
    native = root / NATIVE
    _copy(packaged / "native_functions.yaml", native / "native_functions.yaml")
    _copy(packaged / "tags.yaml", native / "tags.yaml")
    for header in sorted((torch_dir / "include/c10/metal").glob("*.h")):
        _copy(header, root / "c10/metal" / header.name)
    for header in sorted((torch_dir / "include/ATen/native").glob("*.h")):
        if "DECLARE_DISPATCH(" in header.read_text(encoding="utf-8", errors="replace"):
            _copy(header, native / header.name)
    testing = torch_dir / "testing/_internal"
    for name in _TESTING:
        if (testing / name).is_file():
            _copy(testing / name, root / "torch/testing/_internal" / name)
    for folder in ("mps/operations", "mps/kernels"):
        (native / folder).mkdir(parents=True, exist_ok=True)
        (native / folder / ".gitkeep").write_text("")
    (root / WORKSPACE_MARKER).write_text(f"# metalport wheel workspace\n\n{NOTICE}\n", encoding="utf-8")


def _git(root: Path, *argv: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
    proc = subprocess.run(["git", *GIT_IDENTITY, *argv], cwd=root, capture_output=True, text=True,
                          timeout=120, env=env)
    if proc.returncode != 0:
        if fault_errno(proc.stderr) or probe_errno(str(root)):
            raise filesystem_error(RuntimeError(proc.stderr), what="the workspace", path=root,
                                   elsewhere="choose another DIR")
        raise RepoError(f"git {argv[0]} failed: {proc.stderr.strip().splitlines()[-1:]}", location=str(root),
                        hint="check that git is installed and the directory is writable")


def init_workspace(directory: Path | str, overlay: Path | str | None = None) -> Checkout:
    """Create a wheel workspace at `directory` (absent or empty) with one initial commit; with
    `overlay` (a folder in PyTorch's layout, e.g. real upstream `.mm`/`.metal` files), its files are
    laid over the workspace in a second commit."""
    target = Path(directory).expanduser().resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError("directory is not empty", location=str(target),
                         hint="choose a new or empty directory; nothing was written")
    layer = Path(overlay).expanduser().resolve() if overlay is not None else None
    if layer is not None and not layer.is_dir():
        raise UsageError("--overlay is not a folder", location=str(layer),
                         hint="name a folder in PyTorch's layout (holding aten/...); nothing was written")
    if layer is not None and (target == layer or layer in target.parents):
        raise UsageError("the workspace cannot be inside the folder laid over it", location=str(target),
                         hint="choose a DIR outside --overlay; nothing was written")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".metalport-init-", dir=target.parent))
    except OSError as err:
        raise filesystem_error(err, what="the workspace", elsewhere="choose another DIR") from None
    try:
        _populate(staging)
        _git(staging, "init", "-q")
        _git(staging, "add", "-A")
        _git(staging, "commit", "-q", "-m", "metalport workspace from the installed torch wheel")
        if layer is not None:
            _lay_over(layer, staging)
            _git(staging, "add", "-A")
            _git(staging, "commit", "-q", "--allow-empty", "-m", f"files laid over the workspace from {layer}")
        if target.exists():
            target.rmdir()
        staging.rename(target)
    except OSError as err:
        shutil.rmtree(staging, ignore_errors=True)
        raise filesystem_error(err, what="the workspace", path=target,
                               elsewhere="choose another DIR") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Checkout(target)


def _lay_over(source: Path, target: Path) -> None:
    """Copy every regular file under `source` (no `.git`) to the same place under `target`."""
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if ".git" in rel.parts or path.is_symlink() or not path.is_file():
            continue
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
