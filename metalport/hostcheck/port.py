"""The host check of a port: which `.mm` files it touches, the base tree first, then the edit.

Note [host baseline]: the base tree's version of each touched `.mm` is checked before the
edited one.  If the base does not type-check, nothing the port did is to blame for its errors:
the file gets one line naming what is missing (a declaration our SDK shim lacks, or a base tree
whose `.mm` does not match its own registry/headers, as the corpus's older BinaryOps.mm against
the 2.13 registry).  Its edited version is still judged, against the base: an error the base has
too (the same message at a line of the same text) is inherited and not the port's; any other
error is the port's and fails it.  Only a base whose errors all lie in the file itself is judged
so: an error in a header it includes (an undeclared type in a stub declaration) breaks lines the
port adds too, which would be blamed on the port; and a base that reached the compiler's error
limit hides what comes after.  Such a file's edit is not judged (a gap only).  A file whose base type-checks fails on any
error of its edit.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from metalport.failure import Failure
from metalport.hostcheck.check import HostCheck, check_file
from metalport.hostcheck.toolchain import SHIM_DIR
from metalport.sandbox.confine import Sandbox

MPS_DIR = "aten/src/ATen/native/mps"
REGISTRY = "aten/src/ATen/native/native_functions.yaml"
_KERNEL_NAME = re.compile(r"\b(\w+_mps)\b")
_SDK_NAME = re.compile(r"^(?:NS|MTL|MPS|dispatch_|os_|objc_|CF)\w*$")
# clang messages naming a missing declaration: (pattern, group holding the name)
_MISSING = (
    re.compile(r"no visible @interface for '([^']+)' declares the selector '([^']+)'"),
    re.compile(r"(?:instance|class) method '([^']+)' not found"),
    re.compile(r"no known (?:instance|class) method for selector '([^']+)'"),
    re.compile(r"property '([^']+)' not found on object of type '([^']+)'"),
    re.compile(r"'([^']+)' file not found"),
    re.compile(r"unknown type name '([^']+)'"),
    re.compile(r"use of undeclared identifier '([^']+)'"),
    re.compile(r"no type named '([^']+)'"),
    re.compile(r"no member named '([^']+)' in (?:namespace )?'([^']+)'"),
)


@dataclass(frozen=True)
class PortHostCheck:
    """The host check of one port: per file results, base gaps (one line each) and failures."""

    checked: tuple[HostCheck, ...] = ()
    gaps: tuple[str, ...] = ()
    failures: tuple[Failure, ...] = ()
    seconds: float = 0.0
    files: tuple[str, ...] = field(default=())

    def verdict(self) -> dict:
        """The stage verdict for the evidence: ok, counts, the first failure or the gap lines."""
        verdict: dict = {"ok": not self.failures, "failures": len(self.failures), "executor": "hostcheck",
                         "first": str(self.failures[0]) if self.failures else None,
                         "seconds": round(self.seconds, 3), "files": list(self.files),
                         "checked": [c.to_dict() for c in self.checked], "gaps": list(self.gaps)}
        if not self.files:
            verdict["report"] = {"status": "no .mm touched"}
        elif self.gaps and not self.failures:
            verdict["report"] = {"status": f"{len(self.gaps)} file(s) with errors in the base: " + "; ".join(self.gaps)}
        return verdict


def touched_files(base: Path, work: Path) -> list[str]:
    """The `.mm` files under `aten/src/ATen/native/mps` the port changed or added, plus those
    that define a kernel name the port's registry edit dropped (a leftover `x_out_mps`)."""
    out: set[str] = set()
    for path in (work / MPS_DIR).rglob("*.mm"):
        rel = str(path.relative_to(work))
        before = base / rel
        if not before.is_file() or before.read_bytes() != path.read_bytes():
            out.add(rel)
    dropped = _dropped_kernels(base / REGISTRY, work / REGISTRY)
    if dropped:
        for path in (work / MPS_DIR).rglob("*.mm"):
            text = path.read_text(encoding="utf-8", errors="replace")
            if any(name in text for name in dropped):
                out.add(str(path.relative_to(work)))
    return sorted(out)


def _dropped_kernels(before: Path, after: Path) -> set[str]:
    """`*_mps` kernel names the registry named before the edit and does not name after it."""
    try:
        old, new = before.read_text(), after.read_text()
    except OSError:
        return set()
    if old == new:
        return set()
    return set(_KERNEL_NAME.findall(old)) - set(_KERNEL_NAME.findall(new))


ERROR_LIMIT = 50  # -ferror-limit in toolchain.MPS_FLAGS


def _new_errors(before: HostCheck, after: HostCheck, base: Path, work: Path) -> list[Failure]:
    """The failures of `after` whose error `before` (the base) does not have: same message at a line
    of the same text, counted (a line the port moved keeps its errors; one it added or changed does not)."""
    from collections import Counter

    inherited = Counter(_signature(d, base) for d in before.errors)
    out: list[Failure] = []
    for diagnostic, failure in zip(after.errors, after.failures()):
        key = _signature(diagnostic, work)
        if inherited[key] > 0:
            inherited[key] -= 1
        else:
            out.append(failure)
    return out


def _signature(diagnostic: object, root: Path) -> tuple[str, str, str]:
    """(file, message, the text of its line) of an error diagnostic."""
    file, line = str(getattr(diagnostic, "file", "")), int(getattr(diagnostic, "line", 0) or 0)
    path = Path(file) if Path(file).is_absolute() else root / file
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    except OSError:
        text = ""
    return file, str(getattr(diagnostic, "message", "")), text


def gap_line(result: HostCheck) -> str:
    """One line for a base file that does not type-check: the missing declaration and where."""
    first = result.errors[0] if result.errors else None
    if first is None:
        return f"{result.file}: does not type-check (no diagnostic)"
    where = f"{first.file}:{first.line}"
    names = _names(first.message)
    in_shim = str(SHIM_DIR) in first.file or any(_SDK_NAME.match(n.split(":")[0].lstrip("-+")) for n in names)
    selector = next((n for n in names if _is_selector(n)), None)
    if in_shim or selector:
        name = selector or (names[0] if names else first.message)
        return f"shim gap: {result.file}: the SDK shim does not declare {name} ({where}: {first.message})"
    name = names[0] if names else "a declaration"
    return (f"base mismatch: {result.file} does not type-check against its own registry and headers: "
            f"{name} is not declared ({where}: {first.message})")


def _is_selector(name: str) -> bool:
    """`-foo:bar:` or `foo:bar:`, not a C++ qualified name."""
    return "::" not in name and ":" in name and " " not in name


def _names(message: str) -> list[str]:
    for pattern in _MISSING:
        match = pattern.search(message)
        if match and pattern.pattern.startswith("no member"):
            return [f"{match.group(1)} (a member of {match.group(2)})"]
        if match:
            return [g for g in reversed(match.groups()) if g]
    return []


def check_port(base: Path, work: Path, *, cache_dir: Path | None = None, sandbox: Sandbox | None = None,
               files: list[str] | None = None) -> PortHostCheck:
    """Check every touched `.mm`: the base version first (Note [host baseline]), then the edit."""
    start = time.monotonic()
    files = touched_files(base, work) if files is None else files
    checked: list[HostCheck] = []
    gaps: list[str] = []
    failures: list[Failure] = []
    for rel in files:
        before = None
        if (base / rel).is_file():
            before = check_file(base / rel, base, display=rel, cache_dir=cache_dir, sandbox=sandbox)
            if not before.ok:
                if len(before.errors) >= ERROR_LIMIT:
                    gaps.append(f"{gap_line(before)}; its edit is not judged (the base reached the error limit)")
                    continue  # errors past the limit are not shown: the edit cannot be told apart
                if any(d.file != rel for d in before.errors):
                    gaps.append(f"{gap_line(before)}; its edit is not judged (the base fails in a header it "
                                "includes, which can break any line of the edit)")
                    continue
                gaps.append(f"{gap_line(before)}; its edit is judged against the base's {len(before.errors)} "
                            "error(s)")
        if not (work / rel).is_file():
            continue
        after = check_file(work / rel, work, display=rel, cache_dir=cache_dir, sandbox=sandbox)
        checked.append(after)
        failures.extend(after.failures() if before is None or before.ok else _new_errors(before, after, base, work))
    return PortHostCheck(tuple(checked), tuple(gaps), tuple(failures), time.monotonic() - start, tuple(files))
