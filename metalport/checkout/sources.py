"""Scanners of a tree's sources, shared by every command: one read of each file.

`.mm` host stubs read as the compiler sees them (`checkout.cpp`: macros of the file and the tree's
headers expanded, brace-matched bodies): REGISTER_DISPATCH / REGISTER_MPS_DISPATCH (macro-made
ones too), TORCH_IMPL_FUNC and plain functions, each Metal or MPSGraph by its own markers or the
helpers it calls across files, and their exec_*_kernel names. Also `.metal` REGISTER_*_OP lines,
DECLARE_DISPATCH stubs of the ATen headers, stub routes of the CPU `.cpp` (`checkout.routing`), and
the xfail/skip lists of common_mps.py read as source with `ast`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from enum import Enum
from pathlib import Path
from typing import TypeVar

from metalport.checkout.cpp import Function, Unit, closing, forget_units, match_bracket, read_unit
from metalport.checkout.layout import Checkout
from metalport.content_cache import ContentCache
from metalport.checkout.routing import StubRoute, read_routes, route_op
from metalport.errors import MetalportError, RepoError
from metalport.registry.model import Op, Registry
from metalport import python_ast

T = TypeVar("T")


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
    """`REGISTER_DISPATCH(stub, &kernel)` (or `REGISTER_MPS_DISPATCH`) in an `.mm` file, written out
    or made by a macro (`macro` names it: `REGISTER_MPS_UNARY_STUB`; `where` is its invocation).
    `kind` is how the registered kernel runs (native Metal or MPSGraph)."""

    stub: str
    kernel: str
    where: Where
    macro: str | None = None
    kind: ImplKind = ImplKind.UNKNOWN


@dataclass(frozen=True)
class KernelCall:
    """`exec_unary_kernel(..., "name")` / `exec_binary_kernel(..., "name")` in an `.mm` file,
    inside `function`."""

    helper: str
    kernel: str
    where: Where
    function: str | None = None


@dataclass(frozen=True)
class MpsFunction:
    """A `TORCH_IMPL_FUNC(name)` or plain function definition in an `.mm` file (macro-made ones
    sit on their invocation's line). `kind` follows the helpers it calls, across files."""

    name: str
    kind: ImplKind
    impl_func: bool
    where: Where
    calls: tuple[KernelCall, ...] = ()


@dataclass(frozen=True)
class ShaderOp:
    """`REGISTER_*_OP(name, ...)` in a `.metal` file."""

    macro: str
    name: str
    args: tuple[str, ...]
    where: Where


@dataclass(frozen=True)
class StubDecl:
    """`DECLARE_DISPATCH(fn_type, name)` in an ATen header; `params` are the parameters of the
    function-pointer type (`TensorIterator&, double correction, bool take_sqrt`), None when no
    scanned header defines `fn_type`."""

    name: str
    fn_type: str
    where: Where
    params: str | None = None


@dataclass(frozen=True)
class XfailEntry:
    """One key of a common_mps.py xfail/skip list; `dtypes` None means every dtype. `where` is its
    first line; `last_line` the last line of its whole entry, where a reader asked for the span
    (`port.write.xfail.find_xfails`, which removes whole lines), else None."""

    list_name: str
    op: str
    dtypes: tuple[str, ...] | None
    where: Where
    last_line: int | None = None

    @property
    def lines(self) -> range:
        """The 1-based lines of the entry (its first line alone without `last_line`)."""
        return range(self.where.line, (self.last_line or self.where.line) + 1)


@dataclass(frozen=True)
class Sources:
    """Everything the scanners found in one checkout.

    `routes` are the stub routes read from the tree's `aten/src/ATen/native/*.cpp` (empty when it
    has none; `route_files` lists the files read).
    """

    registrations: tuple[Registration, ...]
    functions: tuple[MpsFunction, ...]
    kernel_calls: tuple[KernelCall, ...]
    shader_ops: tuple[ShaderOp, ...]
    stubs: tuple[StubDecl, ...]
    xfails: tuple[XfailEntry, ...]
    routes: tuple[StubRoute, ...] = ()
    route_files: tuple[str, ...] = ()

    def function(self, name: str) -> MpsFunction | None:
        """The `.mm` definition of `name`, if present."""
        return next((f for f in self.functions if f.name == name), None)

    def stub(self, name: str) -> StubDecl | None:
        """The DECLARE_DISPATCH of `name`, if present."""
        return next((s for s in self.stubs if s.name == name), None)

    def registration(self, stub: str) -> Registration | None:
        """The (first) MPS registration of `stub`, if present."""
        return next((r for r in self.registrations if r.stub == stub), None)

    def registrations_of(self, stub: str) -> tuple[Registration, ...]:
        """Every MPS registration of `stub`, macro-made ones included (more than one is a link error)."""
        return tuple(r for r in self.registrations if r.stub == stub)

    def route(self, kernel: str) -> StubRoute | None:
        """The stubs the CPU kernel `kernel` (`sgn_out`) calls, as read from the tree's `.cpp`."""
        return next((r for r in self.routes if r.kernel == kernel), None)

    @cached_property
    def _route_index(self) -> tuple[dict[str, StubRoute], dict[str, tuple[str, int]]]:
        return ({r.kernel: r for r in reversed(self.routes)},
                {s.name: (s.where.file, s.where.line) for s in reversed(self.stubs)})

    def route_op(self, op: Op, registry: Registry) -> StubRoute | None:
        """The stubs `op`'s CPU kernel calls: read from the tree's `.cpp` when it has the kernel's
        body, else assumed from the DECLARE_DISPATCH names (`StubRoute.assumed`)."""
        routes, declared = self._route_index
        return route_op(op, registry, routes, declared)

    def callers(self, stub: str) -> tuple[StubRoute, ...]:
        """The routes (kernels read from the `.cpp`) that call `stub`."""
        return tuple(r for r in self.routes if stub in r.stubs)

    def xfails_for(self, op: str) -> tuple[XfailEntry, ...]:
        """Every list entry whose key is exactly `op` (an OpInfo name plus variant, e.g. `heaviside`)."""
        return tuple(x for x in self.xfails if x.op == op)


_REGISTER = re.compile(r"\b(REGISTER_(?:MPS_)?DISPATCH)\s*\(\s*(\w+)\s*,\s*&?\s*([\w:]+)\s*\)")
_EXEC = re.compile(r"\b(exec_(?:unary|binary|ternary)_kernel\w*)\s*\(")
_STRING = re.compile(r'"(\w+)"')
_SHADER = re.compile(r"^\s*(REGISTER_\w*OP\w*)\(\s*([^)]*)\)", re.M)
_DECLARE = re.compile(r"^\s*DECLARE_DISPATCH\(", re.M)
_FN_TYPE = re.compile(r"\busing\s+(\w+)\s*=\s*void\s*\(\s*\*\s*\)\s*\(([^;]*)\)\s*;")
_INLINE_FN = re.compile(r"^void\s*\(\s*\*\s*\)\s*\((.*)\)$", re.S)
_METAL = re.compile(r"\b(exec_\w+_kernel\w*|mtl_dispatch\w*|mtl_setArgs|getPipelineStateForFunc|MetalShaderLibrary"
                    r"|DynamicMetalShaderLibrary)\b")
_GRAPH = re.compile(r"\b(MPSGraph\w*|mpsGraph|CachedGraph|runMPSGraph|LookUpOrCreateCachedGraph)\b")
_CALL = re.compile(r"(?<![.>\w])(\w+)\s*\(")
_INVOKED = re.compile(r"^\s*(\w+)\s*\(")


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _own_kind(body: str) -> ImplKind:
    if _METAL.search(body):
        return ImplKind.METAL
    if _GRAPH.search(body):
        return ImplKind.GRAPH
    return ImplKind.UNKNOWN


@dataclass(frozen=True)
class _Def:
    """A definition found in an `.mm` unit, before its kind is resolved across files."""

    unit: Unit
    fn: Function
    own: ImplKind
    called: tuple[str, ...]


# Note [grad over halves] (port/write/halves.py): a host launching `<kernel>_halves_<T>` by its pipeline state.
_HALVES = re.compile(r'\bgetPipelineStateForFunc\s*\(\s*fmt::format\s*\(\s*"(\w+)_halves_\{\}"')


def _exec_calls(unit: Unit, fn: Function) -> tuple[KernelCall, ...]:
    calls = []
    for m in _HALVES.finditer(unit.text, fn.body_start, fn.body_end):
        file, line = unit.origin(m.start())
        calls.append(KernelCall("halves", m.group(1), Where(file, line), fn.name))
    for m in _EXEC.finditer(unit.code, fn.body_start, fn.body_end):
        opened = m.end() - 1
        name = _STRING.search(unit.text, opened, min(closing(unit.code, opened), fn.body_end))
        if name is not None:
            file, line = unit.origin(m.start())
            calls.append(KernelCall(m.group(1), name.group(1), Where(file, line), fn.name))
    return tuple(calls)


def _resolve_kinds(defs: list[_Def]) -> dict[tuple[str, str], ImplKind]:
    """(file, name) -> kind: its own markers, else the helpers it calls (same file first), to a fixpoint."""
    kinds = {(d.fn.file, d.fn.name): d.own for d in defs}
    by_name: dict[str, list[_Def]] = {}
    for d in defs:
        by_name.setdefault(d.fn.name, []).append(d)

    def lookup(name: str, file: str) -> ImplKind:
        found = by_name.get(name, [])
        local = [d for d in found if d.fn.file == file] or found
        known = [kinds[(d.fn.file, d.fn.name)] for d in local]
        return ImplKind.METAL if ImplKind.METAL in known else ImplKind.GRAPH if ImplKind.GRAPH in known \
            else ImplKind.UNKNOWN

    changed = True
    while changed:
        changed = False
        for d in defs:
            key = (d.fn.file, d.fn.name)
            if kinds[key] is not ImplKind.UNKNOWN:
                continue
            seen = {lookup(c, d.fn.file) for c in d.called if c != d.fn.name}
            kind = ImplKind.METAL if ImplKind.METAL in seen else ImplKind.GRAPH if ImplKind.GRAPH in seen \
                else ImplKind.UNKNOWN
            if kind is not ImplKind.UNKNOWN:
                kinds[key] = kind
                changed = True
    return kinds


def _macro_at(lines: dict[str, list[str]], root: Path, file: str, line: int) -> str | None:
    """The macro invoked on `file:line` when it is not REGISTER_DISPATCH itself."""
    if file not in lines:
        path = root / file
        lines[file] = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []
    text = lines[file][line - 1] if 0 < line <= len(lines[file]) else ""
    m = _INVOKED.match(text)
    return m.group(1) if m and m.group(1) not in ("REGISTER_DISPATCH", "REGISTER_MPS_DISPATCH") else None


def _scan_mm(paths: list[Path], root: Path) -> tuple[list[Registration], list[MpsFunction], list[KernelCall]]:
    units = [read_unit(p, root) for p in paths]
    mm_files = {str(p.resolve().relative_to(root.resolve())) for p in paths}
    defs = [_Def(u, f, _own_kind(u.code[f.body_start:f.body_end]),
                 tuple(_CALL.findall(u.code, f.body_start, f.body_end)))
            for u in units for f in u.functions]
    kinds = _resolve_kinds(defs)
    functions: dict[tuple[str, str], MpsFunction] = {}
    for d in defs:
        if d.fn.file in mm_files and (d.fn.file, d.fn.name) not in functions:
            functions[(d.fn.file, d.fn.name)] = MpsFunction(
                d.fn.name, kinds[(d.fn.file, d.fn.name)], d.fn.impl_func, Where(d.fn.file, d.fn.line),
                _exec_calls(d.unit, d.fn))
    regs: list[Registration] = []
    lines: dict[str, list[str]] = {}
    for unit in units:
        for m in _REGISTER.finditer(unit.code):
            if unit.function_at(m.start()) is not None:
                continue
            file, line = unit.origin(m.start())
            if file not in mm_files:
                continue
            kernel = m.group(3).split("::")[-1]
            target = functions.get((file, kernel)) or next(
                (f for f in functions.values() if f.name == kernel), None)
            regs.append(Registration(m.group(2), m.group(3), Where(file, line), _macro_at(lines, root, file, line),
                                     target.kind if target else ImplKind.UNKNOWN))
    regs = list(dict.fromkeys(regs))  # a header included twice registers nothing twice
    calls = [c for f in functions.values() for c in f.calls]
    return regs, list(functions.values()), calls


def _dtype(node: ast.expr) -> str:
    return ast.unparse(node).removeprefix("torch.")


def parse_python(text: str, rel: str, error: type[MetalportError], hint: str) -> ast.Module:
    """`text` (the Python file `rel`) parsed; a syntax error raises `error` at `rel:line` with `hint`."""
    try:
        return python_ast.parse(text)
    except SyntaxError as err:
        raise error(f"cannot parse: {err.msg}", location=f"{rel}:{err.lineno}", hint=hint) from err


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


def _scan_common_mps(text: str, rel: str) -> tuple[XfailEntry, ...]:
    out: list[XfailEntry] = []
    for name, value in named_assignments(parse_python(text, rel, RepoError, "fix the Python syntax there")):
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
    return tuple(out)


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _declarations(text: str, rel: str) -> tuple[StubDecl, ...]:
    """Every `DECLARE_DISPATCH(fn_type, name)` of a header; `fn_type` may hold commas of its own."""
    out = []
    for m in _DECLARE.finditer(text):
        close = match_bracket(text, m.end() - 1)
        inner = text[m.end():close if close >= 0 else len(text) - 1]
        fn_type, sep, name = inner.rpartition(",")
        if sep and re.fullmatch(r"\s*\w+\s*", name):
            start = m.end() + len(inner) - len(inner.lstrip())
            out.append(StubDecl(name.strip(), _fold(fn_type), Where(rel, _line_of(text, start))))
    return tuple(out)


def header_stubs(texts: dict[str, str]) -> list[StubDecl]:
    """Every DECLARE_DISPATCH of the header `texts` (relative path -> text), multi-line ones too,
    each with the parameters of its function type (a `using` alias of any of the headers, or an
    inline `void (*)(...)`)."""
    stubs, fn_types = [], {}
    for rel, text in texts.items():
        fn_types |= {m.group(1): _fold(m.group(2)) for m in _FN_TYPE.finditer(text)}
        stubs += _declarations(text, rel)
    return [replace(s, params=_stub_params(s.fn_type, fn_types)) for s in stubs]


def _stub_params(fn_type: str, fn_types: dict[str, str]) -> str | None:
    """The parameters of a stub's function type: a `using` alias or an inline `void (*)(...)`."""
    inline = _INLINE_FN.match(fn_type)
    return inline.group(1).strip() if inline else fn_types.get(fn_type)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


_DEFINE_BLOCK = re.compile(r"^#define\s+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)


def shader_registrations(text: str, rel: str) -> tuple[ShaderOp, ...]:
    """Every `REGISTER_*_OP(name, types...)` of a `.metal` text, those a file-local macro makes
    expanded per invocation (Note [macro-made registrations])."""
    defines = {m.group(1): m for m in _DEFINE_BLOCK.finditer(text)}
    inside = [(m.start(), m.end()) for m in defines.values()]
    out: list[ShaderOp] = []
    for m in _SHADER.finditer(text):
        args = tuple(a.strip() for a in m.group(2).split(",") if a.strip())
        if not args:
            continue
        block = next((d for d in defines.values() if d.start() <= m.start() < d.end()), None)
        params = [p.strip() for p in block.group(2).split(",")] if block else []
        uses = list(re.finditer(rf"^[ \t]*{re.escape(block.group(1))}\(([^)]*)\)", text, re.M)) if block else []
        uses = [u for u in uses if not any(a <= u.start() < b for a, b in inside)]
        if not (params and uses and any(re.search(rf"\b{re.escape(p)}\b", m.group(2)) for p in params)):
            out.append(ShaderOp(m.group(1), args[0], args[1:], Where(rel, _line_of(text, m.start(1)))))
            continue
        for use in uses:
            values = [v.strip() for v in use.group(1).split(",")]
            if len(values) != len(params):
                continue
            expanded = [_substitute(a, dict(zip(params, values))) for a in args]
            out.append(ShaderOp(m.group(1), expanded[0], tuple(expanded[1:]), Where(rel, _line_of(text, use.start(1)))))
    return tuple(out)


def _substitute(arg: str, values: dict[str, str]) -> str:
    """A macro argument with the macro's parameters replaced and `##` pasted (`DTYPE##2` -> `float2`)."""
    out = re.sub(r"\b(\w+)\b", lambda w: values.get(w.group(1), w.group(1)), arg)
    return re.sub(r"\s*##\s*", "", out)


# Note [macro-made registrations]: kernel files register many kernels through a file-local macro
# invoked once per type (`#define INSTANTIATE_X(DTYPE) REGISTER_UNARY_OP(neg, DTYPE##2, ...)`, then
# `INSTANTIATE_X(float);`). Read literally, such a line registers the type `DTYPE`; each
# invocation is what registers a real type, so each is one registration (located at it).


# Note [one scan per text]: every stage of a run scans a tree (resolve and plan the base, check and
# test the worktree), and every run scans the same base texts again. What the kernel files, the
# stub headers and common_mps.py say depends on their paths and texts alone, so each kind is kept
# in a `ContentCache` keyed by all of them (in this process, and in the user cache for the next
# run): an edited file makes a new key, scanned anew. (`.mm` and `.cpp` units are kept by
# `cpp.read_unit`, with the headers they include.)
_SCANS: ContentCache[tuple] = ContentCache("source-scans", [__file__], keep=64, memory=32)


def _kept(kind: str, texts: list[tuple[str, str]], scan: Callable[[], Iterable[T]]) -> tuple[T, ...]:
    """`scan()`'s findings over `texts` ((path, text) pairs), kept by them (Note [one scan per text])."""
    key = kind + "".join(f"\0{rel}\0{text}" for rel, text in texts)
    return _SCANS.get(key, lambda _: tuple(scan()))


def forget_scans() -> None:
    """Drop the scans and units kept in this process (benchmarks time a cold scan)."""
    _SCANS.forget()
    forget_units()


def scan_sources(checkout: Checkout) -> Sources:
    """Scan every source the backlog and the porting steps need, reading each file once; what the
    kernel files, the stub headers and common_mps.py say is kept by their texts (Note [one scan per
    text])."""
    regs, funcs, calls = _scan_mm(sorted(checkout.mps_operations.glob("*.mm")), checkout.root)
    metal = [(checkout.rel(p), _read(p)) for p in sorted(checkout.mps_kernels.glob("*.metal"))]
    shaders = _kept("shaders", metal, lambda: [op for rel, text in metal for op in shader_registrations(text, rel)])
    headers = [(checkout.rel(p), text) for p in sorted(checkout.native_dir.glob("*.h"))
               if "DECLARE_DISPATCH(" in (text := _read(p))]
    stubs = _kept("stubs", headers, lambda: header_stubs(dict(headers)))
    cpp = sorted(checkout.native_dir.glob("*.cpp"))
    routes = read_routes(cpp, checkout.root, [s.name for s in stubs])
    common = [(checkout.rel(checkout.common_mps), _read(checkout.common_mps))] if checkout.common_mps.is_file() else []
    xfails = _kept("xfails", common, lambda: [x for rel, text in common for x in _scan_common_mps(text, rel)])
    return Sources(tuple(regs), tuple(funcs), tuple(calls), shaders, stubs, xfails,
                   routes, tuple(checkout.rel(p) for p in cpp))
