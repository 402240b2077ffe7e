"""Insert a functor and its `REGISTER_*_OP` lines into a `.metal` kernel file's text.

Text in, text out. The functor goes after the last existing `struct ..._functor` block (or after
the includes when the file has none), the registrations after the last `REGISTER_*` line (or at
the end). Inserting a functor that is already there is a no-op; a file with neither includes nor
functors to anchor on is a `RecipeError`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from metalport.errors import RecipeError

KERNEL_INCLUDES: tuple[str, ...] = (
    "#include <c10/metal/indexing.h>",
    "#include <c10/metal/special_math.h>",
    "#include <c10/metal/utils.h>",
    "#include <metal_stdlib>",
)

_STRUCT = re.compile(r"^struct \w+_functor \{$", re.MULTILINE)
_REGISTER = re.compile(r"^\s*REGISTER_\w+\(.*\);[^\n]*$", re.MULTILINE)
_INCLUDE = re.compile(r"^#include [<\"][^>\"]+[>\"][^\n]*$", re.MULTILINE)


def new_kernel_file(functor_source: str, registrations: Sequence[str]) -> str:
    """The text of a new kernel file holding one functor and its registrations."""
    includes = "\n".join(KERNEL_INCLUDES)
    regs = "\n".join(registrations)
    return f"{includes}\n\n{functor_source.rstrip()}\n\n{regs}\n"


def _end_of_block(text: str, start: int, path: str) -> int:
    """Index just past the `};` that closes the brace block opened at or after `start`."""
    depth = 0
    i = text.index("{", start)
    while i < len(text):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                end = text.find("\n", i)
                return len(text) if end < 0 else end + 1
        i += 1
    line = text.count("\n", 0, start) + 1
    raise RecipeError("unbalanced braces in functor block", location=f"{path}:{line}",
                      hint="fix the kernel file by hand, then rerun")


def insert_functor(text: str | None, functor: str, functor_source: str,
                   registrations: Sequence[str], *, path: str = "kernel.metal") -> str:
    """`text` with `functor_source` and `registrations` added; a new file when `text` is None.

    Registrations already present are not repeated, nor is a functor already defined.
    """
    if text is None:
        return new_kernel_file(functor_source, registrations)
    if re.search(rf"^struct {re.escape(functor)} \{{$", text, re.MULTILINE):
        out = text
    else:
        structs = list(_STRUCT.finditer(text))
        if structs:
            at = _end_of_block(text, structs[-1].start(), path)
        else:
            includes = list(_INCLUDE.finditer(text))
            if not includes:
                raise RecipeError(f"no functor or #include to anchor {functor} on", location=f"{path}:1",
                                  hint=f"add '{KERNEL_INCLUDES[0]}' at the top of the file")
            at = includes[-1].end() + 1
        out = f"{text[:at]}\n{functor_source.rstrip()}\n{text[at:]}"
    missing = [r for r in registrations if r not in out]
    if not missing:
        return out
    regs = list(_REGISTER.finditer(out))
    if regs:
        at = regs[-1].end()
        return out[:at] + "".join("\n" + r for r in missing) + out[at:]
    sep = "" if out.endswith("\n") else "\n"
    return out + sep + "\n" + "".join(r + "\n" for r in missing)


def needed_includes(functor_source: str) -> tuple[str, ...]:
    """The c10/metal headers new code needs: indexing.h for the REGISTER_*_OP macros, and
    special_math.h when the functor calls `c10::metal::` special functions."""
    needed = ["#include <c10/metal/indexing.h>"]
    if "c10::metal::" in functor_source:
        needed.append("#include <c10/metal/special_math.h>")
    return tuple(needed)


def ensure_includes(text: str, includes: Sequence[str], *, path: str = "kernel.metal") -> str:
    """`text` with each of `includes` present, added after its last `#include` when missing."""
    missing = [inc for inc in includes if inc not in text]
    if not missing:
        return text
    found = list(_INCLUDE.finditer(text))
    if not found:
        raise RecipeError(f"no #include to add {missing[0]!r} after", location=f"{path}:1",
                          hint=f"add '{missing[0]}' at the top of the file")
    end = found[-1].end()
    return text[:end] + "".join("\n" + inc for inc in missing) + text[end:]
