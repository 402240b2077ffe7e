"""`check_contract`: the machine-checked contract of a migration, base tree vs worktree.

Each check reports `Failure("contract", file, line, None, "[check] message")`; `[]` means the
port keeps the contract. What depends on the launch kind (the rows, the stubs, the host function
and kernel names) is checked by `contract_launch`; every port, whatever its launch: the legacy
code and its include are gone; exactly the planned xfail entries and MPS decorators left the test
lists (or were narrowed); no path off the allow-list changed; and added lines carry no CPU
fallback, no MPSGraph, no tolerance or test edits.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from metalport.port import (COMMON_MPS, find_decorators, has_legacy, module_failures, MODULES_FILE,
                            narrow_decorators, OPINFO_FILES, PortPlan, scratch_git as _git, XFAIL_LIST_NAME)
from metalport.checkout.layout import OPERATIONS_DIR
from metalport.checkout.sources import named_assignments
from metalport.errors import MetalportError
from metalport.checks.contract.launch import contract_failure as _fail, launch_checks
from metalport.failure import Failure
from metalport import python_ast

_CHEATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("CPU fallback", re.compile(r"\.cpu\(\)|\bto\(\s*[\"']cpu[\"']|\bkCPU\b|DeviceType::CPU|[\"']cpu[\"']"
                                r"|\bkCUDA\b|\w*[Ff]allback\w*\s*\(|PYTORCH_ENABLE_MPS_FALLBACK")),
    ("MPSGraph", re.compile(r"\b(MPSGraph\w*|mpsGraph\w*|CachedGraph|runMPSGraph|LookUpOrCreateCachedGraph)\b")),
    ("tolerance edit", re.compile(r"\b(toleranceOverride|precisionOverride|atol|rtol)\b")),
)


@dataclass(frozen=True)
class _Changes:
    """What the worktree changed against the base commit: paths and added lines per path."""

    base_commit: str | None
    paths: tuple[str, ...]
    added: dict[str, list[tuple[int, str]]]


def _base_commit(base_root: Path, worktree_root: Path) -> str:
    """The commit the worktree started from: merge-base of its HEAD and the base's HEAD."""
    head = _git(worktree_root, "rev-parse", "HEAD").strip()
    base = _git(base_root, "rev-parse", "HEAD").strip()
    return _git(worktree_root, "merge-base", head, base).strip() or base


def _added_lines(diff: str) -> dict[str, list[tuple[int, str]]]:
    added: dict[str, list[tuple[int, str]]] = {}
    path, line = None, 0
    for raw in diff.splitlines():
        if raw.startswith("+++ "):
            path = raw[6:] if raw.startswith("+++ b/") else None
        elif raw.startswith("@@"):
            m = re.match(r"@@ -\S+ \+(\d+)", raw)
            line = int(m.group(1)) if m else 0
        elif path and raw.startswith("+"):
            added.setdefault(path, []).append((line, raw[1:]))
            line += 1
        elif path and not raw.startswith("-"):
            line += 1
    return added


def _changes(base_root: Path, worktree_root: Path) -> _Changes:
    commit = _base_commit(base_root, worktree_root)
    paths = set(_git(worktree_root, "diff", "--name-only", "--no-renames", commit).split())
    untracked = _git(worktree_root, "ls-files", "--others", "--exclude-standard").split()
    added = _added_lines(_git(worktree_root, "diff", "-U0", "--no-renames", "--no-color", commit))
    for rel in untracked:
        text = (worktree_root / rel).read_text(encoding="utf-8", errors="replace")
        added[rel] = list(enumerate(text.splitlines(), start=1))
    return _Changes(commit, tuple(sorted(paths | set(untracked))), added)


def _base_text(base_root: Path, changes: _Changes, rel: str) -> str | None:
    try:
        return _git(base_root, "show", f"{changes.base_commit}:{rel}")
    except MetalportError:
        return None


def _legacy_checks(worktree_root: Path, plan: PortPlan) -> Iterator[Failure]:
    deleted = {r.before.split(":", 1)[1].strip() for r in plan.rows if r.deletes and ":" in r.before}
    gone = set(plan.legacy_all) | {(path.relative_to(worktree_root).as_posix(), name) for name in deleted
                                   for path in (worktree_root / OPERATIONS_DIR).glob("*.mm")}
    for rel, name in sorted(gone):
        path = worktree_root / rel
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if has_legacy(text, name):
            line = next((i for i, t in enumerate(text.splitlines(), 1) if re.search(rf"\b{name}\b", t)), None)
            yield _fail("legacy", f"legacy implementation {name} is still defined", rel, line)
    if plan.legacy_include:
        for rel in sorted({f for f, _ in plan.legacy_all}):
            path = worktree_root / rel
            lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
            for i, t in enumerate(lines, 1):
                if t.strip() == plan.legacy_include:
                    yield _fail("legacy", f"{plan.legacy_include} is still included", rel, i)


def _lists(text: str) -> tuple[dict[tuple[str, int], dict[str, str]], str]:
    """(each xfail/skip list (name, occurrence) -> {key: source of its value} ("" for set items), the
    module's AST dump with those lists emptied, to compare everything else)."""
    tree = python_ast.parse(text)
    out: dict[tuple[str, int], dict[str, str]] = {}
    seen: dict[str, int] = {}
    for name, value in named_assignments(tree):
        if not XFAIL_LIST_NAME.match(name):
            continue
        n = seen[name] = seen.get(name, -1) + 1
        if isinstance(value, ast.Dict):
            items = {ast.unparse(k): ast.unparse(v) for k, v in zip(value.keys, value.values) if k is not None}
        elif isinstance(value, (ast.List, ast.Set, ast.Tuple)):
            items = {ast.unparse(e): "" for e in value.elts}
        else:
            items = {"<value>": ast.unparse(value)}
        out[(name, n)] = items
    for node in ast.walk(tree):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and XFAIL_LIST_NAME.match(target.id):
            node.value = ast.Constant(None)  # type: ignore[union-attr]
    return out, ast.dump(tree)


def _xfail_checks(base_root: Path, worktree_root: Path, changes: _Changes, plan: PortPlan) -> Iterator[Failure]:
    base = _base_text(base_root, changes, COMMON_MPS)
    path = worktree_root / COMMON_MPS
    if base is None or not path.is_file():
        return
    try:
        (before, rest_before), (after, rest_after) = _lists(base), _lists(path.read_text(encoding="utf-8"))
    except SyntaxError as err:
        yield _fail("xfail", f"common_mps.py does not parse: {err.msg}", COMMON_MPS, err.lineno)
        return
    planned = {(lst, repr(key)) for lst, key, _ in plan.xfail_entries}
    added = {(lst, repr(key)) for lst, key, _, _ in plan.xfail_added}
    narrowed = {(lst, repr(key)): set(kept) for lst, key, _, kept in plan.xfail_narrowed}
    if rest_before != rest_after:
        yield _fail("xfail", "common_mps.py changed outside its xfail/skip lists", COMMON_MPS)
    for (name, n), items in sorted(before.items()):
        now = after.get((name, n), {})
        for key, value in items.items():
            if key not in now and (name, key) not in planned:
                yield _fail("xfail", f"{name} lost entry {key}, which the plan does not remove", COMMON_MPS)
            elif key in now and (name, key) in planned:
                yield _fail("xfail", f"{name} still has entry {key}; the port makes it pass", COMMON_MPS)
            elif (name, key) in narrowed:
                left = set(re.findall(r"torch\.(\w+)", now.get(key, "")))
                if key not in now or left != narrowed[(name, key)]:
                    yield _fail("xfail", f"{name}[{key}] should list exactly the dtypes the port leaves "
                                f"failing: {', '.join(sorted(narrowed[(name, key)]))}", COMMON_MPS)
            elif key in now and now[key] != value:
                yield _fail("xfail", f"{name}[{key}] changed", COMMON_MPS)
        for key in sorted(set(now) - set(items)):
            if (name, key) not in added:
                yield _fail("xfail", f"{name} gained entry {key}", COMMON_MPS)
        for lst, key in sorted(added):
            if lst == name and key not in now:
                yield _fail("xfail", f"{name} lacks entry {key}, which the plan adds (its backward stays off MPS)",
                            COMMON_MPS)
    for (name, n) in sorted(set(after) - set(before)):
        yield _fail("xfail", f"new list {name} in common_mps.py", COMMON_MPS)


def _path_checks(changes: _Changes, plan: PortPlan) -> Iterator[Failure]:
    allowed = set(plan.allowed_paths)
    for rel in changes.paths:
        if rel.startswith("test/") or "/test/" in rel:
            yield _fail("anti-cheat", f"test file {rel} changed: a port does not edit tests", rel)
        elif rel not in allowed:
            yield _fail("allow-list", f"{rel} changed but is not on the plan's allow-list", rel)


def _cheat_checks(changes: _Changes) -> Iterator[Failure]:
    for rel, lines in sorted(changes.added.items()):
        if rel == MODULES_FILE:  # every added element there is checked by `_module_tolerance_checks`
            continue
        for line, text in lines:
            code = text.split("//", 1)[0] if rel.endswith((".mm", ".metal", ".h", ".cpp")) else text
            for what, pattern in _CHEATS:
                if pattern.search(code):
                    yield _fail("anti-cheat", f"{what} in new code: {text.strip()[:120]}", rel, line)


def _decorator_checks(base_root: Path, worktree_root: Path, changes: _Changes, plan: PortPlan) -> Iterator[Failure]:
    """Exactly the planned MPS decorators left the OpInfo files (compared as source, by `ast`), and
    nothing was added to those files."""
    for rel in OPINFO_FILES:
        removals = [(n, a, b) for f, n, a, b in plan.decorator_entries if f == rel]
        narrowing = [(n, a, b, kept) for f, n, a, b, kept in plan.decorator_narrowed if f == rel]
        if rel not in changes.paths and not removals and not narrowing:
            continue
        base = _base_text(base_root, changes, rel) or ""
        after = (worktree_root / rel).read_text(encoding="utf-8") if (worktree_root / rel).is_file() else ""
        lines = base.split("\n")

        def source(opinfo: str, first: int, last: int, src: list[str]) -> tuple[str, str]:
            return opinfo, "\n".join(src[first - 1:last]).strip()

        def found(text: str) -> Counter[tuple[str, str]]:
            src = text.split("\n")
            return Counter(source(d.opinfo, d.first_line, d.last_line, src)
                           for d in find_decorators(text, None, path=rel, strict=False))
        before, counted = set(found(base)), found(after)
        now = set(counted)
        planned = {source(n, a, b, lines) for n, a, b in removals}
        # Narrowed decorators: their base text, and the text `narrow_decorators` makes of it.
        spans = {(a, b): kept for _, a, b, kept in narrowing}
        narrowed_base = {source(n, a, b, lines) for n, a, b, _ in narrowing}
        wanted_lines = narrow_decorators(base, spans, path=rel).split("\n") if spans else lines
        wanted = Counter(source(n, a, b, wanted_lines) for n, a, b, _ in narrowing)
        allowed_added = {line.strip() for _, text in wanted for line in text.split("\n")}
        for line, text in changes.added.get(rel, []):
            if text.strip() not in allowed_added:
                yield _fail("decorators", f"line added to an OpInfo file: {text.strip()[:100]}", rel, line)
        for opinfo, text in sorted((before - now) - planned - narrowed_base):
            yield _fail("decorators", f"unplanned removal of {opinfo}'s decorator {text[:100]}", rel)
        for opinfo, text in sorted(planned & now):
            yield _fail("decorators", f"{opinfo}'s MPS decorator is still there: {text[:100]}", rel)
        for opinfo, text in sorted(wanted - counted):  # counted: two OpInfos may share a name and a decorator
            kept = next(k for n, a, b, k in narrowing if source(n, a, b, wanted_lines) == (opinfo, text))
            yield _fail("decorators", f"{opinfo}'s MPS decorator should list exactly the dtypes the port leaves "
                        f"failing ({', '.join(kept)}): {text[:100]}", rel)
    yield from _narrowing_consistency(plan)


def _module_lists(text: str) -> tuple[dict[str, list[ast.expr]], str]:
    """(ModuleInfo module -> its decorators/skips elements, the module's AST dump with those lists
    emptied, to compare everything else)."""
    tree = python_ast.parse(text)
    lists: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "ModuleInfo" and node.args:
            for k in node.keywords:
                if k.arg in ("decorators", "skips") and isinstance(k.value, (ast.List, ast.Tuple)):
                    lists.setdefault(ast.unparse(node.args[0]), []).extend(k.value.elts)
                    k.value = ast.Constant(None)
    return lists, ast.dump(tree)


def _tolerance_for(node: ast.expr) -> tuple[str | None, set[str], set[str] | None] | None:
    """(test, dtypes of the toleranceOverride's dict, the DecorateInfo's dtypes or None) of an MPS
    `DecorateInfo(toleranceOverride({...}), cls, test, device_type='mps', ...)`, else None."""
    if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "DecorateInfo" and node.args
            and isinstance(node.args[0], ast.Call) and ast.unparse(node.args[0].func) == "toleranceOverride"
            and node.args[0].args and isinstance(node.args[0].args[0], ast.Dict)):
        return None
    device = next((k.value for k in node.keywords if k.arg == "device_type"), None)
    if not (isinstance(device, ast.Constant) and device.value == "mps"):
        return None
    test = node.args[2].value if len(node.args) > 2 and isinstance(node.args[2], ast.Constant) else None
    keys = {ast.unparse(k).removeprefix("torch.") for k in node.args[0].args[0].keys if k is not None}
    given = next((k.value for k in node.keywords if k.arg == "dtypes"), None)
    dtypes = {ast.unparse(e).removeprefix("torch.") for e in given.elts} \
        if isinstance(given, (ast.List, ast.Tuple, ast.Set)) else None
    return test, keys, dtypes


def _module_tolerance_checks(base_root: Path, worktree_root: Path, changes: _Changes,
                             plan: PortPlan) -> Iterator[Failure]:
    """Note [module tolerances] (port/write/decorators.py): common_modules.py changes only by replacing a
    planned MPS failure decorator of a ModuleInfo with a toleranceOverride for the same test, on MPS,
    over dtypes within the replaced decorator's."""
    if MODULES_FILE not in changes.paths:
        return
    base = _base_text(base_root, changes, MODULES_FILE) or ""
    path = worktree_root / MODULES_FILE
    try:
        (before, rest_before), (after, rest_after) = _module_lists(base), _module_lists(
            path.read_text(encoding="utf-8") if path.is_file() else "")
    except SyntaxError as err:
        yield _fail("decorators", f"{MODULES_FILE} does not parse: {err.msg}", MODULES_FILE, err.lineno)
        return
    if rest_before != rest_after:
        yield _fail("decorators", f"{MODULES_FILE} changed outside its ModuleInfos' decorator lists", MODULES_FILE)
    planned = {(m, t, frozenset(d)) for _, m, t, d in plan.module_tolerances}
    for module in sorted(set(before) | set(after)):
        old = {ast.unparse(e) for e in before.get(module, [])}
        new = {ast.unparse(e): e for e in after.get(module, [])}
        replaced = {}
        for text in sorted(old - new.keys()):
            found = next(iter(module_failures(f"ModuleInfo({module}, skips=({text},))")), None)
            key = (module, found.test, frozenset(found.dtypes or ())) if found else None
            if key not in planned:
                yield _fail("decorators", f"{module}: a decorator the plan does not replace was removed: {text[:100]}",
                            MODULES_FILE)
            else:
                replaced[found.test] = set(found.dtypes or ())
        for text in sorted(new.keys() - old):
            tol = _tolerance_for(new[text])
            if tol is None or tol[0] not in replaced or not tol[1] or not tol[1] <= replaced[tol[0]] \
                    or (tol[2] is not None and not tol[2] <= replaced[tol[0]]):
                yield _fail("decorators", f"{module}: added {text[:100]}; only a toleranceOverride on MPS for the "
                            f"test and dtypes of an MPS failure decorator the port replaces is accepted",
                            MODULES_FILE)


def _narrowing_consistency(plan: PortPlan) -> Iterator[Failure]:
    """A decorator meaning every dtype and an xfail entry meaning every dtype are narrowed to the
    same dtypes (both are what the port leaves out)."""
    xfail = {frozenset(kept) for _, _, _, kept in plan.xfail_narrowed}
    for rel, opinfo, _, _, kept in plan.decorator_narrowed:
        if xfail and frozenset(kept) not in xfail and not any(frozenset(kept) < x for x in xfail):
            yield _fail("decorators", f"{opinfo}'s MPS decorator is narrowed to {', '.join(kept)} but the xfail "
                        f"entries to {'; '.join(', '.join(sorted(x)) for x in xfail)}", rel)


def check_contract(base_root: Path, worktree_root: Path, plan: PortPlan) -> list[Failure]:
    """Every contract failure of the worktree's port of `plan.op`; `[]` when the contract holds."""
    base_root, worktree_root = Path(base_root).resolve(), Path(worktree_root).resolve()
    changes = _changes(base_root, worktree_root)
    return [*launch_checks(worktree_root, plan, changes.added), *_legacy_checks(worktree_root, plan),
            *_xfail_checks(base_root, worktree_root, changes, plan),
            *_decorator_checks(base_root, worktree_root, changes, plan),
            *_module_tolerance_checks(base_root, worktree_root, changes, plan),
            *_path_checks(changes, plan), *_cheat_checks(changes)]
