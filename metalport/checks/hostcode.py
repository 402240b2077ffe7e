"""The op's host code in the checkout's `.mm` files: which kernel name it passes to which helper.

`REGISTER_DISPATCH(<op>_stub, &fn)` (or `REGISTER_MPS_DISPATCH`) leads to `fn`'s body; the first
`exec_unary_kernel` / `exec_binary_kernel` / `exec_ternary_kernel` call there gives the kernel name.
A registered function that calls none of them follows no modelled convention.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

OPERATIONS_DIR = Path("aten/src/ATen/native/mps/operations")
_EXEC = re.compile(r"\b(exec_(?:unary|binary|ternary)_kernel)\s*\(\s*\w+\s*,\s*\"(\w+)\"")


@dataclass(frozen=True)
class HostCode:
    """What the checkout's host code says about an op: the kernel name, or why it is unmodelled."""

    kernel: str | None
    where: str | None
    unmodelled: str | None = None


def _body(text: str, name: str) -> tuple[str, int] | None:
    """The brace-matched body of function `name` and the offset it starts at."""
    for m in re.finditer(rf"\b{re.escape(name)}\s*\([^;{{}}]*\)\s*(?:const\s*)?\{{", text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[m.start():i + 1], m.start()
            i += 1
    return None


def find_host_code(checkout_root: Path, base: str) -> HostCode:
    """The kernel name `base`'s host code passes (default `base` when the checkout has no host code)."""
    ops_dir = checkout_root / OPERATIONS_DIR
    files = sorted(ops_dir.glob("*.mm")) if ops_dir.is_dir() else []
    texts = [(p, p.read_text(encoding="utf-8", errors="replace")) for p in files]
    reg = re.compile(rf"\bREGISTER_(?:MPS_)?DISPATCH\(\s*{re.escape(base)}_stub\s*,\s*&?\s*([\w:]+)\s*\)")
    for path, text in texts:
        m = reg.search(text)
        if m is None:
            continue
        fn = m.group(1).split("::")[-1]
        rel = path.relative_to(checkout_root)
        found = _body(text, fn)
        if found is None:
            return HostCode(None, f"{rel}:{text.count(chr(10), 0, m.start()) + 1}",
                            f"{fn}, registered for {base}_stub, is not defined in {rel}")
        body, at = found
        call = _EXEC.search(body)
        where = f"{rel}:{text.count(chr(10), 0, at) + 1}"
        if call is None:
            return HostCode(None, where, f"{fn} ({where}) calls no exec_unary/binary/ternary_kernel")
        return HostCode(call.group(2), where)
    for path, text in texts:
        for call in _EXEC.finditer(text):
            if call.group(2) == base:
                return HostCode(base, f"{path.relative_to(checkout_root)}:{text.count(chr(10), 0, call.start()) + 1}")
    return HostCode(base, None)
