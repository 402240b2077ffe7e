"""The MPS halves of PyTorch's generated headers, made from a checkout's own registry.

A Linux torch wheel ships `ATen/ops/<op>_native.h` generated without the MPS backend, so it
declares no `<kernel>_mps` function and no `structured_<op>_out_mps` class, and it ships no
`<op>_mps_dispatch.h` or `ATen/MPSFunctions.h`.  PyTorch's macOS build generates them with MPS
among the backends; here torchgen does the same from the checkout's `native_functions.yaml`
(edited or not), for the root names a file includes only.  Headers land in a directory keyed by
the registry's bytes, so an edit to a row is a new directory and an unchanged registry reuses
what earlier checks generated.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

from metalport.atomic import write_text_atomic
from metalport.errors import RegistryError

_NATIVE = re.compile(r"#\s*include\s*[<\"]ATen/ops/(\w+?)_native\.h[>\"]")
_DISPATCH = re.compile(r"#\s*include\s*[<\"]ATen/ops/(\w+?)_mps_dispatch\.h[>\"]")
_MPS_FUNCTIONS = re.compile(r"#\s*include\s*[<\"]ATen/MPSFunctions(?:_inl)?\.h[>\"]")
_LOCAL = re.compile(r"#\s*include\s*[<\"](ATen/native/mps/[\w/]+\.h)[>\"]")
FORMAT = "1"


def registry_key(yaml_path: Path, tags_path: Path) -> str:
    """A key naming the registry's content (and torchgen's version)."""
    import torchgen

    h = hashlib.sha256(f"metalport-mps-decls {FORMAT} {torchgen.__file__}\0".encode())
    for path in (yaml_path, tags_path):
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:24]


@functools.lru_cache(maxsize=4)
def _parsed(yaml_path: str, tags_path: str, key: str):  # noqa: ANN202 - torchgen types
    """torchgen's view of the registry: native functions, groups by root name, backend indices."""
    from torchgen.gen import get_grouped_native_functions, parse_native_yaml

    try:
        parsed = parse_native_yaml(yaml_path, tags_path)
    except (AssertionError, Exception) as err:  # torchgen raises bare AssertionErrors on bad rows
        raise RegistryError(f"torchgen cannot read the registry: {str(err).splitlines()[0][:300]}",
                            location=yaml_path, hint="fix the row it names; nothing was generated") from None
    by_root: dict[str, list] = {}
    for f in parsed.native_functions:
        by_root.setdefault(f.root_name, [])
    grouped: dict[str, list] = {}
    for g in get_grouped_native_functions(parsed.native_functions):
        grouped.setdefault(g.root_name, []).append(g)
    return parsed, grouped


def wanted_names(text: str, search_dirs: Iterable[Path]) -> tuple[set[str], set[str], bool]:
    """(root names whose `_native.h`, whose `_mps_dispatch.h` the text includes, whether it
    includes `ATen/MPSFunctions.h`), following `ATen/native/mps/...` headers found in `search_dirs`."""
    native: set[str] = set()
    dispatch: set[str] = set()
    all_dispatch = False
    seen: set[str] = set()
    todo = [text]
    dirs = list(search_dirs)
    while todo:
        chunk = todo.pop()
        native.update(_NATIVE.findall(chunk))
        dispatch.update(_DISPATCH.findall(chunk))
        all_dispatch = all_dispatch or bool(_MPS_FUNCTIONS.search(chunk))
        for rel in _LOCAL.findall(chunk):
            if rel in seen:
                continue
            seen.add(rel)
            for d in dirs:
                if (d / rel).is_file():
                    todo.append((d / rel).read_text(encoding="utf-8", errors="replace"))
                    break
    return native, dispatch, all_dispatch


def generate(yaml_path: Path, tags_path: Path, out_root: Path, *, native: set[str], dispatch: set[str],
             all_dispatch: bool) -> Path:
    """Make sure `out_root/<registry key>/ATen/...` holds the requested headers; returns the
    include directory.  Names the registry does not hold are left to the wheel's headers."""
    key = registry_key(yaml_path, tags_path)
    include = out_root / key
    missing_native = {n for n in native if not (include / f"ATen/ops/{n}_native.h").is_file()}
    missing_dispatch = {n for n in dispatch if not (include / f"ATen/ops/{n}_mps_dispatch.h").is_file()}
    need_all = all_dispatch and not (include / "ATen/MPSFunctions.h").is_file()
    if not (missing_native or missing_dispatch or need_all):
        return include
    parsed, grouped = _parsed(str(yaml_path), str(tags_path), key)
    from torchgen.model import DispatchKey

    mps_index = parsed.backend_indices[DispatchKey.MPS]
    for name in sorted(missing_native):
        if name in grouped:
            write_text_atomic(include / f"ATen/ops/{name}_native.h", _native_header(name, grouped[name], parsed.backend_indices))
    names = set(missing_dispatch)
    if need_all:
        names |= {n for n, groups in grouped.items() if any(mps_index.has_kernel(g) if hasattr(g, "func")
                                                             else any(mps_index.has_kernel(f) for f in g.functions())
                                                             for g in groups)}
    made = []
    for name in sorted(names):
        if name in grouped:
            text = _dispatch_header(name, grouped[name], mps_index)
            if text is not None:
                write_text_atomic(include / f"ATen/ops/{name}_mps_dispatch.h", text)
                made.append(name)
    if need_all:
        every = sorted(p.name[:-len("_mps_dispatch.h")] for p in (include / "ATen/ops").glob("*_mps_dispatch.h"))
        body = "\n".join(f"#include <ATen/ops/{n}_mps_dispatch.h>" for n in every)
        write_text_atomic(include / "ATen/MPSFunctions_inl.h", f"#pragma once\n// generated by metalport from the registry\n{body}\n")
        write_text_atomic(include / "ATen/MPSFunctions.h", "#pragma once\n#include <ATen/core/TensorBody.h>\n"
                                                "#include <ATen/MPSFunctions_inl.h>\n")
    return include


def _native_header(name: str, groups: list, backend_indices: dict) -> str:
    """`ATen/ops/<name>_native.h` with every backend's declarations (MPS included)."""
    from torchgen import dest
    from torchgen.gen import get_native_function_declarations
    from torchgen.model import NativeFunctionsGroup

    structured = any(isinstance(g, NativeFunctionsGroup) and g.structured for g in groups)
    declarations = get_native_function_declarations(grouped_native_functions=groups, backend_indices=backend_indices,
                                                    native_function_decl_gen=dest.compute_native_function_declaration)
    meta = f"#include <ATen/ops/{name}_meta.h>\n" if structured else ""
    return ("#pragma once\n// generated by metalport with torchgen from the checkout's native_functions.yaml (MPS included)\n"
            "#include <c10/core/Scalar.h>\n#include <c10/core/Storage.h>\n#include <c10/core/TensorOptions.h>\n"
            "#include <c10/util/Deprecated.h>\n#include <optional>\n#include <c10/core/QScheme.h>\n"
            "#include <ATen/core/Reduction.h>\n#include <ATen/core/Tensor.h>\n#include <tuple>\n#include <vector>\n"
            f"{meta}\n" + "\n".join(declarations) + "\n")


def _dispatch_header(name: str, groups: list, mps_index) -> str | None:  # noqa: ANN001
    """`ATen/ops/<name>_mps_dispatch.h` (the `at::mps::` functions), or None when MPS has none."""
    from torchgen import dest
    from torchgen.model import DispatchKey
    from torchgen.selective_build.selector import SelectiveBuilder
    from torchgen.utils import Target, concatMap

    assert mps_index.dispatch_key == DispatchKey.MPS
    declarations = list(concatMap(dest.RegisterDispatchKey(mps_index, Target.NAMESPACED_DECLARATION,
                                                           SelectiveBuilder.get_nop_selector(), rocm=False, symint=True,
                                                           class_method_name=None,
                                                           skip_dispatcher_op_registration=False), groups))
    if not declarations:
        return None
    return ("#pragma once\n// generated by metalport with torchgen from the checkout's native_functions.yaml\n"
            "#include <ATen/core/TensorBody.h>\n\nnamespace at {\n\nnamespace mps {\n\n"
            + "\n".join(declarations) + "\n\n} // namespace mps\n} // namespace at\n")
