"""What a port makes obsolete in the tree: xfail entries the registration fixes, the legacy
`_native.h` include and MPSGraph registrations, and the OpInfo names the tests key them by.

Shared by the pointwise plan (`port.py`) and the launch-spec plan (`specport.py`).
"""

from __future__ import annotations

import re

from metalport.checkout.layout import Checkout
from metalport.checkout.sources import ImplKind
from metalport.port.functors import METAL_TYPES
from metalport.port.host import remove_legacy
from metalport.port.resolve import Resolution


def _kept_dtypes(dtypes: tuple[str, ...] | None, metal: tuple[str, ...]) -> tuple[str, ...] | None:
    """The dtypes of an xfail entry the port leaves failing (None: the entry means all dtypes)."""
    if dtypes is None:
        return ()  # "every dtype fails" ends with the port's registrations
    return tuple(d for d in dtypes if METAL_TYPES.get(d) not in metal)


def obsolete_xfails(res: Resolution, metal: tuple[str, ...]
                    ) -> tuple[tuple[tuple[str, str, int], ...], tuple[tuple[str, str, int, tuple[str, ...]], ...]]:
    """(entries the port makes obsolete, entries it only narrows: (list, key, line, dtypes kept))."""
    removed, narrowed = [], []
    for x in res.xfails:
        kept = _kept_dtypes(x.dtypes, metal)
        if not kept:
            removed.append((x.list_name, x.op, x.where.line))
        elif x.dtypes is not None and len(kept) < len(x.dtypes):
            narrowed.append((x.list_name, x.op, x.where.line, kept))
    return tuple(removed), tuple(narrowed)


def opinfo_names(op: str, res: Resolution) -> list[str]:
    """The OpInfo names the op's tests may go by: its xfail keys, `op`, `nn.functional.op`, and
    `special.x`/`linalg.x`/`fft.x` for a `special_x`/`linalg_x`/`fft_x` op."""
    names = [x.op for x in res.xfails] + [op, f"nn.functional.{op}"]
    for prefix in ("special_", "linalg_", "fft_"):
        if op.startswith(prefix):
            names.append(prefix[:-1] + "." + op[len(prefix):])
    return names


def legacy_include(checkout: Checkout, res: Resolution) -> str | None:
    """`#include <ATen/ops/<op>_native.h>` when no legacy file still needs it after the removal.

    A file needs it while it still names a kernel of the op's dispatch rows.
    """
    include = f"#include <ATen/ops/{res.op}_native.h>"
    kernels = {d.kernel for e in res.entries for d in e.dispatch}
    found = False
    for path in sorted({f.where.file for f in res.legacy}):
        text = (checkout.root / path).read_text(encoding="utf-8")
        if include not in text:
            continue
        found = True
        for fn in (f for f in res.legacy if f.where.file == path):
            text = remove_legacy(text, res.op, fn.name, path=path, drop_include=False)
        rest = text.replace(include, "")
        if any(re.search(rf"\b{re.escape(k)}\b", rest) for k in kernels):
            return None
    return include if found else None


def legacy_registrations(checkout: Checkout, res: Resolution) -> tuple[tuple[str, int, str], ...]:
    """(file, line, text) of each MPSGraph registration of the route's stubs: the port replaces it
    (a macro-made one, `REGISTER_MPS_UNARY_STUB(acosh, acosh);`, goes as its invocation line)."""
    out = []
    for reg in res.registrations:
        if reg.kind is not ImplKind.GRAPH:
            continue
        lines = (checkout.root / reg.where.file).read_text(encoding="utf-8").splitlines()
        out.append((reg.where.file, reg.where.line, lines[reg.where.line - 1]))
    return tuple(out)
