"""Scanners of a tree's sources, shared by every command: one read of each file.

`.mm` host stubs (REGISTER_DISPATCH, TORCH_IMPL_FUNC / plain `_mps` functions, MPSGraph vs native
Metal markers, exec_*_kernel names), `.metal` REGISTER_*_OP lines, DECLARE_DISPATCH stubs of the
ATen headers, and the xfail/skip lists of common_mps.py read as source with `ast`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from metalport.checkout.layout import Checkout
from metalport.errors import RepoError


class ImplKind(Enum):
    """How an MPS function is implemented."""

    METAL = "metal"
    GRAPH = "graph"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Where:
    """A `file:line` (file relative to the checkout root)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Registration:
    """`REGISTER_DISPATCH(stub, &kernel)` in an `.mm` file."""

    stub: str
    kernel: str
    where: Where


@dataclass(frozen=True)
class MpsFunction:
    """A `TORCH_IMPL_FUNC(name)` or plain function definition in an `.mm` file."""

    name: str
    kind: ImplKind
    impl_func: bool
    where: Where


@dataclass(frozen=True)
class KernelCall:
    """`exec_unary_kernel(..., "name")` / `exec_binary_kernel(..., "name")` in an `.mm` file."""

    helper: str
    kernel: str
    where: Where


@dataclass(frozen=True)
class ShaderOp:
    """`REGISTER_*_OP(name, ...)` in a `.metal` file."""

    macro: str
    name: str
    args: tuple[str, ...]
    where: Where


@dataclass(frozen=True)
class StubDecl:
    """`DECLARE_DISPATCH(fn_type, name)` in an ATen header."""

    name: str
    fn_type: str
    where: Where


@dataclass(frozen=True)
class XfailEntry:
    """One key of a common_mps.py xfail/skip list; `dtypes` None means every dtype."""

    list_name: str
    op: str
    dtypes: tuple[str, ...] | None
    where: Where


@dataclass(frozen=True)
class Sources:
    """Everything the scanners found in one checkout."""

    registrations: tuple[Registration, ...]
    functions: tuple[MpsFunction, ...]
    kernel_calls: tuple[KernelCall, ...]
    shader_ops: tuple[ShaderOp, ...]
    stubs: tuple[StubDecl, ...]
    xfails: tuple[XfailEntry, ...]

    def function(self, name: str) -> MpsFunction | None:
        """The `.mm` definition of `name`, if present."""
        return next((f for f in self.functions if f.name == name), None)

    def stub(self, name: str) -> StubDecl | None:
        """The DECLARE_DISPATCH of `name`, if present."""
        return next((s for s in self.stubs if s.name == name), None)

    def registration(self, stub: str) -> Registration | None:
        """The MPS REGISTER_DISPATCH of `stub`, if present."""
        return next((r for r in self.registrations if r.stub == stub), None)

    def xfails_for(self, op: str) -> tuple[XfailEntry, ...]:
        """Every list entry whose key is exactly `op` (an OpInfo name plus variant, e.g. `heaviside`)."""
        return tuple(x for x in self.xfails if x.op == op)


_REGISTER = re.compile(r"^\s*REGISTER_DISPATCH\(\s*(\w+)\s*,\s*&?\s*([\w:]+)\s*\)", re.M)
_IMPL = re.compile(r"^\s*TORCH_IMPL_FUNC\(\s*(\w+)\s*\)", re.M)
_DEF = re.compile(r"^(?:[\w:<>,&*]+[ \t]+)+[&*]?(\w+)\s*\([^;{}]*\)\s*(?:const\s*)?\{", re.M)
_EXEC = re.compile(r"\b(exec_(?:unary|binary|ternary)_kernel\w*)\s*\([^;]*?\"(\w+)\"", re.S)
_SHADER = re.compile(r"^\s*(REGISTER_\w*OP\w*)\(\s*([^)]*)\)", re.M)
_DECLARE = re.compile(r"^\s*DECLARE_DISPATCH\(\s*(.+?)\s*,\s*(\w+)\s*\)", re.M)
_METAL = re.compile(r"\b(exec_\w+_kernel\w*|mtl_dispatch\w*|mtl_setArgs|getPipelineStateForFunc|MetalShaderLibrary"
                    r"|DynamicMetalShaderLibrary|lib\.exec\w*)\b")
_GRAPH = re.compile(r"\b(MPSGraph\w*|mpsGraph|CachedGraph|runMPSGraph|LookUpOrCreateCachedGraph)\b")
_CALL = re.compile(r"\b(\w+)\s*\(")
_MACRO = re.compile(r"^#define[ \t]+(\w+)\((?:[^\n]*\\\n)*[^\n]*", re.M)
_EXPAND = re.compile(r"^(\w+)\(\s*(\w*_mps\w*)\s*[,)]", re.M)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _in_macro(text: str, offset: int) -> bool:
    end = text.find("\n", offset)
    return text[offset:end if end >= 0 else len(text)].rstrip().endswith("\\")


def _kind(body: str) -> ImplKind:
    if _METAL.search(body):
        return ImplKind.METAL
    if _GRAPH.search(body):
        return ImplKind.GRAPH
    return ImplKind.UNKNOWN


def _scan_mm(text: str, rel: str) -> tuple[list[Registration], list[MpsFunction], list[KernelCall]]:
    regs = [Registration(m.group(1), m.group(2), Where(rel, _line_of(text, m.start(1))))
            for m in _REGISTER.finditer(text)]
    calls = [KernelCall(m.group(1), m.group(2), Where(rel, _line_of(text, m.start(1))))
             for m in _EXEC.finditer(text)]
    starts = sorted([(m.start(1), m.group(1), True) for m in _IMPL.finditer(text) if not _in_macro(text, m.start())]
                    + [(m.start(1), m.group(1), False) for m in _DEF.finditer(text)])
    found: list[tuple[int, str, bool, ImplKind]] = []
    for i, (start, name, impl) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        found.append((start, name, impl, _kind(text[start:end])))
    helpers = {name: kind for _, name, _, kind in found if kind is not ImplKind.UNKNOWN}
    functions = []
    for i, (start, name, impl, kind) in enumerate(found):
        if not impl and "_mps" not in name:
            continue
        if kind is ImplKind.UNKNOWN:
            end = found[i + 1][0] if i + 1 < len(found) else len(text)
            called = {helpers[c] for c in _CALL.findall(text[start:end]) if c != name and c in helpers}
            kind = next((k for k in (ImplKind.METAL, ImplKind.GRAPH) if k in called), ImplKind.UNKNOWN)
        functions.append(MpsFunction(name, kind, impl, Where(rel, _line_of(text, start))))
    macros = {m.group(1): m.group(0) for m in _MACRO.finditer(text)}
    for m in _EXPAND.finditer(text):
        if m.group(1) in macros:
            body = macros[m.group(1)]
            kind = _kind(body)
            if kind is ImplKind.UNKNOWN:
                called = {helpers[c] for c in _CALL.findall(body) if c in helpers}
                kind = next((k for k in (ImplKind.METAL, ImplKind.GRAPH) if k in called), ImplKind.UNKNOWN)
            functions.append(MpsFunction(m.group(2), kind, "TORCH_IMPL_FUNC" in body,
                                         Where(rel, _line_of(text, m.start(2)))))
    return regs, functions, calls


def _dtype(node: ast.expr) -> str:
    return ast.unparse(node).removeprefix("torch.")


def named_assignments(tree: ast.AST) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) of every `NAME = value` and `NAME: T = value` in `tree`, in `ast.walk` order."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            yield target.id, value


def _scan_common_mps(text: str, rel: str) -> list[XfailEntry]:
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        raise RepoError(f"cannot parse: {err.msg}", location=f"{rel}:{err.lineno}",
                        hint="fix the Python syntax there") from None
    out: list[XfailEntry] = []
    for name, value in named_assignments(tree):
        if not isinstance(value, (ast.Dict, ast.Set)) or ("XFAIL" not in name and "SKIP" not in name):
            continue
        if isinstance(value, ast.Set):
            out += [XfailEntry(name, e.value, None, Where(rel, e.lineno)) for e in value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            continue
        for key, val in zip(value.keys, value.values):
            if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
                continue
            if isinstance(val, (ast.List, ast.Tuple, ast.Set)):
                dtypes: tuple[str, ...] | None = tuple(_dtype(e) for e in val.elts)
            elif isinstance(val, ast.Constant) and val.value is None:
                dtypes = None
            else:
                dtypes = (ast.unparse(val),)
            out.append(XfailEntry(name, key.value, dtypes, Where(rel, key.lineno)))
    out.sort(key=lambda x: x.where.line)
    return out


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def scan_sources(checkout: Checkout) -> Sources:
    """Scan every source the backlog and the porting steps need, reading each file once."""
    regs: list[Registration] = []
    funcs: list[MpsFunction] = []
    calls: list[KernelCall] = []
    for path in sorted(checkout.mps_operations.glob("*.mm")):
        r, f, c = _scan_mm(_read(path), checkout.rel(path))
        regs += r
        funcs += f
        calls += c
    shaders = []
    for path in sorted(checkout.mps_kernels.glob("*.metal")):
        text, rel = _read(path), checkout.rel(path)
        for m in _SHADER.finditer(text):
            args = tuple(a.strip() for a in m.group(2).split(",") if a.strip())
            if args:
                shaders.append(ShaderOp(m.group(1), args[0], args[1:], Where(rel, _line_of(text, m.start(1)))))
    stubs = []
    for path in sorted(checkout.native_dir.glob("*.h")):
        text = _read(path)
        if "DECLARE_DISPATCH(" not in text:
            continue
        rel = checkout.rel(path)
        stubs += [StubDecl(m.group(2), m.group(1), Where(rel, _line_of(text, m.start(1))))
                  for m in _DECLARE.finditer(text)]
    xfails = _scan_common_mps(_read(checkout.common_mps), checkout.rel(checkout.common_mps)) \
        if checkout.common_mps.is_file() else []
    return Sources(tuple(regs), tuple(funcs), tuple(calls), tuple(shaders), tuple(stubs), tuple(xfails))
