"""What the pipeline knows about the installed torch without importing it.

Importing torch takes 1.5–3 s and the OpInfo database another 4 s; only the stages that run
kernels (conformance, `metalport kernels`, the macOS tests) need them. Everything else asks here:
the torch version and include folder (package metadata), whether MPS can exist on this OS, and
the OpInfo facts a plan needs (CPU dtypes, autograd support), which are read from `op_db` once
per torch version and kept in the user cache (`<user cache>/opinfo/<version>.json`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import platform
from dataclasses import dataclass
from pathlib import Path

from metalport.atomic import write_text_atomic
from metalport.errors import MetalportError
from metalport.user_cache import user_cache_dir

FORMAT = 2  # bump when OpInfoFacts changes


@dataclass(frozen=True)
class OpInfoFacts:
    """One OpInfo (the entry without a variant name) as a plan sees it."""

    name: str
    cpu_dtypes: tuple[str, ...]  # torch dtype names without `torch.`: "float32", "int64", ...
    supports_autograd: bool
    mps_dtypes: tuple[str, ...] = ()  # the dtypes the OpInfo lists for MPS (Note [test_dtypes stays])


def torch_version() -> str:
    """The installed torch's version (`2.13.0+cpu`), from its package metadata."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        raise MetalportError("torch is not installed", hint="pip install torch==2.13.0") from None


def torch_include_dir() -> Path:
    """The installed torch wheel's `include` folder (`c10/metal`, `ATen/native/*.h`)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise MetalportError("torch is not installed, so there are no c10/metal headers",
                             hint="pip install torch==2.13.0")
    return Path(list(spec.submodule_search_locations)[0]) / "include"


def mps_available() -> bool:
    """True when torch can run on MPS here; off macOS False without importing torch."""
    if platform.system() != "Darwin":
        return False
    import torch

    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def opinfo_facts(*, cache_dir: Path | None = None) -> dict[str, OpInfoFacts]:
    """Every OpInfo and PythonRefInfo (`_refs.x`) without a variant name, by name; read from the
    cache of this torch version."""
    path = (cache_dir or user_cache_dir("opinfo")) / f"{torch_version()}-{FORMAT}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {name: OpInfoFacts(name, tuple(d), bool(grad), tuple(mps)) for name, (d, grad, mps) in data.items()}
    except (OSError, ValueError, TypeError):
        pass  # first use with this torch (or a damaged file): read op_db and write it below
    facts = _facts_from_op_db()
    data = {f.name: [list(f.cpu_dtypes), f.supports_autograd, list(f.mps_dtypes)] for f in facts.values()}
    try:
        write_text_atomic(path, json.dumps(data, sort_keys=True))
    except OSError:
        pass  # a read-only cache only costs the next op_db import
    return facts


def _facts_from_op_db() -> dict[str, OpInfoFacts]:
    from torch.testing._internal.common_methods_invocations import op_db, python_ref_db

    facts: dict[str, OpInfoFacts] = {}
    for info in (*op_db, *python_ref_db):
        if info.variant_test_name or info.name in facts:
            continue
        dtypes = tuple(sorted(str(d).removeprefix("torch.") for d in info.supported_dtypes("cpu")))
        mps = tuple(sorted(str(d).removeprefix("torch.") for d in info.supported_dtypes("mps")))
        facts[info.name] = OpInfoFacts(info.name, dtypes, bool(info.supports_autograd), mps)
    return facts
