"""Surgical text edits of native_functions.yaml: pure functions from old text to new text.

Every edit touches one line at a known place; every other byte stays as it was.
"""

from __future__ import annotations

import re

from metalport.errors import RegistryError
from metalport.registry.model import Entry

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _check_line(lines: list[str], line: int, where: str) -> None:
    if not 1 <= line <= len(lines):
        raise RegistryError(f"line {line} is outside the file ({len(lines)} lines)", location=where,
                            hint="re-read the registry before editing")


def _check_kernel(kernel: str, where: str) -> None:
    if not _IDENT.match(kernel):
        raise RegistryError(f"kernel name {kernel!r} is not a C++ identifier", location=where,
                            hint="use letters, digits and underscores")


def _eol(line_text: str) -> str:
    return line_text[len(line_text.rstrip("\r\n")):] or "\n"


def add_dispatch_key(text: str, entry: Entry, kernel: str, key: str = "MPS") -> str:
    """Add `key` to the dispatch line of `entry` naming `kernel`: `CPU, CUDA: k` -> `CPU, CUDA, MPS: k`."""
    if entry.kernel_for(key):
        raise RegistryError(f"{entry.full_name} already dispatches {key} to {entry.kernel_for(key).kernel}",
                            location=str(entry.span), hint="replace that line instead")
    target = next((d for d in entry.dispatch if d.kernel == kernel), None)
    if target is None:
        names = ", ".join(d.kernel for d in entry.dispatch) or "none"
        raise RegistryError(f"{entry.full_name} has no dispatch line for kernel {kernel!r}",
                            location=str(entry.span), hint=f"its kernels are: {names}")
    lines = _lines(text)
    _check_line(lines, target.line, str(entry.span))
    old = lines[target.line - 1]
    head, sep, tail = old.partition(":")
    if not sep or head.strip() != ", ".join(target.keys) and head.strip().replace(" ", "") != ",".join(target.keys):
        raise RegistryError(f"line {target.line} no longer reads {target.text.strip()!r}",
                            location=f"{entry.span.file}:{target.line}", hint="re-read the registry before editing")
    lines[target.line - 1] = f"{head}, {key}{sep}{tail}"
    return "".join(lines)


def remove_dispatch_key(text: str, line: int, key: str = "MPS") -> str:
    """Remove `key` from the comma-separated keys of dispatch `line` (inverse of `add_dispatch_key`)."""
    lines = _lines(text)
    _check_line(lines, line, f"line {line}")
    old = lines[line - 1]
    head, sep, tail = old.partition(":")
    keys = [k.strip() for k in head.split(",")]
    if not sep or key not in keys or len(keys) < 2:
        raise RegistryError(f"line {line} does not share key {key!r} with others: {old.strip()!r}",
                            location=f"line {line}", hint="use remove_dispatch_line for a single-key line")
    indent = head[: len(head) - len(head.lstrip())]
    lines[line - 1] = f"{indent}{', '.join(k for k in keys if k != key)}{sep}{tail}"
    return "".join(lines)


def remove_dispatch_line(text: str, line: int) -> str:
    """Delete dispatch `line` (1-based)."""
    lines = _lines(text)
    _check_line(lines, line, f"line {line}")
    if ":" not in lines[line - 1]:
        raise RegistryError(f"line {line} is not a dispatch line: {lines[line - 1].strip()!r}",
                            location=f"line {line}", hint="re-read the registry before editing")
    del lines[line - 1]
    return "".join(lines)


def replace_dispatch_line(text: str, line: int, keys: tuple[str, ...], kernel: str) -> str:
    """Rewrite dispatch `line` as `KEYS: kernel`, keeping its indentation and trailing comment."""
    lines = _lines(text)
    _check_line(lines, line, f"line {line}")
    _check_kernel(kernel, f"line {line}")
    old = lines[line - 1]
    body = old.rstrip("\r\n")
    indent = body[: len(body) - len(body.lstrip())]
    comment = body[body.index("  #"):] if "  #" in body else ""
    lines[line - 1] = f"{indent}{', '.join(keys)}: {kernel}{comment}{_eol(old)}"
    return "".join(lines)


def add_dispatch_line(text: str, entry: Entry, keys: tuple[str, ...], kernel: str) -> str:
    """Add `KEYS: kernel` after the last dispatch line of `entry` (or a new `dispatch:` block)."""
    _check_kernel(kernel, str(entry.span))
    for key in keys:
        if entry.kernel_for(key):
            raise RegistryError(f"{entry.full_name} already dispatches {key}", location=str(entry.span),
                                hint="replace that line instead")
    lines = _lines(text)
    _check_line(lines, entry.span.end, str(entry.span))
    if entry.dispatch:
        last = entry.dispatch[-1]
        indent = last.text[: len(last.text) - len(last.text.lstrip())]
        lines.insert(last.line, f"{indent}{', '.join(keys)}: {kernel}{_eol(lines[last.line - 1])}")
    else:
        eol = _eol(lines[entry.span.end - 1])
        if not lines[entry.span.end - 1].endswith(("\n", "\r")):
            lines[entry.span.end - 1] += eol
        lines.insert(entry.span.end, f"  dispatch:{eol}    {', '.join(keys)}: {kernel}{eol}")
    return "".join(lines)
