"""Helpers for conformance tests: fixture checkouts in PyTorch's kernels directory layout."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
KERNELS = Path("aten/src/ATen/native/mps/kernels")


def make_checkout(root: Path, kernels: dict[str, str], headers: dict[str, str] | None = None) -> Path:
    """A minimal checkout: `kernels` (name -> text) under the kernels directory, optional c10/metal headers."""
    (root / KERNELS).mkdir(parents=True)
    for name, text in kernels.items():
        (root / KERNELS / name).write_text(text)
    for name, text in (headers or {}).items():
        (root / "c10/metal").mkdir(parents=True, exist_ok=True)
        (root / "c10/metal" / name).write_text(text)
    return root
