"""What the pipeline knows about the installed torch without importing it.

Importing torch takes 1.5–3 s and the OpInfo database another 4 s; only the stages that run
kernels (conformance, `metalport kernels`, the macOS tests) need them. Everything else asks here:
the torch version and include folder (package metadata), whether MPS can exist on this OS, and
the OpInfo facts a plan needs (CPU dtypes, autograd support), which are read from `op_db` once
per torch version and kept in the user cache (`<user cache>/opinfo/<version>.json`). `find_opinfos`
is the one lookup of an op's OpInfos (it imports `op_db` when called).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import platform
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


MODULES_FORMAT = 1


def module_calls(modules: Iterable[str] | None = None, *, cache_dir: Path | None = None) -> dict[str, frozenset[str]]:
    """The aten ops (overload packets, `log_sigmoid_forward`) each ModuleInfo module (`torch.nn.LogSigmoid`)
    calls on the first CPU samples of torch's own ModuleInfo; `modules` None: every ModuleInfo. Read
    from the cache of this torch version; only modules missing from it import torch."""
    path = (cache_dir or user_cache_dir("modules")) / f"{torch_version()}-{MODULES_FORMAT}.json"
    try:
        data = {k: list(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        data = {}
    wanted = None if modules is None else set(modules)
    if wanted is None or wanted - set(data):
        data.update(_probe_modules(wanted if wanted is None else wanted - set(data)))
        try:
            write_text_atomic(path, json.dumps(data, sort_keys=True))
        except OSError:
            pass  # a read-only cache only costs the next probe
    return {name: frozenset(ops) for name, ops in data.items() if wanted is None or name in wanted}


def _probe_modules(wanted: set[str] | None) -> dict[str, list[str]]:
    """Run each wanted ModuleInfo's forward on its first two CPU samples, recording the aten ops it calls."""
    import torch
    from torch.testing._internal.common_modules import module_db
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Seen(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: set[str] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN202
            self.ops.add(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    found: dict[str, list[str]] = {name: [] for name in (wanted or ())}
    for info in module_db:
        cls = info.module_cls
        name = f"torch.nn.{cls.__name__}" if cls.__module__.startswith("torch.nn") else None
        if name is None or (wanted is not None and name not in wanted):
            continue
        seen = _Seen()
        try:
            for sample in info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=False,
                                                  training=False)[:2]:
                module = cls(*sample.constructor_input.args, **sample.constructor_input.kwargs)
                with seen:
                    module(*sample.forward_input.args, **sample.forward_input.kwargs)
        except (RuntimeError, TypeError, ValueError, AttributeError):
            pass
        found[name] = sorted(set(found.get(name, [])) | seen.ops)
    return found


TOLERANCE_FORMAT = 1
_SEEDS = 64  # draws of the ModuleInfo's own samples a derived tolerance covers


def module_tolerance(module: str, test: str, dtype: str, *,
                     cache_dir: Path | None = None) -> tuple[float, float, str] | None:
    """Note [module tolerances] (port/write/decorators.py): (atol, rtol, where from) of the toleranceOverride
    on MPS a port writes for ModuleInfo `module`'s `test` at `dtype` (a torch dtype name), read from
    the installed torch: the ModuleInfo's own override for that test, device and dtype when it has
    one; else, for `test_forward`, the tolerance its own check needs of a kernel rounding once: atol
    the largest |module(x) in float64 rounded to `dtype` - the ModuleInfo's reference_fn(x)| over its
    own samples (seeds 0..63), rounded up to one significant digit, rtol assert_close's default for
    the dtype. None when neither exists (no reference to derive from). Cached per torch version."""
    path = (cache_dir or user_cache_dir("modules")) / f"{torch_version()}-tol-{TOLERANCE_FORMAT}.json"
    key = f"{module}|{test}|{dtype}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        data = {}
    if key not in data:
        data[key] = _probe_tolerance(module, test, dtype)
        try:
            write_text_atomic(path, json.dumps(data, sort_keys=True))
        except OSError:
            pass  # a read-only cache only costs the next probe
    found = data[key]
    return (float(found[0]), float(found[1]), str(found[2])) if found else None


def _probe_tolerance(module: str, test: str, dtype_name: str) -> list[float | str] | None:
    import math

    import torch
    from torch.testing._internal.common_device_type import toleranceOverride
    from torch.testing._internal.common_modules import module_db

    dtype = getattr(torch, dtype_name, None)
    info = next((m for m in module_db if f"torch.nn.{m.module_cls.__name__}" == module), None)
    if info is None or not isinstance(dtype, torch.dtype):
        return None
    for d in info.decorators:
        if getattr(d, "is_active", None) and d.is_active("TestModule", test, "mps", dtype, {}):
            for dec in d.decorators:
                if isinstance(dec, toleranceOverride) and dtype in dec.d:
                    return [float(dec.d[dtype].atol), float(dec.d[dtype].rtol), f"{module}'s own toleranceOverride"]
    if test != "test_forward":
        return None
    worst, samples = 0.0, 0
    for seed in range(_SEEDS):
        torch.manual_seed(seed)
        try:
            inputs = info.module_inputs_func(info, device="cpu", dtype=dtype, requires_grad=False, training=False)
        except (RuntimeError, TypeError, ValueError):
            return None
        for sample in inputs:
            if sample.reference_fn is None:
                continue
            args, kwargs = sample.forward_input.args, sample.forward_input.kwargs
            made = info.module_cls(*sample.constructor_input.args, **sample.constructor_input.kwargs)
            try:
                ref = sample.reference_fn(made, *args, **kwargs)
                wide = made.to(torch.float64)(*(a.double() if isinstance(a, torch.Tensor) else a for a in args),
                                              **kwargs)
            except (RuntimeError, TypeError, ValueError):
                return None
            if not (isinstance(ref, torch.Tensor) and isinstance(wide, torch.Tensor)) or ref.shape != wide.shape:
                return None
            diff = (wide.to(dtype).double() - ref.double()).abs()
            finite = torch.isfinite(diff)
            worst = max(worst, float(diff[finite].max()) if bool(finite.any()) else 0.0)
            samples += 1
    if not samples or worst == 0.0:
        return None
    scale = 10.0 ** math.floor(math.log10(worst))
    atol = math.ceil(worst / scale) * scale
    rtol = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1.3e-6}.get(dtype, 0.0)
    return [float(f"{atol:.1g}"), rtol,
            f"{module}'s reference_fn against {dtype_name} rounded once on its own samples ({samples}): worst "
            f"{worst:.3g}"]


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


def find_opinfo(base: str) -> Any | None:
    """The OpInfo (no variant) whose name or aten name is `base`, else its first variant, else None."""
    return next(iter(find_opinfos(base)), None)


def find_opinfos(base: str) -> list[Any]:
    """The OpInfo (no variant) whose name or aten name is `base`, else one of a namespace whose last
    part is `base` (`nn.functional.softplus` for softplus: its samples pass beta and threshold, so a
    port ignoring them cannot pass on "opinfo 0/0"); when only variants exist (polygamma's
    polygamma_n_0 .. _n_4, one per order), all of them."""
    from torch.testing._internal.common_methods_invocations import op_db

    for plain in (True, False):
        named = [o for o in op_db if (not o.variant_test_name) == plain
                 and (o.name == base or o.name.replace(".", "_") == base)]
        named = named or [o for o in op_db if (not o.variant_test_name) == plain and o.aten_name == base]
        named = named or [o for o in op_db if (not o.variant_test_name) == plain and o.name.split(".")[-1] == base]
        if named:
            return named if not plain else named[:1]
    return []
