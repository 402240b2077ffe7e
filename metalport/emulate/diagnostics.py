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


def parse_diagnostics(stderr: str, renames: Mapping[str, str]) -> tuple[Diagnostic, ...]:
    """Structured diagnostics from g++/clang stderr; paths in `renames` are shown as their value."""
    found: list[Diagnostic] = []
    for raw in stderr.splitlines():
        match = _LINE.match(raw.strip())
        if match is None:
            continue
        file = match.group("file").strip()
        file = renames.get(file, file)
        col = match.group("col")
        found.append(Diagnostic(file=file, line=int(match.group("line")), column=int(col) if col else None,
                                severity=_SEVERITY[match.group("sev")], message=match.group("msg").strip()))
    return tuple(found)


def compile_error(diagnostics: tuple[Diagnostic, ...], stderr: str, *, what: str) -> CompileError:
    """A one-line CompileError naming the first error (and its place) with all diagnostics attached."""
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (+{len(errors) - 1} more errors)" if len(errors) > 1 else ""
        location = f"{first.file}:{first.line}" + (f":{first.column}" if first.column else "")
        return CompileError(f"compile error: {first.message}{more}", diagnostics=diagnostics,
                            location=location)
    tail = " ".join(stderr.strip().splitlines()[-1:]) or "no message"
    return CompileError(f"{what} failed to compile: {tail}", diagnostics=diagnostics)


def failures(err: CompileError) -> list[Failure]:
    """The `Failure`s of a CompileError (errors and warnings; notes fold into nothing)."""
    out = [d.to_failure() for d in err.diagnostics if isinstance(d, Diagnostic) and d.severity != "note"]
    return out or [Failure(kind="compile-error", file=None, line=None, column=None, message=err.message)]
