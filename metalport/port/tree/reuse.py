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
from dataclasses import dataclass
from pathlib import Path

from metalport.checkout.layout import Checkout

_METAL_HELPER = re.compile(r"(?:::)?c10::metal::(\w+)")
_HOST_CALL = re.compile(r"\b(exec_\w+_kernel(?:_with_params)?)\b")
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
        if launcher:
            declared = _file_defines(checkout, _SHADER_LIB, launcher.group(1)) or \
                _file_defines(checkout, _OPUTILS, launcher.group(1))
            extra = " with natural_output_dtype=kBool" if "kBool" in host_call else ""
            out.append(f"reuses MetalShaderLibrary::{launcher.group(1)}{extra}"
                       f"{f' ({_SHADER_LIB})' if declared else ''}")
    if functor and functor_source and f"struct {functor} " in functor_source:
        out.append(f"adds {functor} to {kernel_file}: no kernel in the tree computes it")
    return tuple(out)


def _file_defines(checkout: Checkout, rel: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", legacy_file_text(checkout.root, rel)) is not None


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


# Note [reuse an existing kernel]: the tree may already compute an op under another kernel's name
# (`conj_physical` is the `copy_conj` kernel Copy.mm launches for conj-bit copies); upstream then
# adds only a host stub launching that kernel from the `.mm` file that launches it already, and
# registers the op's stub there. A kernel of another name is a candidate when its name is the op's
# leading words with at most one word before them (`copy_conj`, `conj` for `conj_physical`), its
# functor takes the op's operand count and it is registered for every (macro, types) the port
# would register; a candidate is reused only when conformance of the op through it (host stub
# applied on a scratch tree, torch CPU as reference, fresh random inputs) passes. A kernel of the
# op's own name registered for every planned input type is reused as it is. Every candidate turned down
# is a line in the plan with its reason.


@dataclass(frozen=True)
class ExistingKernel:
    """A kernel the tree registers that a port may launch instead of adding a functor."""

    name: str  # the kernel name host code passes ("copy_conj")
    kernel_file: str  # the .metal file registering it
    host_file: str | None  # the .mm file whose library holds it (None: none found)
    functor_line: int
    host_why: str = ""  # "it launches copy_conj already"


def _tokens(name: str) -> list[str]:
    return [t for t in name.split("_") if t]


def _name_fits(kernel: str, op: str) -> bool:
    """`kernel` names the op's leading words, with at most one word before them."""
    k, o = _tokens(kernel), _tokens(op)
    for n in range(1, len(o) + 1):
        if k[-n:] == o[:n] and len(k) - n <= 1 and kernel != op:
            return True
    return False


def _registration_set(registrations: tuple[str, ...]) -> set[tuple[str, tuple[str, ...]]]:
    """{(macro, types)} of `REGISTER_*(name, types...)` lines (the name left out)."""
    found = (re.match(r"\s*(REGISTER_\w+)\(\s*\w+\s*,([^)]*)\)", line) for line in registrations)
    return {(m.group(1), tuple(a.strip() for a in m.group(2).split(","))) for m in found if m}


def host_file_of(checkout: Checkout, sources, kernel: str, kernel_file: str) -> tuple[str | None, str]:
    """(the `.mm` file whose library holds `kernel`, why): one launching it by name, else one that
    loads its kernel file's library (`<Stem>_metallib.h`), else the `.mm` of the same stem."""
    stem = Path(kernel_file).stem
    named = [c.where.file for c in sources.kernel_calls if c.kernel == kernel]
    if named:
        return named[0], f"it launches {kernel} already"
    mms = sorted(checkout.mps_operations.glob("*.mm")) if checkout.mps_operations.is_dir() else []
    texts = {checkout.rel(p): p.read_text(encoding="utf-8", errors="replace") for p in mms}
    # the kernel's name in a file that launches Metal kernels (Copy.mm picks "copy_conj" into a
    # variable first); a graph file's cache key ("nan_to_num" in TensorCompare.mm) is no launch
    launches = re.compile(r"\bexec_\w+_kernel\w*\(|\bgetPipelineStateForFunc\(")
    for rel, text in texts.items():
        if f'"{kernel}"' in text and launches.search(text):
            return rel, f"it launches {kernel} already"
    for rel, text in texts.items():
        if f"{stem}_metallib.h" in text:
            return rel, f"it loads {Path(kernel_file).name}'s library"
    same = checkout.mps_operations / f"{stem}.mm"
    return (checkout.rel(same), f"the host file of {Path(kernel_file).name}") if same.is_file() else (None, "")


def existing_kernels(checkout: Checkout, sources, op: str, arity: int, registrations: tuple[str, ...], *,
                     own_types_suffice: bool = False) -> tuple[list[ExistingKernel], list[str]]:
    """(kernels of the tree that may compute `op`, the op's own first; a line per candidate turned
    down) for a port that would add `registrations` (Note [reuse an existing kernel]).
    `own_types_suffice`: the op's own kernel is reused with the dtypes it registers (a params-route
    kernel the tree has: its types are what the op's kernel runs, Note [params route])."""
    from metalport.port.write.metal import functor_arity

    wanted = _registration_set(registrations)
    names = [op] + sorted({s.name for s in sources.shader_ops if _name_fits(s.name, op)})
    found: list[ExistingKernel] = []
    refused: list[str] = []
    for name in names:
        regs = [s for s in sources.shader_ops if s.name == name]
        if not regs:
            continue
        rel = sorted({s.where.file for s in regs})[0]
        text = legacy_file_text(checkout.root, rel)
        took = functor_arity(text, f"{name}_functor")
        have = {(s.macro, s.args) for s in regs}
        if name == op:  # the op's own kernel: the tree's output types are the op's, whatever the port guessed
            have = {(m, t[:1]) for m, t in have}
            missing = [] if own_types_suffice and have else sorted({(m, t[:1]) for m, t in wanted} - have)
        else:
            missing = sorted(wanted - have)
        if took != arity:
            refused.append(f"does not reuse kernel {name} ({rel}): its functor takes {took or 'no'} operand(s), "
                           f"aten::{op} needs {arity}")
        elif missing:
            shown = ", ".join(f"{m}({name}, {', '.join(t)})" for m, t in missing[:3])
            refused.append(f"does not reuse kernel {name} ({rel}): it lacks {len(missing)} registration(s) the "
                           f"port needs, e.g. {shown}")
        else:
            line = text[:text.index(f"struct {name}_functor")].count("\n") + 1
            host, why = host_file_of(checkout, sources, name, rel)
            found.append(ExistingKernel(name, rel, host, line, why))
    return found, refused

