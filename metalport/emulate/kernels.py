"""The kernel table: `[[host_name]]` instantiations bound to their kernel definitions' attributes.

Explicit instantiations from the `REGISTER_*` macros carry no attributes, so each one is matched
by name (and parameter count) to the kernel template DEFINITION, whose `[[buffer(n)]]` and
`[[thread_position_in_grid]]`-family attributes say how every argument is bound.  Works on the
preprocessed text while the address-space markers of `metal_shim.h` are still in it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

from metalport.checkout.cpp import match_bracket
from metalport.emulate.preprocess import HostName

_KERNEL = re.compile(r"\b__mK__(?:\s*\]\])?\s+void\s+")  # `kernel void` or `[[kernel]] void`
_ATTR = re.compile(r"\[\[\s*([A-Za-z_]\w*)\s*(?:\(([^)]*)\))?\s*\]\]")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_HOST_NAME_ATTR = re.compile(r'\[\[\s*host_name\s*\(\s*"([^"]*)"\s*\)\s*\]\]\s*$')
_SPACES = {"__mD__": "device", "__mshC__": "constant", "__mshimTG__": "threadgroup", "__mT__": "thread"}
GRID_ATTRIBUTES = frozenset({"buffer", "thread_position_in_grid", "threads_per_grid"})
# Every binding the harness can make: buffers plus the members of EMU-TG's mshim::ThreadIds.
BINDABLE = GRID_ATTRIBUTES | frozenset({
    "thread_position_in_threadgroup", "threadgroup_position_in_grid", "threads_per_threadgroup",
    "threadgroups_per_grid", "thread_index_in_threadgroup", "thread_index_in_simdgroup",
    "simdgroup_index_in_threadgroup", "threads_per_simdgroup", "simdgroups_per_threadgroup",
    "dispatch_threads_per_threadgroup", "dispatch_simdgroups_per_threadgroup", "thread_execution_width",
    "thread_index_in_quadgroup", "quadgroup_index_in_threadgroup", "quadgroups_per_threadgroup"})


@dataclass(frozen=True)
class KernelArg:
    """One kernel parameter: its name, element C type, address space, binding attribute and index."""

    name: str
    c_type: str
    address_space: str
    is_pointer: bool
    attribute: str
    index: int | None

    def to_dict(self) -> dict[str, object]:
        """The argument as a JSON-ready dict."""
        return {"name": self.name, "c_type": self.c_type, "address_space": self.address_space,
                "is_pointer": self.is_pointer, "attribute": self.attribute, "index": self.index}


@dataclass(frozen=True)
class KernelInfo:
    """A kernel the library exports under `host_name`: its C++ instantiation and bound arguments."""

    host_name: str
    template: str
    args: tuple[KernelArg, ...]
    uses_threadgroup: bool
    # Buffer indices the body subscripts with the 1-D thread position (`out[tid]`): each must
    # hold at least one element per thread.
    grid_indexed: tuple[int, ...] = ()

    @property
    def buffers(self) -> tuple[KernelArg, ...]:
        """The `[[buffer(n)]]` arguments in buffer-index order (the order callers pass them)."""
        return tuple(sorted((a for a in self.args if a.attribute == "buffer"), key=lambda a: a.index or 0))

    def to_dict(self) -> dict[str, object]:
        """The kernel as a JSON-ready dict."""
        return {"host_name": self.host_name, "template": self.template,
                "args": [a.to_dict() for a in self.args], "uses_threadgroup": self.uses_threadgroup,
                "grid_indexed": list(self.grid_indexed)}


@dataclass(frozen=True)
class Definition:
    """A `kernel void name(...)` definition: parameter texts, whether it is a template, its body."""

    name: str
    params: tuple[str, ...]
    is_template: bool
    body: str
    host_name: str | None = None
    offset: int = 0


@dataclass(frozen=True)
class KernelSpec:
    """What the harness needs: the host name, the callee, its declared parameters and bindings."""

    info: KernelInfo
    callee: str
    param_decls: tuple[str, ...]


_SCOPE = re.compile(r"\bnamespace\s+([A-Za-z_][\w:]*)?\s*\{|[{}]|\"(?:[^\"\\\\\n]|\\\\.)*\"|'(?:[^'\\\\\n]|\\\\.)*'")


def namespace_map(text: str) -> tuple[list[int], list[str]]:
    """Offsets where the enclosing namespace changes and the `a::b` path from each one on
    (anonymous namespaces are left out: their members are visible from the enclosing one)."""
    stack: list[str | None] = []  # a name per open namespace brace, None for other braces
    offsets, paths = [0], [""]
    for match in _SCOPE.finditer(text):
        token = match.group(0)
        if token.startswith(("\"", "'")):
            continue
        if token.startswith("namespace"):
            stack.append(match.group(1) or "")
        elif token == "{":
            stack.append(None)
            continue
        elif stack:
            if stack.pop() is None:
                continue
        offsets.append(match.end())
        paths.append("::".join(n for n in stack if n))
    return offsets, paths


def _qualify(name: str, offset: int, scopes: tuple[list[int], list[str]]) -> str:
    """`name` as seen at global scope, given the namespaces open at `offset`."""
    if name.startswith("::"):
        return name
    offsets, paths = scopes
    path = paths[bisect.bisect_right(offsets, offset) - 1]
    return f"::{path}::{name}" if path else name


def _close_brace(text: str, start: int) -> int:
    """Index just past the `}` closing the `{` at `start` (string and character literals skipped).

    Braces only: a `<` in a body is as often a comparison as a template bracket."""
    close = match_bracket(text, start, "{}", skip_literals=True)
    return len(text) if close < 0 else close + 1


def _close_paren(text: str, start: int) -> int:
    """Index just past the `)` matching the `(` at `start` (parentheses only)."""
    close = match_bracket(text, start, "()")
    return len(text) if close < 0 else close + 1


def split_params(text: str) -> tuple[str, ...]:
    """Split a parameter list on top-level commas (inside `<>`, `()`, `[]`, `{}` do not count)."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    tail = "".join(current)
    if tail.strip():
        parts.append(tail)
    return tuple(" ".join(p.split()) for p in parts)


def find_definitions(text: str) -> dict[str, list[Definition]]:
    """Every `kernel void NAME(...) {…}` definition in the preprocessed text, by unqualified name."""
    found: dict[str, list[Definition]] = {}
    for match in _KERNEL.finditer(text):
        name_match = _IDENT.match(text, match.end())
        if name_match is None:
            continue
        open_at = text.find("(", name_match.end())
        if open_at < 0 or text[name_match.end():open_at].strip():
            continue
        close = _close_paren(text, open_at)
        rest = text[close:close + 200].lstrip()
        if not rest.startswith("{"):
            continue
        body_start = text.index("{", close)
        body = text[body_start:_close_brace(text, body_start)]
        before = text[max(0, match.start() - 400):match.start()].rstrip()
        is_template = before.endswith(">")
        named = _HOST_NAME_ATTR.search(before)
        host_name = named.group(1) if named and before.endswith("]]") else None
        params = split_params(text[open_at + 1:close - 1])
        found.setdefault(name_match.group(0), []).append(
            Definition(name=name_match.group(0), params=params, is_template=is_template, body=body,
                       host_name=host_name, offset=match.start()))
    return found


def _parse_param(decl: str, fallback_index: int) -> KernelArg:
    """A parameter declaration (markers still in) as a KernelArg."""
    attrs = _ATTR.findall(decl)
    bare = _ATTR.sub(" ", decl)
    space = next((s for m, s in _SPACES.items() if re.search(rf"\b{m}\b", bare)), "thread")
    for marker in _SPACES:
        bare = re.sub(rf"\b{marker}\b", " ", bare)
    tokens = bare.split()
    idents = _IDENT.findall(bare)
    name = idents[-1] if idents and len(tokens) > 1 and re.search(rf"\b{idents[-1]}\s*$", bare) else ""
    type_text = bare[:bare.rfind(name)] if name else bare
    is_pointer = "*" in type_text
    c_type = " ".join(re.sub(r"\b(const|volatile)\b|[*&]", " ", type_text).split())
    attribute, index = "buffer", fallback_index
    for attr_name, attr_arg in attrs:
        attr_name = "threadgroup" if attr_name == "__mshimTG__" else attr_name
        if attr_name in ("buffer", "threadgroup") or attr_name.startswith(("thread", "simd", "quad", "dispatch")):
            attribute = attr_name
            index = int(attr_arg, 0) if attr_arg and attr_arg.strip().isdigit() else None
            break
    if attribute == "threadgroup":
        space = "threadgroup"
    return KernelArg(name=name, c_type=c_type, address_space=space, is_pointer=is_pointer,
                     attribute=attribute, index=index if attribute in ("buffer", "threadgroup") else None)


def _uses_threadgroup(args: tuple[KernelArg, ...], body: str) -> bool:
    """True when a kernel needs the per-threadgroup executor."""
    if any(a.attribute not in GRID_ATTRIBUTES for a in args):
        return True
    return bool(re.search(r"__mshimTG__|threadgroup|simd_|quad_", body))


def _instantiation_at(text: str, host: HostName) -> tuple[str, tuple[str, ...], int] | None:
    """The callee, parameter declarations and end offset (past its `;`) of the explicit
    instantiation after a host name."""
    match = _KERNEL.search(text, host.offset)
    if match is None or text[host.offset:match.start()].count(";"):
        return None
    i = match.end()
    depth = 0
    while i < len(text):
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            break
        i += 1
    callee = _normalize(text[match.end():i])
    close = _close_paren(text, i)
    semicolon = text.find(";", close)
    return callee, split_params(text[i + 1:close - 1]), len(text) if semicolon < 0 else semicolon + 1


def drop_instantiations(text: str, host_names: tuple[HostName, ...], keep: Callable[[str], bool]) -> str:
    """Blank the explicit instantiations whose host name `keep` rejects (newlines stay, so line
    markers stay right): their kernels are then never instantiated, compiled or linked."""
    pieces, last = [], 0
    for host in sorted(host_names, key=lambda h: h.offset):
        parsed = None if keep(host.name) else _instantiation_at(text, host)
        if parsed is None or host.offset < last:
            continue
        end = parsed[2]
        pieces += [text[last:host.offset], re.sub(r"[^\n]", " ", text[host.offset:end])]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _normalize(code: str) -> str:
    """Collapse whitespace in a C++ name: `:: c10::metal::f<float , g>` -> `::c10::metal::f<float, g>`."""
    code = re.sub(r"\s*([<>:*&(),])\s*", r"\1", " ".join(code.split()))
    return code.replace(",", ", ")


def _base_name(callee: str) -> str:
    """`::c10::metal::unary_dense<float, f>` -> `unary_dense`."""
    head = callee.split("<", 1)[0]
    return head.rsplit("::", 1)[-1]


def build_specs(text: str, host_names: tuple[HostName, ...], *,
                tu_threadgroup: bool = False) -> tuple[list[KernelSpec], list[str]]:
    """Kernel specs for every host-named instantiation and every plain (non-template) kernel.

    `tu_threadgroup` marks every kernel as needing the threadgroup executor (the file uses
    threadgroup memory or collectives somewhere). Returns (specs, problems); a problem is a host
    name whose kernel definition was not found.
    """
    definitions = find_definitions(text)
    scopes = namespace_map(text)
    specs: list[KernelSpec] = []
    problems: list[str] = []
    seen: set[str] = set()
    for host in host_names:
        parsed = _instantiation_at(text, host)
        if parsed is None:
            problems.append(f"host_name {host.name!r}: no kernel instantiation follows it")
            continue
        callee, decls, _ = parsed
        callee = _qualify(callee, host.offset, scopes)
        candidates = [d for d in definitions.get(_base_name(callee), []) if len(d.params) == len(decls)]
        if not candidates:
            problems.append(f"host_name {host.name!r}: no kernel definition of {_base_name(callee)!r} "
                            f"with {len(decls)} parameters")
            continue
        spec = _spec(host.name, callee, decls, candidates[-1], tu_threadgroup)
        if not _bindable(spec, problems):
            continue
        if host.name not in seen:
            seen.add(host.name)
            specs.append(spec)
    for name, defs in definitions.items():
        for definition in defs:
            exported = definition.host_name or name
            if not definition.is_template and exported not in seen:
                seen.add(exported)
                spec = _spec(exported, _qualify(name, definition.offset, scopes), definition.params, definition,
                             tu_threadgroup)
                if _bindable(spec, problems):
                    specs.append(spec)
    return specs, problems


def _bindable(spec: KernelSpec, problems: list[str]) -> bool:
    """Whether the harness can bind every parameter; if not, say why in `problems`."""
    unbound = [a for a in spec.info.args if a.attribute not in BINDABLE]
    if unbound:
        problems.append(f"kernel {spec.info.host_name!r}: parameter {unbound[0].name or '?'} "
                        f"[[{unbound[0].attribute}]] cannot be bound by the emulator; kernel skipped")
    return not unbound


def _grid_indexed(args: tuple[KernelArg, ...], body: str) -> tuple[int, ...]:
    """Buffers subscripted directly by a scalar `[[thread_position_in_grid]]` parameter."""
    position = next((a for a in args if a.attribute == "thread_position_in_grid"
                     and not a.c_type.endswith(("2", "3", "4")) and a.name), None)
    if position is None:
        return ()
    pos = re.escape(position.name)
    if re.search(rf"\b{pos}\s*(?:<|>|<=|>=)|(?:<|>|<=|>=)\s*{pos}\b", body):
        return ()  # a bounds guard: the host may launch more threads than elements
    return tuple(sorted(a.index for a in args if a.attribute == "buffer" and a.is_pointer and a.name
                        and a.index is not None and a.c_type != "void"
                        and re.search(rf"\b{re.escape(a.name)}\s*\[\s*{re.escape(position.name)}\s*\]", body)))


def _spec(host_name: str, callee: str, decls: tuple[str, ...], definition: Definition,
          tu_threadgroup: bool) -> KernelSpec:
    """Bind `decls` (the callee's parameters) by the attributes of `definition`'s parameters."""
    args = []
    for position, (decl, defined) in enumerate(zip(decls, definition.params)):
        bound = _parse_param(defined, position)
        concrete = _parse_param(decl, position)
        args.append(KernelArg(name=bound.name or concrete.name, c_type=concrete.c_type or bound.c_type,
                              address_space=bound.address_space, is_pointer=bound.is_pointer,
                              attribute=bound.attribute, index=bound.index))
    info = KernelInfo(host_name=host_name, template=callee, args=tuple(args),
                      uses_threadgroup=tu_threadgroup or _uses_threadgroup(tuple(args), definition.body),
                      grid_indexed=_grid_indexed(tuple(args), definition.body))
    clean = tuple(_ATTR.sub(" ", d) for d in decls)
    return KernelSpec(info=info, callee=callee, param_decls=clean)
