"""The real corpus with pre-port activation files laid over it: `Activation.mm` (MPSGraph softplus,
log_sigmoid, glu, threshold), `ActivationKernel.mm`/`.metal` and `kernels/Activation.h` (elu's
params route, hardshrink, leaky_relu) and `TensorCompare.mm` (MPSGraph nan_to_num), written for
these tests in our own words after the real files' shape (the corpus lacks them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from metalport.checkout.workspace import GIT_IDENTITY
from tests.real_tree import overlay_real_tree

FIXTURE = Path(__file__).parent / "fixtures" / "activation"


def activation_tree(target: Path) -> Path:
    """A writable real tree ($METALPORT_REAL_TREE over a wheel workspace) with the activation
    fixtures committed on top; skips the test when the variable is unset."""
    root = overlay_real_tree(target, writable=True).root
    for path in sorted(p for p in FIXTURE.rglob("*") if p.is_file()):
        dest = root / path.relative_to(FIXTURE)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for argv in (["add", "-A"], ["commit", "-q", "-m", "pre-port activation files"]):
        subprocess.run(["git", *GIT_IDENTITY, *argv], cwd=root, check=True, capture_output=True, timeout=120)
    for key, value in (("user.name", "Reviewer"), ("user.email", "reviewer@localhost")):
        subprocess.run(["git", "config", key, value], cwd=root, check=True)
    return root
