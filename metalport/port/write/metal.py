"""Insert a functor and its `REGISTER_*_OP` lines into a `.metal` kernel file's text.

Text in, text out. A functor and its registrations go in as one block after the last complete
functor block of the file: a `struct x_functor {...};` together with the `typedef` and
`REGISTER_*(x, ...)` lines right after it, so new code never lands between another op's functor and
its registrations (Note [functor blocks]). A file without functors takes the block after its
includes and `using` lines. Inserting a functor that is already there adds only its missing
registrations, beside its own. New code follows the file's namespace style (`file_style`).

Note [functor blocks]: kernel files in PyTorch keep most registrations beside their functor
(`nan_to_num_functor`, then its `typedef` and `REGISTER_UNARY_ALPHA_OP` lines); files that gather
registrations at the end (BinaryKernel.metal) still read well with a new op kept in one piece.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from metalport.checkout.cpp import match_bracket
from metalport.errors import RecipeError

KERNEL_INCLUDES: tuple[str, ...] = (
    "#include <c10/metal/indexing.h>",
    "#include <c10/metal/special_math.h>",
    "#include <c10/metal/utils.h>",
    "#include <metal_stdlib>",
)

_STRUCT = re.compile(r"^struct (\w+)_functor \{$", re.MULTILINE)
_USING = re.compile(r"^using namespace [\w:]+;[^\n]*$", re.MULTILINE)
# c10::metal names that `using namespace c10::metal` would make ambiguous with Metal's own when
# `::metal::` is dropped; those keep a `metal::` qualifier.
_C10_CLASHES = frozenset({"max", "min", "pow", "fmod", "hypot", "remainder", "erf", "log1p", "div", "conj",
                          "floor_divide", "sinc", "mul", "logaddexp", "logaddexp2"})
_REGISTER = re.compile(r"^\s*REGISTER_\w+\(.*\);[^\n]*$", re.MULTILINE)
_INCLUDE = re.compile(r"^#include [<\"][^>\"]+[>\"][^\n]*$", re.MULTILINE)


def new_kernel_file(functor_source: str, registrations: Sequence[str]) -> str:
    """The text of a new kernel file holding one functor and its registrations, in the style of
    PyTorch's kernel files (`using namespace metal;` after the includes)."""
    includes = "\n".join(KERNEL_INCLUDES)
    regs = "\n".join(registrations)
    source = file_style(functor_source, "using namespace metal;\n")
    return f"{includes}\nusing namespace metal;\n\n{source.rstrip()}\n\n{regs}\n"


def file_style(source: str, text: str) -> str:
    """`source` (written fully qualified, `::metal::`/`::c10::metal::`) in the namespace style of
    the file `text`: `::metal::` dropped when the file says `using namespace metal;`, and
    `::c10::metal::` written `c10::metal::` as PyTorch's kernel files do."""
    out = source.replace("::c10::metal::", "\0c10\0")
    if re.search(r"^using namespace metal;", text, re.MULTILINE):
        out = re.sub(r"(?<![\w:])::metal::(?=(\w+))",
                     lambda m: "metal::" if m.group(1) in _C10_CLASHES else "", out)
    return out.replace("\0c10\0", "c10::metal::")


def functor_arity(text: str, functor: str) -> int | None:
    """How many operands `struct functor`'s first `operator()` takes in `text` (None: no such
    functor, or no call operator found)."""
    found = re.search(rf"^struct {re.escape(functor)} \{{$", text, re.MULTILINE)
    if found is None:
        return None
    end = _end_of_block(text, found.start(), "kernel.metal")
    call = re.search(r"operator\(\)\s*\(([^)]*)\)", text[found.start():end])
    if call is None:
        return None
    params = call.group(1).strip()
    return 0 if not params else params.count(",") + 1


def fit_functor(text: str | None, names: Sequence[str], arity: int) -> tuple[str | None, tuple[str, int, int] | None]:
    """(first of `names` whose `struct <name>_functor` in `text` takes `arity` operands, else None;
    the first same-named functor of another arity as (name, its arity, its 1-based line), else None)."""
    if text is None:
        return None, None
    clash = None
    for name in names:
        found = functor_arity(text, f"{name}_functor")
        if found == arity:
            return name, clash
        if found is not None and clash is None:
            line = text.count("\n", 0, text.index(f"struct {name}_functor {{")) + 1
            clash = (name, found, line)
    return None, clash


def _block_end(text: str, struct: re.Match[str], path: str) -> int:
    """Index just past the functor block opened by `struct` (see Note [functor blocks])."""
    end = _end_of_block(text, struct.start(), path)
    own = re.compile(rf"^(typedef [^\n]*;|REGISTER_\w+\(\s*{re.escape(struct.group(1))}\s*,[^\n]*\);)[^\n]*$")
    at = end
    while at < len(text):
        nl = text.find("\n", at)
        line_end = len(text) if nl < 0 else nl + 1
        line = text[at:line_end].rstrip("\n")
        if own.match(line):
            end = line_end
        elif line.strip():
            break
        at = line_end
    return end


def _head_end(text: str) -> int | None:
    """Index just past the last `#include` or `using namespace` line (None: the file has neither)."""
    anchors = list(_INCLUDE.finditer(text)) + list(_USING.finditer(text))
    if not anchors:
        return None
    last = max(a.end() for a in anchors)
    return min(last + 1, len(text))


def _end_of_block(text: str, start: int, path: str) -> int:
    """Index just past the `};` that closes the brace block opened at or after `start`."""
    close = match_bracket(text, text.index("{", start))
    if close >= 0:
        end = text.find("\n", close)
        return len(text) if end < 0 else end + 1
    line = text.count("\n", 0, start) + 1
    raise RecipeError("unbalanced braces in functor block", location=f"{path}:{line}",
                      hint="fix the kernel file by hand, then rerun")


def insert_functor(text: str | None, functor: str, functor_source: str,
                   registrations: Sequence[str], *, path: str = "kernel.metal") -> str:
    """`text` with `functor_source` and `registrations` added as one block after the last complete
    functor block; a new file when `text` is None.

    Registrations already present are not repeated, nor is a functor already defined (its missing
    registrations go after its own last one, else right after its block).
    """
    if text is None:
        return new_kernel_file(functor_source, registrations)
    missing = [r for r in registrations if r not in text]
    existing = next((m for m in _STRUCT.finditer(text) if f"{m.group(1)}_functor" == functor), None)
    if existing is not None:
        if not missing:
            return text
        own = [m for m in _REGISTER.finditer(text)
               if re.match(rf"\s*REGISTER_\w+\(\s*{re.escape(existing.group(1))}\s*,", m.group(0))]
        if own:
            at = own[-1].end()
            return text[:at] + "".join("\n" + r for r in missing) + text[at:]
        at = _block_end(text, existing, path)
        return f"{text[:at]}\n{chr(10).join(missing)}\n{text[at:]}"
    structs = list(_STRUCT.finditer(text))
    at = _block_end(text, structs[-1], path) if structs else _head_end(text)
    if at is None:
        raise RecipeError(f"no functor or #include to anchor {functor} on", location=f"{path}:1",
                          hint=f"add '{KERNEL_INCLUDES[0]}' at the top of the file")
    block = file_style(functor_source, text).rstrip() + "\n"
    if missing:
        block += "\n" + "\n".join(missing) + "\n"
    head, tail = text[:at], text[at:]
    if not head.endswith("\n"):
        head += "\n"
    after = "" if not tail or tail.startswith("\n") else "\n"
    return f"{head}\n{block}{after}{tail}"


def needed_includes(functor_source: str) -> tuple[str, ...]:
    """The c10/metal headers new code needs: indexing.h for the REGISTER_*_OP macros, and
    special_math.h when the functor calls `c10::metal::` special functions."""
    needed = ["#include <c10/metal/indexing.h>"]
    if "c10::metal::" in functor_source:
        needed.append("#include <c10/metal/special_math.h>")
    return tuple(needed)


def _conditional_depth(text: str, offset: int) -> int:
    """How many preprocessor conditionals are open at `offset`."""
    head = text[:offset]
    opened = len(re.findall(r"^[ \t]*#[ \t]*if", head, re.MULTILINE))
    return opened - len(re.findall(r"^[ \t]*#[ \t]*endif", head, re.MULTILINE))


def ensure_includes(text: str, includes: Sequence[str], *, path: str = "kernel.metal") -> str:
    """`text` with each of `includes` present, each put where clang-format's include sorting wants
    it among the file's unconditional includes (before the first that sorts after it, else after
    the last); never inside `#if ... #endif` (`#include <.../X_metallib.h>` under `#else`)."""
    missing = [inc for inc in includes if inc not in text]
    if not missing:
        return text
    for inc in missing:
        found = [m for m in _INCLUDE.finditer(text) if _conditional_depth(text, m.start()) == 0]
        if not found:
            raise RecipeError(f"no #include to add {inc!r} after", location=f"{path}:1",
                              hint=f"add '{inc}' at the top of the file")
        later = next((m for m in found if m.group(0) > inc), None)
        if later is not None:
            text = f"{text[:later.start()]}{inc}\n{text[later.start():]}"
        else:
            text = f"{text[:found[-1].end()]}\n{inc}{text[found[-1].end():]}"
    return text
