"""What a port reuses from the tree and what it adds, what the tree lacks, and legacy macros
whose last user the port removes; each answer is lines for the plan and the PR body.

Note [reuse before writing]: PyTorch's maintainers extend the shared `c10/metal` helpers and
launchers instead of writing private copies (truthiness through `c10::metal::cast_to<bool>`,
castout kernels through `REGISTER_BINARY_CASTOUT_OP`, host launches through
`MetalShaderLibrary::exec_*_kernel`). The plan looks each one up in the tree (the checkout's
headers, else the installed torch's) and says which it uses; what it still writes itself gets a
reason.
"""

from __future__ import annotations

import re
from pathlib import Path

from metalport.checkout.layout import Checkout

_METAL_HELPER = re.compile(r"(?:::)?c10::metal::(\w+)")
_HOST_CALL = re.compile(r"\b(exec_\w+_kernel)\b")
_SHADER_LIB = "aten/src/ATen/native/mps/MetalShaderLibrary.h"
_OPUTILS = "aten/src/ATen/native/mps/OperationUtils.h"


def _headers(checkout: Checkout) -> dict[str, str]:
    """c10/metal header name -> text: the tree's headers, else the installed torch's."""
    folder = checkout.c10_metal
    if not folder.is_dir():
        from metalport.torch_facts import torch_include_dir

        folder = torch_include_dir() / "c10/metal"
    # utils.h first: a helper's home is the general header, not one that happens to overload it.
    paths = sorted(folder.glob("*.h"), key=lambda p: (p.name != "utils.h", p.name))
    return {p.name: p.read_text(encoding="utf-8", errors="replace") for p in paths}


def _defined_in(name: str, headers: dict[str, str]) -> str | None:
    pattern = re.compile(rf"(?:\b{re.escape(name)}\s*\(|#define\s+{re.escape(name)}\b|\bstruct\s+{re.escape(name)}\b)")
    return next((f"c10/metal/{h}" for h, text in headers.items() if pattern.search(text)), None)


def reuse_lines(checkout: Checkout, *, functor_source: str | None, registrations: tuple[str, ...],
                host_call: str | None, kernel_file: str | None, functor: str | None) -> tuple[str, ...]:
    """`reuses ...` / `adds ...` lines for a pointwise port (Note [reuse before writing])."""
    headers = _headers(checkout)
    out: list[str] = []
    for name in dict.fromkeys(_METAL_HELPER.findall(functor_source or "")):
        home = _defined_in(name, headers)
        if home:
            what = "cast_to<bool> for truthiness (scalars x != 0, complex either part)" if name == "cast_to" else name
            out.append(f"reuses c10::metal::{what} ({home})")
    for macro in dict.fromkeys(r.split("(", 1)[0] for r in registrations):
        home = _defined_in(macro, headers)
        kernel_home = kernel_file if kernel_file and _file_defines(checkout, kernel_file, macro) else None
        where = home or kernel_home
        if macro == "REGISTER_BINARY_CASTOUT_OP":
            out.append(f"reuses {macro} ({where or 'not in this tree'}): a bool result written through `out=` of "
                       f"another dtype runs its `_strided_castout_` kernel")
        elif where:
            out.append(f"reuses {macro} ({where})")
    if host_call:
        launcher = _HOST_CALL.search(host_call)
        if host_call.startswith("exec_ternary_kernel_with_alpha"):
            out.append("adds a file-local exec_ternary_kernel_with_alpha launcher: the tree's "
                       "MetalShaderLibrary::exec_ternary_kernel takes no scalar argument (Note [ternary alpha "
                       "kernels]); upstream later extended the shared launcher instead")
        elif launcher:
            declared = _file_defines(checkout, _SHADER_LIB, launcher.group(1)) or \
                _file_defines(checkout, _OPUTILS, launcher.group(1))
            extra = " with natural_output_dtype=kBool" if "kBool" in host_call else ""
            out.append(f"reuses MetalShaderLibrary::{launcher.group(1)}{extra}"
                       f"{f' ({_SHADER_LIB})' if declared else ''}")
    if functor and functor_source and f"struct {functor} " in functor_source:
        out.append(f"adds {functor} to {kernel_file}: no kernel in the tree computes it")
    return tuple(out)


def _file_defines(checkout: Checkout, rel: str, name: str) -> bool:
    path = checkout.root / rel
    return path.is_file() and re.search(rf"\b{re.escape(name)}\b", path.read_text(encoding="utf-8",
                                                                                 errors="replace")) is not None


def missing_legacy(checkout: Checkout, mps_kernels: tuple[str, ...], found: set[str]) -> tuple[str, ...]:
    """One line per MPS-only kernel a registry row names that no scanned `.mm` file defines (the
    tree lacks the file, or defines it in a way the scanner does not read): left in a real tree,
    its `TORCH_IMPL_FUNC` would not compile once the row is gone."""
    scanned = checkout.mps_operations.is_dir() and any(checkout.mps_operations.glob("*.mm"))
    where = "any scanned .mm file" if scanned else "the tree (it has no mps/operations/*.mm)"
    return tuple(f"legacy `{k}` not found in {where}: remove it by hand" for k in mps_kernels if k not in found)


_DEFINE = re.compile(r"^#define ([A-Z_][A-Z0-9_]*)\((?:[^\n]*\\\n)*[^\n]*\n", re.MULTILINE)


def macro_invocations(text: str, macro: str) -> list[re.Match[str]]:
    """Each line invoking `macro(...)` outside its own `#define`."""
    return list(re.finditer(rf"^[ \t]*{re.escape(macro)}\([^\n]*\n", text, re.MULTILINE))


def macro_of(text: str, line: int) -> str | None:
    """The macro invoked on 1-based `line` of `text` (`CREATE_..._FUNC(x_out_mps, ...)`), if any."""
    lines = text.splitlines()
    m = re.match(r"^\s*([A-Z_][A-Z0-9_]*)\(", lines[line - 1]) if 0 < line <= len(lines) else None
    return m.group(1) if m and m.group(1) not in ("TORCH_IMPL_FUNC", "REGISTER_DISPATCH") else None


def orphaned_macros(before: str, after: str) -> tuple[str, ...]:
    """Macros `#define`d in the file that `before` invokes and `after` no longer does."""
    names = [m.group(1) for m in _DEFINE.finditer(before)]
    return tuple(n for n in names if macro_invocations(before, n) and not macro_invocations(after, n))


def remove_macro(text: str, macro: str) -> str:
    """`text` without the `#define macro(...)` block (and the blank line after it)."""
    for m in _DEFINE.finditer(text):
        if m.group(1) == macro:
            end = m.end() + (1 if text[m.end():m.end() + 1] == "\n" else 0)
            return text[:m.start()] + text[end:]
    return text


def legacy_file_text(root: Path, rel: str) -> str:
    path = root / rel
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
