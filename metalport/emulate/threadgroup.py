"""Threadgroup memory for the Metal-on-CPU tier: kernel-local `threadgroup` objects become shared.

On the GPU, `threadgroup float buf[32];` inside a kernel is one allocation per threadgroup. On the CPU
each threadgroup runs as fibers on one OS thread at a time (shim/metal_threadgroup.h), so the
declaration becomes a `static thread_local` object: one per OS thread, hence one per running group,
and one per function (or template instantiation), so kernels and nested scopes never share. The
first thread of each group to reach the declaration fills the object with 0xff bytes, as the GPU
gives no initial value. `threadgroup` pointers, references, parameters and casts are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from metalport.checkout.cpp import match_bracket
from metalport.errors import EmulateError

# Attributes that only make sense with threadgroups: such kernels run on the fiber executor.
GROUP_ATTRIBUTES = frozenset({
    "thread_position_in_threadgroup", "threadgroup_position_in_grid", "threads_per_threadgroup",
    "threadgroups_per_grid", "thread_index_in_threadgroup", "thread_index_in_simdgroup",
    "simdgroup_index_in_threadgroup", "threads_per_simdgroup", "simdgroups_per_threadgroup",
    "thread_execution_width", "dispatch_threads_per_threadgroup",
    "dispatch_simdgroups_per_threadgroup", "thread_index_in_quadgroup",
    "quadgroup_index_in_threadgroup", "quadgroups_per_threadgroup",
})

SHIM_DIR = Path(__file__).resolve().parent / "shim"

# Apple GPUs give a threadgroup 32 KiB; the message avoids the bare keyword, which metalport
# blanks in the compiled text (string literals included).
_MAX_GROUP_BYTES = 32768
_TOO_BIG = '"a thread" "group variable larger than the 32 KiB of thread" "group memory of Apple GPUs"'

# Comments, string/char literals and preprocessor lines: blanked before tokenising.
_NOISE = re.compile(r"""
    ^[ \t]*\#(?:\\\n|[^\n])*
  | //[^\n]*
  | /\*.*?\*/
  | "(?:\\.|[^"\\\n])*"
  | '(?:\\.|[^'\\\n])*'
""", re.VERBOSE | re.DOTALL | re.MULTILINE)
_SIGNIFICANT = re.compile(r"[A-Za-z_]\w*|\.?\d(?:[eEpP][+-]|[\w.'])*|::|->|\S")

_LINE_MARKER = re.compile(r'[ \t]*#(?:line)?[ \t]+(\d+)[ \t]+"((?:\\.|[^"\\])*)"')
_QUALIFIERS = frozenset({"const", "noexcept", "override", "final", "mutable", "volatile", "&", "&&"})
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_COLLECTIVE_CALL = re.compile(r"\b(?:threadgroup_barrier|simdgroup_barrier|simd_\w+|quad_\w+)\s*\(")
_THREADGROUP_WORD = re.compile(r"\bthreadgroup\b")


class _Token(NamedTuple):
    """One significant token: its text and where it is in the original text."""

    text: str
    start: int
    end: int

    @property
    def kind(self) -> str:
        return "ident" if self.text[0].isalpha() or self.text[0] == "_" else "other"


def _blank(match: re.Match[str]) -> str:
    """A literal becomes one opaque token `0`; comments and directives only keep their newlines."""
    text = match.group()
    if text[0] in "\"'":
        return "0" + " " * (len(text) - 1)
    return re.sub(r"[^\n]", " ", text)


def _location(text: str, offset: int) -> str:
    """`file:line` of an offset, following `# N "file"` line markers of preprocessed text."""
    file, line = "<shader>", 1
    for raw in text[:offset].split("\n")[:-1]:
        marker = _LINE_MARKER.match(raw)
        if marker:
            file, line = marker.group(2), int(marker.group(1))
        else:
            line += 1
    return f"{file}:{line}"


def _opens_function_body(toks: list[_Token]) -> bool:
    """Whether a `{` right after `toks` starts a function or lambda body (seen from outside any)."""
    j = len(toks) - 1
    while j >= 0:
        t = toks[j].text
        if t in _QUALIFIERS:
            j -= 1
        elif t == "]" and j > 0 and toks[j - 1].text == "]":  # an attribute [[...]]
            j = _matching_open(toks, j) - 1
        elif t == ")" and _paren_owner(toks, j) == "noexcept":
            j = _matching_open(toks, j) - 2
        else:
            break
    if j < 0:
        return False
    if toks[j].text == ")":
        return True
    # A trailing return type: `auto f(...) -> T {`.
    depth = 0
    while j >= 0 and toks[j].text not in (";", "{", "}"):
        if toks[j].text in (")", "]"):
            depth += 1
        elif toks[j].text in ("(", "["):
            depth -= 1
        elif toks[j].text == "->" and depth == 0:
            return j > 0 and toks[j - 1].text == ")"
        j -= 1
    return False


def _matching_open(toks: list[_Token], j: int) -> int:
    """Index of the bracket opening the one closed at toks[j] (-1 if unbalanced)."""
    close = toks[j].text
    return match_bracket([t.text for t in toks[:j + 1]], j, _CLOSE[close] + close, backward=True)


def _paren_owner(toks: list[_Token], j: int) -> str:
    """The identifier before the `(` matching the `)` at toks[j], or ''."""
    k = _matching_open(toks, j)
    return toks[k - 1].text if k > 0 else ""


@dataclass(frozen=True)
class _Declaration:
    """`threadgroup TYPE a[N], b;` spanning text[start:end] (the keyword .. the `;`)."""

    start: int
    end: int
    type_text: str
    declarators: tuple[tuple[str, str], ...]  # (name, full declarator text)


def _parse_declaration(text: str, toks: list[_Token], k: int) -> _Declaration | None:
    """Parse the statement starting with `threadgroup` at toks[k]; None if it is no object."""
    depth, angle = 0, 0
    segments: list[list[int]] = [[]]
    end = None
    for j in range(k + 1, len(toks)):
        t = toks[j].text
        if depth == 0:
            if t in (";", "{", "}"):
                end = j if t == ";" else None
                break
            if t == "<":
                angle += 1
            elif t == ">" and angle:
                angle -= 1
            elif angle == 0 and t in ("*", "&", "&&", "("):
                return None
            elif angle == 0 and t == "=":
                _initializer_error(text, toks[k])
            elif angle == 0 and t == ",":
                segments.append([])
                continue
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            if depth == 0:
                return None
            depth -= 1
        segments[-1].append(j)
    if end is None or not segments[0]:
        return None
    declarators = []
    type_text = ""
    for n, seg in enumerate(segments):
        name_at = _declarator_name(toks, seg)
        if name_at is None or (n == 0 and name_at == 0):
            return None
        name = toks[seg[name_at]].text
        decl = text[toks[seg[name_at]].start:toks[seg[-1]].end]
        if n == 0:
            type_text = text[toks[seg[0]].start:toks[seg[name_at - 1]].end]
        declarators.append((name, decl))
    return _Declaration(toks[k].start, toks[end].end, type_text, tuple(declarators))


def _declarator_name(toks: list[_Token], seg: list[int]) -> int | None:
    """Position in `seg` of the declared name: the identifier before trailing `[...]` groups."""
    i = len(seg) - 1
    while i >= 0 and toks[seg[i]].text == "]":
        depth = 0
        while i >= 0:
            t = toks[seg[i]].text
            depth += 1 if t == "]" else -1 if t == "[" else 0
            i -= 1
            if depth == 0:
                break
    if i < 0 or toks[seg[i]].kind != "ident":
        return None
    return i


def _initializer_error(text: str, tok: _Token) -> None:
    """Raise: Metal gives threadgroup variables no initializers."""
    raise EmulateError(
        "a threadgroup variable cannot have an initializer (the Metal compiler rejects it)",
        location=_location(text, tok.start),
        hint="declare it without one and let one thread store the value before a threadgroup_barrier")


_STRUCTURE = re.compile(r"[{}()\[\]]|\bthreadgroup\b")
_WINDOW = 600  # characters tokenised before a `{` or after a `threadgroup` keyword


def _threadgroup_locals(text: str) -> list[_Declaration]:
    """Every `threadgroup` object declared directly in a function body (at any block depth).

    Only brackets and the keyword are scanned over the whole text; tokens are made in a window
    before each `{` outside functions (is it a function body?) and after each keyword.
    """
    clean = _NOISE.sub(_blank, text)
    found = []
    stack: list[str] = []  # "code" / "other" for braces, else the open bracket
    code_depth = 0
    for m in _STRUCTURE.finditer(clean):
        t = m.group()
        if t == "{":
            code = code_depth > 0 or _body_follows(clean, m.start())
            stack.append("code" if code else "other")
            code_depth += code
        elif t in ("(", "["):
            stack.append(t)
        elif t in ("}", ")", "]"):
            if stack:
                code_depth -= stack.pop() == "code"
        elif t == "threadgroup" and stack and stack[-1] == "code":
            toks = _window_tokens(clean, m.start(), m.start() + _WINDOW)
            decl = _parse_declaration(text, toks, 0)
            if decl is not None:
                found.append(decl)
    return found


def _body_follows(clean: str, brace: int) -> bool:
    """Whether the `{` at clean[brace] opens a function body; tokenises only when it must."""
    before = clean[max(0, brace - _WINDOW):brace].rstrip()
    if not before:
        return False
    k = len(before)
    while k > 0 and (before[k - 1].isalnum() or before[k - 1] == "_"):
        k -= 1
    last = before[k:] or before[-1]
    if last == ")":
        return True
    statement = re.split(r"[;{}]", before)[-1]
    if last not in _QUALIFIERS and last != "]" and "->" not in statement:
        return False
    return _opens_function_body(_window_tokens(clean, max(0, brace - _WINDOW), brace))


def _window_tokens(clean: str, start: int, end: int) -> list[_Token]:
    """Tokens of clean[start:end] (positions in the whole text)."""
    return [_Token(m.group(), m.start(), m.end()) for m in _SIGNIFICANT.finditer(clean, start, end)]


def rewrite_threadgroup_locals(text: str) -> str:
    """Turn kernel-local `threadgroup T name[N];` into per-threadgroup `static thread_local` storage.

    Works on preprocessed or raw C++ text; adds no newlines, so line numbers stay the same.
    Raises EmulateError (with the file:line of the line markers) for a threadgroup variable with an
    initializer, which Metal rejects.
    """
    out: list[str] = []
    pos = 0
    for n, decl in enumerate(_threadgroup_locals(text)):
        out.append(text[pos:decl.start])
        names = ", ".join(d for _, d in decl.declarators)
        enter = " ".join(
            f"static_assert(sizeof({name}) <= {_MAX_GROUP_BYTES}, {_TOO_BIG}); "
            f"static thread_local unsigned long mshim_tg_seen_{n}_{m} = ~0UL; "
            f"::mshim::threadgroup_local_enter({name}, mshim_tg_seen_{n}_{m});"
            for m, (name, _) in enumerate(decl.declarators))
        out.append(f"static thread_local {decl.type_text} {names}; {enter}")
        pos = decl.end
    out.append(text[pos:])
    return "".join(out)


def _user_text(text: str, shim_dir: Path) -> str:
    """The text outside regions that line markers attribute to files in `shim_dir`."""
    shim = shim_dir.resolve()
    seen: dict[str, bool] = {}
    keep: list[str] = []
    in_shim = False
    for line in text.splitlines(keepends=True):
        marker = _LINE_MARKER.match(line)
        if marker:
            name = marker.group(2)
            if name not in seen:
                seen[name] = Path(name).resolve().parent == shim
            in_shim = seen[name]
            continue
        if not in_shim:
            keep.append(line)
    return "".join(keep)


def uses_threadgroup(attributes: Iterable[str], text: str = "", *,
                     shim_dir: Path = SHIM_DIR) -> bool:
    """Whether a kernel needs the threadgroup executor rather than a plain grid loop.

    True if one of its parameters has a threadgroup/simdgroup attribute (`attributes`: the names,
    e.g. "thread_position_in_threadgroup"), or if `text` (the translation unit, preprocessed or
    not; parts that line markers attribute to the shim are ignored) declares `threadgroup` data or
    calls a barrier or a simd_*/quad_* function, which any of its kernels may reach.
    """
    if any(a in GROUP_ATTRIBUTES for a in attributes):
        return True
    user = _user_text(text, shim_dir)
    return bool(_COLLECTIVE_CALL.search(user) or _THREADGROUP_WORD.search(user))
