"""Frozen records of native_functions.yaml, each knowing its `file:line` span."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from metalport.errors import RegistryError, UnknownOpError

KNOWN_KEYS = frozenset({
    "func", "dispatch", "variants", "tags", "device_check", "python_module", "autogen",
    "structured_delegate", "structured", "structured_inherits", "device_guard",
    "cpp_no_default_args", "manual_cpp_binding", "manual_kernel_registration", "category_override",
    "use_const_ref_for_mutable_tensors", "precomputed", "ufunc_inner_loop",
})
_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z0-9_]+))?\(")


@dataclass(frozen=True)
class Span:
    """Where a record sits: `file` and 1-based inclusive `start`..`end` lines."""

    file: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if not 1 <= self.start <= self.end:
            raise ValueError(f"bad span {self.start}..{self.end} in {self.file}")

    def __str__(self) -> str:
        return f"{self.file}:{self.start}"


@dataclass(frozen=True)
class DispatchLine:
    """One `KEY, KEY: kernel` line of a dispatch map, with its 1-based line and original text."""

    keys: tuple[str, ...]
    kernel: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{', '.join(self.keys)}: {self.kernel}"


@dataclass(frozen=True)
class Entry:
    """One `- func:` record of the registry."""

    func: str
    name: str
    overload: str
    dispatch: tuple[DispatchLine, ...]
    span: Span
    structured: bool = False
    structured_delegate: str | None = None
    structured_inherits: str | None = None
    variants: tuple[str, ...] = ("function",)
    tags: tuple[str, ...] = ()
    autogen: tuple[str, ...] = ()
    device_check: str | None = None
    dispatch_line: int | None = None

    @property
    def full_name(self) -> str:
        """`name.overload`, or `name` for the default overload."""
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def base(self) -> str:
        """The op a record belongs to: `heaviside_` and `heaviside.out` both give `heaviside`."""
        return self.name[:-1] if self.name.endswith("_") and not self.name.endswith("__") else self.name

    @property
    def schema(self) -> str:
        """The schema string, as written after `func:`."""
        return self.func

    def kernel_for(self, key: str) -> DispatchLine | None:
        """The dispatch line naming `key`, if any."""
        return next((d for d in self.dispatch if key in d.keys), None)

    def __str__(self) -> str:
        return self.func


@dataclass(frozen=True)
class Op:
    """All records sharing a base name, in file order."""

    name: str
    entries: tuple[Entry, ...]

    def entry(self, full_name: str) -> Entry | None:
        """The record called `full_name` (`heaviside.out`), if any."""
        return next((e for e in self.entries if e.full_name == full_name), None)


@dataclass(frozen=True)
class Registry:
    """A parsed native_functions.yaml: its path, text and every record grouped into ops."""

    path: Path
    text: str
    entries: tuple[Entry, ...]
    ops: dict[str, Op] = field(repr=False)

    def resolve(self, name: str) -> Op:
        """The op for `aten::heaviside`, `heaviside`, `heaviside.out` or `heaviside_`."""
        bare = name.removeprefix("aten::").strip()
        base = bare.split(".", 1)[0]
        if base in self.ops:
            return self.ops[base]
        for entry in self.entries:
            if entry.name == base or entry.full_name == bare:
                return self.ops[entry.base]
        close = difflib.get_close_matches(base, list(self.ops), n=3)
        hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else "run `metalport backlog` to list ops"
        raise UnknownOpError(f"unknown op {name!r}", location=str(self.path), hint=hint)


class _Loader(yaml.CSafeLoader):
    """libyaml composer; we build records from nodes to keep line numbers."""

    def resolve(self, kind: type, value: object, implicit: object) -> str:
        """Skip implicit tag resolution (a profiled hot spot): we read every scalar as text."""
        return ""


def _scalar(node: yaml.Node, file: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise RegistryError("expected a scalar", location=f"{file}:{node.start_mark.line + 1}",
                            hint="write a plain value")
    return node.value


def _list(node: yaml.Node, file: str) -> tuple[str, ...]:
    if isinstance(node, yaml.SequenceNode):
        return tuple(_scalar(n, file) for n in node.value)
    return tuple(v.strip() for v in _scalar(node, file).split(",") if v.strip())


def _parse_entry(node: yaml.Node, file: str, lines: list[str]) -> Entry:
    where = f"{file}:{node.start_mark.line + 1}"
    if not isinstance(node, yaml.MappingNode):
        raise RegistryError("entry is not a mapping", location=where, hint="start each entry with `- func:`")
    fields: dict[str, yaml.Node] = {}
    for key_node, value_node in node.value:
        key = _scalar(key_node, file)
        at = f"{file}:{key_node.start_mark.line + 1}"
        if key in fields:
            raise RegistryError(f"duplicate key {key!r}", location=at, hint="keep one of them")
        if key not in KNOWN_KEYS:
            close = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
            raise RegistryError(f"unknown key {key!r}", location=at,
                                hint=f"did you mean {close[0]!r}?" if close else "remove it")
        fields[key] = value_node
    if "func" not in fields:
        raise RegistryError("entry has no `func:`", location=where, hint="add the schema as `func:`")
    func = _scalar(fields["func"], file)
    match = _NAME.match(func)
    if not match:
        raise RegistryError(f"cannot read the op name of {func!r}", location=where,
                            hint="write `name.overload(args) -> ret`")
    dispatch: list[DispatchLine] = []
    dispatch_line = None
    if "dispatch" in fields:
        dnode = fields["dispatch"]
        dispatch_line = dnode.start_mark.line  # the `dispatch:` key is on the line before its map
        if not isinstance(dnode, yaml.MappingNode):
            raise RegistryError(f"dispatch of {match.group(0)[:-1]} is not a map",
                                location=f"{file}:{dnode.start_mark.line + 1}", hint="write `KEY: kernel` lines")
        seen: set[str] = set()
        for k, v in dnode.value:
            line = k.start_mark.line + 1
            keys_text = _scalar(k, file)
            if keys_text in seen:
                raise RegistryError(f"duplicate dispatch line {keys_text!r} in {match.group(0)[:-1]}",
                                    location=f"{file}:{line}", hint="keep one of them")
            seen.add(keys_text)
            keys = tuple(x.strip() for x in keys_text.split(","))
            dispatch.append(DispatchLine(keys, _scalar(v, file), line, lines[line - 1]))
    end = node.end_mark.line if node.end_mark.column == 0 else node.end_mark.line + 1
    while end > node.start_mark.line + 1 and not lines[end - 1].strip():
        end -= 1

    def opt(key: str) -> str | None:
        return _scalar(fields[key], file) if key in fields else None

    return Entry(
        func=func, name=match.group(1), overload=match.group(2) or "", dispatch=tuple(dispatch),
        span=Span(file, node.start_mark.line + 1, end),
        structured=opt("structured") in ("True", "true"),
        structured_delegate=opt("structured_delegate"), structured_inherits=opt("structured_inherits"),
        variants=_list(fields["variants"], file) if "variants" in fields else ("function",),
        tags=_list(fields["tags"], file) if "tags" in fields else (),
        autogen=_list(fields["autogen"], file) if "autogen" in fields else (),
        device_check=opt("device_check"), dispatch_line=dispatch_line,
    )


def parse_registry(text: str, path: Path | str) -> Registry:
    """Parse registry `text` (read from `path`) into a `Registry`; errors carry `file:line`."""
    file = str(path)
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else 1
        context = ""
        if err.context and err.context_mark and mark is not err.context_mark:
            context = f" ({err.context} started at line {err.context_mark.line + 1})"
        raise RegistryError(f"malformed YAML: {err.problem or err.context}{context}", location=f"{file}:{line}",
                            hint="fix the indentation or quoting there") from None
    if root is None:
        return Registry(Path(path), text, (), {})
    if not isinstance(root, yaml.SequenceNode):
        raise RegistryError("the registry is not a list of entries", location=f"{file}:1",
                            hint="start each entry with `- func:`")
    lines = text.splitlines()
    entries = tuple(_parse_entry(n, file, lines) for n in root.value)
    seen: dict[str, Entry] = {}
    groups: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.full_name in seen:
            raise RegistryError(f"{entry.full_name} is defined twice (first at line {seen[entry.full_name].span.start})",
                                location=str(entry.span), hint="remove one of the entries")
        seen[entry.full_name] = entry
        groups.setdefault(entry.base, []).append(entry)
    return Registry(Path(path), text, entries, {k: Op(k, tuple(v)) for k, v in groups.items()})

