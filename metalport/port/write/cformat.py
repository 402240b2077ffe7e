"""Format new C++ / Metal / Objective-C++ snippets with the tree's `.clang-format`.

Only code metalport writes is formatted, never the file around it, so a diff shows just the port.
Without a `clang-format` executable, or without a `.clang-format` in the tree, text is returned
as written (our templates are already in PyTorch's shape).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from metalport.sandbox.runner import scrubbed_env


def clang_format_executable() -> str | None:
    """The PyPI wheel's clang-format, else one on PATH, else None."""
    try:
        import clang_format

        exe = Path(clang_format.get_executable("clang-format"))
        if exe.is_file():
            return str(exe)
    except ImportError:
        pass
    return shutil.which("clang-format")


def _style_file(root: Path, rel: str) -> Path | None:
    folder = (root / rel).parent
    for candidate in (folder, *folder.parents):
        if (candidate / ".clang-format").is_file():
            return candidate / ".clang-format"
        if candidate == root:
            break
    return None


def _clang_format(source: str, root: Path, rel: str, options: list[str], *, timeout_s: int) -> str | None:
    """clang-format's output for `source` as if at `root/rel` with the extra `options`; None without an
    executable or a style, or when clang-format fails or prints nothing."""
    exe = clang_format_executable()
    if exe is None or _style_file(root, rel) is None:
        return None
    try:
        proc = subprocess.run([exe, f"--assume-filename={root / rel}", "--style=file", "--fallback-style=none",
                               *options], input=source, capture_output=True, text=True, timeout=timeout_s,
                              env=scrubbed_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 and proc.stdout.strip() else None


def format_snippet(source: str, root: Path, rel: str) -> str:
    """`source` formatted as if it lived at `root/rel` (style from the nearest `.clang-format`
    between that file and `root`); unchanged when no style or no executable is found, or when
    clang-format fails (the build step reports real syntax errors)."""
    out = _clang_format(source, root, rel, [], timeout_s=30)
    if out is None:
        return source
    return out if source.endswith("\n") else out.rstrip("\n")


def format_inserted(before: str, after: str, root: Path, rel: str) -> str:
    """`after` with only the lines it adds to `before` formatted in place (clang-format `--lines`),
    so code inserted inside a class or namespace is formatted in its context and the rest of the
    file is left as it is; `after` unchanged without a style or an executable."""
    import difflib

    if before == after:
        return after
    ranges = []
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("insert", "replace") and j2 > j1:
            ranges.append(f"--lines={j1 + 1}:{j2}")
    return _clang_format(after, root, rel, ranges, timeout_s=60) or after
