"""The bounded, read-mostly tools the model may call, over one worktree.

No tool runs a command, writes outside the allow-list, commits, pushes or approves. Every result
is a dict `{"ok": bool, ...}`, capped at `max_result_chars` with a truncation note. Writes go
through the sandbox's `PathGuard` (allow-list, atomic write); reads and edits are also refused for
`..`, absolute paths, any symlink and `.git` (Note [read guard]).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from metalport.agent.transcript import Redactor
from metalport.errors import SandboxError
from metalport.sandbox.guard import PathGuard

ToolFn = Callable[[], Any]  # check: dict or list[Failure]; conformance: dict or ConformanceReport
LookupFn = Callable[[str], dict]
KindLookupFn = Callable[[str, str | None], dict]  # show_kernels(kind, op)
RespecFn = Callable[[str, str], dict]  # respecify(spec_yaml, kernel_source): {"ok", "error" | "allowed_paths"}

_SPECS: dict[str, tuple[str, dict]] = {
    "read_file": ("Read lines start..end (1-based, inclusive) of a file in the checkout.",
                  {"path": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}}),
    "grep": ("Search files matching a glob for a regular expression; returns path:line: text.",
             {"pattern": {"type": "string"}, "glob": {"type": "string"}}),
    "show_op": ("The op's registry rows, backlog entry and current implementation.",
                {"op": {"type": "string"}}),
    "show_examples": ("Already-native functors and stubs of a family in this tree.",
                      {"family": {"type": "string"}}),
    "show_kernels": ("The tree's own kernels of a port kind: the spec recipes of that kind (name one with `op` "
                     "for its launch spec YAML and kernel source) and the kernels/*.metal files.",
                     {"kind": {"type": "string"}, "op": {"type": "string"}}),
    "propose_edit": ("Replace the exact text `search` by `replace` in an allow-listed file.",
                     {"path": {"type": "string"}, "search": {"type": "string"},
                      "replace": {"type": "string"}}),
    "respecify": ("Replace the launch spec and kernel you wrote for this port: the spec as YAML and the whole kernel "
                  "source, checked as write_kernel checks them. The port is re-applied from them on a clean "
                  "worktree (registry rows, host and kernel files); run check() before finish().",
                  {"spec_yaml": {"type": "string"}, "kernel_source": {"type": "string"}}),
    "check": ("Run the migration contract checks and the shader compile.", {}),
    "conformance": ("Run emulated conformance; returns counts and worst errors.", {}),
    "finish": ("End the attempt with a summary; refused while checks fail.",
               {"summary": {"type": "string"}}),
}
_REQUIRED = {"read_file": ["path"], "grep": ["pattern"], "show_op": ["op"], "show_examples": ["family"], "show_kernels": ["kind"],
             "propose_edit": ["path", "search", "replace"], "finish": ["summary"],
             "respecify": ["spec_yaml", "kernel_source"]}
_TYPES = {"string": str, "integer": int}
_OPTIONAL = frozenset({"show_kernels", "respecify"})  # offered only when the run gives its function


class ToolBox:
    """Dispatches the model's tool calls; tracks whether the last check passed for `finish`."""

    def __init__(self, root: Path, allowed: Iterable[str], *, check: ToolFn, conformance: ToolFn,
                 show_op: LookupFn, show_examples: LookupFn, show_kernels: KindLookupFn | None = None,
                 respecify: RespecFn | None = None, redactor: Redactor | None = None,
                 max_result_chars: int = 8000, max_read_lines: int = 400,
                 max_grep_files: int = 5000) -> None:
        self.root = Path(root).resolve()
        self.allowed = frozenset(allowed)
        self.redactor = redactor or Redactor()
        self._guard = PathGuard(self.root, set(self.allowed), secret_env=self.redactor.secret_env)
        self._fns = {"check": check, "conformance": conformance, "show_op": show_op,
                     "show_examples": show_examples, "show_kernels": show_kernels, "respecify": respecify}
        self.max_result_chars = max_result_chars
        self.max_read_lines = max_read_lines
        self.max_grep_files = max_grep_files
        self.checks_ok = False
        self.last_check: dict | None = None  # None: no check() since the last edit
        self.finished: str | None = None

    def specs(self, offered: frozenset[str] | None = None) -> list[dict]:
        """The OpenAI `tools` list (only the `offered` tools when given)."""
        return [{"type": "function", "function": {
            "name": name, "description": doc,
            "parameters": {"type": "object", "properties": props, "required": _REQUIRED.get(name, []),
                           "additionalProperties": False}}}
                for name, (doc, props) in _SPECS.items() if name in self.names() and (offered is None or name in offered)]

    def names(self) -> list[str]:
        """Every tool's name (an optional tool only when this run has its function)."""
        return sorted(n for n in _SPECS if n not in _OPTIONAL or self._fns.get(n) is not None)

    def call(self, name: str, arguments: str, *, offered: frozenset[str] | None = None) -> dict:
        """Run one tool call from its name and JSON-string arguments; never raises on bad input.

        `offered` restricts the tools of this step (e.g. read-only while planning).
        """
        names = [n for n in self.names() if offered is None or n in offered]
        if name not in names:
            near = difflib.get_close_matches(name, names, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            what = "not offered in this step" if name in _SPECS else "unknown tool"
            return self._cap({"ok": False, "error": f"{what} {name!r}{hint}", "tools": names})
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError as err:
            return {"ok": False, "error": f"arguments are not valid JSON: {err.msg} at char {err.pos}"}
        problem = _validate(name, args)
        if problem:
            return {"ok": False, "error": problem}
        return self._cap(getattr(self, f"_{name}")(**args))

    def read_text(self, path: str) -> str:
        """The text of a checkout file under the read guard, secrets redacted ("" when refused or missing)."""
        target, error = self._resolve(path)
        if error or target is None or not target.is_file():
            return ""
        return self.redactor.text(target.read_text(encoding="utf-8", errors="replace"))

    def _cap(self, result: dict) -> dict:
        text = json.dumps(self.redactor.any(result))
        if len(text) <= self.max_result_chars:
            return json.loads(text)
        return {"ok": result.get("ok", False), "truncated": True,
                "note": f"result cut to {self.max_result_chars} of {len(text)} chars; narrow the request",
                "partial": text[: self.max_result_chars]}

    def _resolve(self, path: str) -> tuple[Path | None, str | None]:
        # Note [read guard]: reads are not allow-listed, so refuse absolute paths, `..`, symlinks anywhere and .git.
        rel = Path(path)
        if rel.is_absolute() or ".." in rel.parts:
            return None, f"{path}: paths must be relative to the checkout, without '..'"
        if rel.parts[:1] == (".git",):
            return None, f"{path}: the git directory is not readable"
        current = self.root
        for part in rel.parts:
            current = current / part
            if current.is_symlink():
                return None, f"{path}: symlinks are refused"
        if not current.exists():
            return None, f"{path}: no such file"
        return current, None

    def _read_file(self, path: str, start: int = 1, end: int | None = None) -> dict:
        target, error = self._resolve(path)
        if error or not target.is_file():
            return {"ok": False, "error": error or f"{path}: not a file"}
        lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
        start = max(1, start)
        end = min(len(lines), end or len(lines), start + self.max_read_lines - 1)
        body = "\n".join(f"{n}: {lines[n - 1]}" for n in range(start, end + 1))
        return {"ok": True, "path": path, "start": start, "end": end, "total_lines": len(lines), "text": body}

    def _grep(self, pattern: str, glob: str = "**/*") -> dict:
        try:
            regex = re.compile(pattern)
        except re.error as err:
            return {"ok": False, "error": f"bad regular expression: {err}"}
        hits: list[str] = []
        scanned = 0
        for file in sorted(self.root.glob(glob)):
            rel = file.relative_to(self.root)
            if rel.parts[:1] == (".git",) or file.is_symlink() or not file.is_file():
                continue
            scanned += 1
            if scanned > self.max_grep_files:
                return {"ok": True, "matches": hits,
                        "note": f"stopped after {self.max_grep_files} files; use a narrower glob"}
            for n, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if regex.search(line):
                    hits.append(f"{rel}:{n}: {line.strip()[:200]}")
                    if len(hits) >= 100:
                        return {"ok": True, "matches": hits, "note": "first 100 matches only"}
        return {"ok": True, "matches": hits}

    def _show_op(self, op: str) -> dict:
        return self._fns["show_op"](op)

    def _show_examples(self, family: str) -> dict:
        return self._fns["show_examples"](family)

    def _show_kernels(self, kind: str, op: str | None = None) -> dict:
        return self._fns["show_kernels"](kind, op)

    def _propose_edit(self, path: str, search: str, replace: str) -> dict:
        if path not in self.allowed:
            return {"ok": False, "error": f"{path}: not on the plan's allow-list",
                    "allowed": sorted(self.allowed)}
        target, error = self._resolve(path)
        if error:
            return {"ok": False, "error": error}
        text = target.read_text(encoding="utf-8")
        count = text.count(search) if search else 0
        if count != 1:
            reason = "search text is empty" if not search else (
                f"search text occurs {count} times; add context to make it unique" if count else
                "search text not found")
            result: dict[str, Any] = {"ok": False, "error": f"{path}: {reason}"}
            if not count and search:
                result["did_you_mean"] = _nearest(text, search)
            return result
        try:
            self._guard.write_text(path, text.replace(search, replace, 1))
        except SandboxError as err:
            return {"ok": False, "error": str(err)}
        self.checks_ok, self.last_check = False, None
        return {"ok": True, "path": path, "note": "edit applied; run check() before finish()"}

    def _respecify(self, spec_yaml: str, kernel_source: str) -> dict:
        result = self._fns["respecify"](spec_yaml, kernel_source)
        if not result.get("ok"):
            return {"ok": False, "error": result.get("error", "refused")}
        # The new spec may name other kernel/host files: the allow-list follows the new plan.
        self.allowed = frozenset(result["allowed_paths"])
        self._guard = PathGuard(self.root, set(self.allowed), secret_env=self.redactor.secret_env)
        self.checks_ok, self.last_check = False, None
        return {"ok": True, "note": "port re-applied from the new spec and kernel; run check() before finish()"}

    def _check(self) -> dict:
        result = _as_check_result(self._fns["check"]())
        self.checks_ok, self.last_check = bool(result.get("ok")), result
        return result

    def _conformance(self) -> dict:
        return _as_conformance_result(self._fns["conformance"]())

    def _finish(self, summary: str) -> dict:
        if not self.checks_ok:
            if self.last_check is None:
                reason = "check() has not run since the last edit; run it first"
            else:
                reason = f"the last check() failed ({_first_problem(self.last_check)}); fix it and run check() again"
            return {"ok": False, "error": f"finish refused: {reason}"}
        self.finished = summary
        return {"ok": True, "note": "attempt finished"}


def _first_problem(result: dict) -> str:
    """The first diagnostic of a failed check result, as `file:line: message`."""
    items = result.get("diagnostics") or result.get("failures") or []
    if not items or not isinstance(items[0], dict):
        return str(result.get("error") or "no diagnostics given")[:300]
    first = items[0]
    where = ":".join(str(first[k]) for k in ("file", "line") if first.get(k) is not None)
    return f"{where}: {first.get('message', '')}"[:300] if where else str(first.get("message", ""))[:300]


def _as_check_result(result: Any) -> dict:
    """A check result as data: a dict as given, or a list of `Failure`s as structured diagnostics."""
    if isinstance(result, dict):
        return result
    failures = [f.to_dict() for f in result]
    return {"ok": not failures, "diagnostics": failures}


def _as_conformance_result(result: Any) -> dict:
    """A conformance result as data; a report object gives only its `summary_for_model()` (counts and
    worst errors, never held-out inputs)."""
    if isinstance(result, dict):
        return result
    return {"ok": bool(result.ok()), "status": str(result.status), "summary": result.summary_for_model()}


def _validate(name: str, args: Any) -> str | None:
    if not isinstance(args, dict):
        return "arguments must be a JSON object"
    props = _SPECS[name][1]
    unknown = sorted(set(args) - set(props))
    if unknown:
        return f"unknown argument(s) {unknown} for {name}; expected {sorted(props)}"
    missing = [k for k in _REQUIRED.get(name, []) if k not in args]
    if missing:
        return f"missing argument(s) {missing} for {name}"
    for key, value in args.items():
        want = _TYPES[props[key]["type"]]
        if not isinstance(value, want) or isinstance(value, bool):
            return f"argument {key!r} must be a {props[key]['type']}"
    return None


def _nearest(text: str, search: str) -> str:
    """The window of `text` with as many lines as `search` that is most similar to it."""
    lines, size = text.splitlines(), max(1, len(search.splitlines()))
    best, best_ratio = "", 0.0
    for i in range(max(1, len(lines) - size + 1)):
        window = "\n".join(lines[i:i + size])
        ratio = difflib.SequenceMatcher(None, window, search).quick_ratio()
        if ratio > best_ratio:
            ratio = difflib.SequenceMatcher(None, window, search).ratio()
            if ratio > best_ratio:
                best, best_ratio = window, ratio
    return best
