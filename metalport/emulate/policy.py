"""Refuse host-only C++ in a shader before it is compiled for the CPU.

The emulated tier builds a `.metal` file into native code and runs it on this machine, and with
`--model openai:…` the model wrote part of it. Metal has no `extern` declarations, inline
assembly, `std::`, system headers or libc calls, so a shader using them is refused as a compile
error at its line (which the repair loop reads like any other). This is an early, friendly
error, not the defense: token pasting gets past any pattern, the shader sandbox does not (see
Note [the shader sandbox] in `metalport/sandbox/confine.py`).
"""

from __future__ import annotations

import re

from metalport.emulate.diagnostics import Diagnostic, compile_error

# Comments and string/char literals are blanked (newlines kept) before matching.
_COMMENT_OR_LITERAL = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_FORBIDDEN = re.compile(
    r"\b(?P<token>extern|asm|__asm__|__asm|__attribute__|_Pragma|__builtin_\w+|std\s*::|"
    r"(?:getenv|secure_getenv|setenv|putenv|system|popen|fork|vfork|execl|execlp|execle|execv|execvp|"
    r"execve|syscall|dlopen|dlsym|fopen|freopen|open|openat|creat|socket|connect|bind|unlink|remove|"
    r"rename|kill|ptrace|mmap|mprotect|chmod|chown)\s*\()")
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*(?P<target><[^>\n]*>|\"[^\"\n]*\")", re.M)
_ALLOWED_INCLUDE = re.compile(r"<(metal_\w+|c10/metal/[\w/]+\.h|ATen/native/mps/[\w/]+\.h)>|\"[\w][\w/]*\.h\"")


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def _place(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def check_shader_policy(text: str, display: str) -> None:
    """Raise CompileError (diagnostics at the offending lines) when the shader holds host-only C++."""
    found: list[Diagnostic] = []
    for match in _INCLUDE.finditer(text):
        target = match.group("target")
        if not _ALLOWED_INCLUDE.fullmatch(target):
            line, column = _place(text, match.start("target"))
            found.append(Diagnostic(display, line, column, "error",
                                    f"#include {target} is not a Metal or c10/metal header; shaders may "
                                    "include <metal_*>, <c10/metal/...>, <ATen/native/mps/...> or a local .h"))
    code = _COMMENT_OR_LITERAL.sub(_blank, text)
    for match in _FORBIDDEN.finditer(code):
        token = re.sub(r"\s+", "", match.group("token"))
        line, column = _place(code, match.start())
        found.append(Diagnostic(display, line, column, "error",
                                f"'{token}' is host-only C++, not Metal; the emulator refuses to build it"))
    if found:
        found.sort(key=lambda d: (d.line, d.column or 0))
        raise compile_error(tuple(found), "", what=display)
