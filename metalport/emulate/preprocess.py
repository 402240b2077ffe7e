"""Preprocess a `.metal` file against the shim, keeping line markers, and post-process the text.

The shim turns the Metal address spaces into same-length marker identifiers when
`MSHIM_PREPROCESS` is defined, so the kernel table can read them here; `finalize` then blanks
them (`constant` -> `const`), keeping every diagnostic column where the compiler would put it.
`[[host_name("…")]]` after `template` is removed here too (clang rejects it; see the note
`metal-on-cpu.md`, fix 1) and each removal is recorded for the kernel table.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from metalport.emulate.compiler import Compiler
from metalport.emulate.flags import preprocess_flags
from metalport.sandbox.confine import Sandbox, visible_roots
from metalport.sandbox.runner import scrubbed_env

SHIM_DIR = Path(__file__).parent / "shim"

_HOST_NAME = re.compile(r'\btemplate(\s*)\[\[\s*host_name\s*\(((?:\s*"(?:[^"\\]|\\.)*")+)\s*\)\s*\]\]')
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"(.*)$', re.MULTILINE)
# Markers and their same-length replacements (see metal_shim.h).
_BLANKS = {"__mD__": "      ", "__mT__": "      ", "__mK__": "      "}
_CONST_DUP = re.compile(r"\b__mshC__(\s+const\b)|\bconst(\s+)__mshC__\b")


@dataclass(frozen=True)
class HostName:
    """One `template [[host_name("…")]]` occurrence: the name and the offset in the stripped text."""

    name: str
    offset: int


@dataclass(frozen=True)
class Preprocessed:
    """Preprocessed text with markers still in, the host names found, and every file it read."""

    text: str
    host_names: tuple[HostName, ...]
    files: tuple[Path, ...]


def run_preprocessor(source: Path, *, compiler: Compiler, include_dirs: tuple[Path, ...],
                     metal_version: int, sandbox: Sandbox) -> subprocess.CompletedProcess[str]:
    """Run `CXX -E` on `source` with the shim on the include path, confined by `sandbox`;
    returns the completed process."""
    argv = [*compiler.argv, "-E", *preprocess_flags(compiler, metal_version),
            "-I", str(SHIM_DIR), *[f"-I{d}" for d in include_dirs],
            "-include", "mshim_harness.h", "-x", "c++", str(source)]
    return sandbox.run(argv, env=scrubbed_env(), writable=compiler.scratch_dirs(),
                       readable=(source, SHIM_DIR, *visible_roots(include_dirs)))


def strip_host_names(text: str) -> tuple[str, tuple[HostName, ...]]:
    """Remove `[[host_name("…")]]` after `template`, padding with spaces so columns are kept."""
    found: list[HostName] = []
    pieces: list[str] = []
    last = 0
    for match in _HOST_NAME.finditer(text):
        name = "".join(bytes(s, "utf-8").decode("unicode_escape") for s in _STRING.findall(match.group(2)))
        pieces.append(text[last:match.start()])
        replaced = "template" + match.group(1) + _pad(match.group(0)[len("template") + len(match.group(1)):])
        pieces.append(replaced)
        found.append(HostName(name=name, offset=match.start()))
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces), tuple(found)


def _pad(text: str) -> str:
    """Blank `text` but keep its newlines, so line numbers stay right."""
    return "".join(ch if ch == "\n" else " " for ch in text)


def files_read(text: str) -> tuple[Path, ...]:
    """Every real file named by a line marker in preprocessed text, in first-seen order."""
    seen: dict[str, None] = {}
    for match in _MARKER.finditer(text):
        name = match.group(2)
        if not name.startswith("<"):
            seen.setdefault(name, None)
    return tuple(Path(n) for n in seen)


def preprocess(source: Path, *, compiler: Compiler, include_dirs: tuple[Path, ...],
               metal_version: int, sandbox: Sandbox) -> tuple[Preprocessed | None, str]:
    """Preprocess and strip; returns (result, stderr) with result None when `-E` failed."""
    proc = run_preprocessor(source, compiler=compiler, include_dirs=include_dirs,
                            metal_version=metal_version, sandbox=sandbox)
    if proc.returncode != 0:
        return None, proc.stderr
    stripped, host_names = strip_host_names(proc.stdout)
    return Preprocessed(text=stripped, host_names=host_names, files=files_read(proc.stdout)), proc.stderr


def finalize(text: str) -> str:
    """Blank the address-space markers (`__mshC__` -> `const`, dropping a duplicate `const`)."""
    text = _CONST_DUP.sub(lambda m: "        " + m.group(1) if m.group(1) else "const" + m.group(2) + "        ",
                          text)
    text = text.replace("__mshC__", "const   ")
    for marker, blank in _BLANKS.items():
        text = text.replace(marker, blank)
    text = text.replace("__mshimTG__", "threadgroup")
    return text


def blank_threadgroup(text: str) -> str:
    """Blank every remaining `threadgroup` keyword token (after the threadgroup-locals rewrite)."""
    # `[[threadgroup(0)]]` (an attribute, always followed by a parenthesis) stays.
    return re.sub(r"\bthreadgroup\b(?!\s*\()", " " * len("threadgroup"), text)
