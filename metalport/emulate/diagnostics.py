"""Compiler diagnostics, mapped to the `.metal` file and line the user wrote.

The shader is compiled from preprocessed text that keeps line markers, so the compiler already
reports original files and lines; here the temporary copy of an in-memory source is renamed to
the caller's `filename`, and the result becomes structured `Diagnostic`s or `Failure`s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from metalport.errors import CompileError
from metalport.failure import Failure

_LINE = re.compile(r"^(?P<file>[^\n:]+?):(?P<line>\d+):(?:(?P<col>\d+):)?\s*"
                   r"(?P<sev>fatal error|error|warning|note):\s*(?P<msg>.*)$")
_SEVERITY = {"fatal error": "error", "error": "error", "warning": "warning", "note": "note"}
# g++ instantiation trail lines carry no severity: `f.metal:12:1:   required from here`.
_TRAIL = re.compile(r"^(?P<file>[^\n:]+?):(?P<line>\d+):(?:(?P<col>\d+):)?\s+(?P<msg>required from .*)$")


@dataclass(frozen=True)
class Diagnostic:
    """One compiler message at a place in the user's sources."""

    file: str
    line: int
    column: int | None
    severity: str
    message: str

    def to_failure(self) -> Failure:
        """The diagnostic as the repair loop's `Failure` (kind compile-error/-warning/-note)."""
        return Failure(kind=f"compile-{self.severity}", file=self.file, line=self.line,
                       column=self.column, message=self.message)

    def to_dict(self) -> dict[str, object]:
        """The diagnostic as a JSON-ready dict."""
        return {"file": self.file, "line": self.line, "column": self.column,
                "severity": self.severity, "message": self.message}

    def __str__(self) -> str:
        col = f"{self.column}:" if self.column is not None else ""
        return f"{self.file}:{self.line}:{col} {self.severity}: {self.message}"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\udc80-\udcff]")


def printable(text: str) -> str:
    """`text` with control characters (terminal escapes among them) and undecodable bytes shown
    as `\\xNN`: compiler output is data, never instructions to a terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()) & 0xFF:02x}", text)


def parse_diagnostics(stderr: str, renames: Mapping[str, str]) -> tuple[Diagnostic, ...]:
    """Structured diagnostics from g++/clang stderr; paths in `renames` are shown as their value;
    control characters are escaped (`printable`)."""
    found: list[Diagnostic] = []
    for raw in printable(stderr).splitlines():
        match = _LINE.match(raw.strip())
        trail = None if match else _TRAIL.match(raw.strip())
        if match is None and trail is None:
            continue
        hit = match or trail
        assert hit is not None
        file = hit.group("file").strip()
        file = renames.get(file, file)
        col = hit.group("col")
        severity = _SEVERITY[match.group("sev")] if match else "note"
        found.append(Diagnostic(file=file, line=int(hit.group("line")), column=int(col) if col else None,
                                severity=severity, message=hit.group("msg").strip()))
    return tuple(found)


def compile_error(diagnostics: tuple[Diagnostic, ...], stderr: str, *, what: str) -> CompileError:
    """A one-line CompileError with all diagnostics attached: the first error's message, placed at
    the first line of the user's file `what` the compiler mentions (an error there, else a note
    such as "required from here"), so a failure inside a c10 header points at the user's line."""
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (+{len(errors) - 1} more errors)" if len(errors) > 1 else ""
        mine = [d for d in diagnostics if d.file == what]
        place = first if first.file == what else \
            next((d for d in mine if d.severity == "error"), mine[0] if mine else first)
        where = "" if place is first else f" [at {first.file}:{first.line}]"
        location = f"{place.file}:{place.line}" + (f":{place.column}" if place.column else "")
        return CompileError(f"compile error: {first.message}{where}{more}", diagnostics=diagnostics,
                            location=location)
    tail = " ".join(printable(stderr).strip().splitlines()[-1:]) or "no message"
    return CompileError(f"{what} failed to compile: {tail}", diagnostics=diagnostics)


def failures(err: CompileError) -> list[Failure]:
    """The `Failure`s of a CompileError (errors and warnings; notes fold into nothing)."""
    out = [d.to_failure() for d in err.diagnostics if isinstance(d, Diagnostic) and d.severity != "note"]
    return out or [Failure(kind="compile-error", file=None, line=None, column=None, message=err.message)]
