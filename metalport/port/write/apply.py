"""`apply_port`: every mechanical edit of a `PortPlan`, written through the sandbox's path guard.

All new texts are computed first and written only when every anchor was found, so a miss (a
`RecipeError` naming the file and line) leaves the worktree as it was. Applying a plan twice
changes nothing the second time.
"""

from __future__ import annotations

import re
from pathlib import Path

from metalport.port.plan.functor_sources import TERNARY_ALPHA_KERNELS, TERNARY_ALPHA_MACRO
from metalport.port.write.cformat import format_inserted, format_snippet
from metalport.port.write.hostgen import kernel_file_text, write_host_code
from metalport.port.write.decorators import find_decorators, narrow_decorators, remove_lines, with_own_comment
from metalport.port.write.host import drop_empty_namespaces, has_legacy, remove_legacy
from metalport.port.tree.reuse import remove_macro
from metalport.port.write.metal import ensure_includes, file_style, insert_functor, needed_includes
from metalport.port.plan.model import COMMON_MPS, NATIVE_FUNCTIONS, NEEDS_LLM, PortPlan
from metalport.port.tree.resolve import mps_only_lines
from metalport.port.spec.model import load_spec
from metalport.port.write.xfail import find_xfails, remove_xfails
from metalport.errors import RecipeError
from metalport.registry.index import registry_from_text
from metalport.sandbox.guard import PathGuard

_REGISTRATION = re.compile(r"^[ \t]*REGISTER_\w+\(.*\);[ \t]*$", re.MULTILINE)


def edit_rows(text: str, plan: PortPlan, *, path: str = NATIVE_FUNCTIONS) -> str:
    """The registry `text` with the plan's dispatch-line changes: a line replaced or deleted is found
    by its text in its entry, a line inserted goes after its base line (Note [spec rows] in
    port/plan/rows.py). Rows already as planned are kept; RecipeError when an entry or a line is gone."""
    registry = registry_from_text(text, path)
    lines = text.splitlines(keepends=True)
    written = {change.after for change in plan.rows}
    edits: dict[int, str | None] = {}
    inserts: dict[int, list[str]] = {}
    for change in plan.rows:
        entry = next((e for e in registry.entries if e.full_name == change.entry), None)
        if entry is None:
            raise RecipeError(f"no entry {change.entry} in the registry", location=f"{path}:{change.line}",
                              hint="re-plan the op on the current tree")
        span = range(entry.span.start, entry.span.end + 1)
        body = {n: lines[n - 1].rstrip("\r\n") for n in span}
        at = change.line if change.inserts else next((n for n, t in body.items() if t == change.before), None)
        if at is None or at not in body:
            # Done already when no MPS-only line is left but those the plan writes (or its line is there).
            done = all(body[d.line] in written for d in mps_only_lines(entry)) if change.deletes else \
                change.after in body.values()
            if done:
                continue
            missing = f"line {change.line} is not in the entry" if change.inserts else \
                f"no dispatch line reads {change.before.strip()!r}"
            raise RecipeError(f"{change.entry}: {missing}", location=f"{path}:{entry.span.start}",
                              hint="re-plan the op on the current tree")
        eol = lines[at - 1][len(body[at]):] or "\n"
        if not change.inserts:
            edits[at] = change.after + eol if change.after else None
        elif change.after not in body.values():
            inserts.setdefault(at, []).insert(0, change.after + eol)
    for n in sorted(set(edits) | set(inserts), reverse=True):
        lines[n:n] = inserts.get(n, [])
        if n in edits:
            if edits[n] is None:
                del lines[n - 1]
            else:
                lines[n - 1] = edits[n]  # type: ignore[assignment]
    return "".join(lines)


def split_functor_source(source: str) -> tuple[str, tuple[str, ...]]:
    """(functor code, `REGISTER_*` lines) of a functor source that may carry its registrations."""
    regs = tuple(m.group(0).strip() for m in _REGISTRATION.finditer(source))
    code = _REGISTRATION.sub("", source)
    return re.sub(r"\n{3,}", "\n\n", code).strip() + "\n", regs


def remove_planned_xfails(text: str, plan: PortPlan, *, path: str = COMMON_MPS) -> str:
    """common_mps.py without the plan's xfail entries (matched by list and key); others kept."""
    wanted = {(lst, key) for lst, key, _ in plan.xfail_entries}
    return remove_xfails(text, plan.xfail_keys, path=path, only=wanted).text


def narrow_planned_xfails(text: str, plan: PortPlan, *, path: str = COMMON_MPS) -> str:
    """common_mps.py with each partly covered entry's dtype list cut to the dtypes still failing
    (written on one line, `"key": [torch.a, torch.b],`); entries already narrowed stay as they are."""
    for list_name, key, _, kept in plan.xfail_narrowed:
        for entry in [e for e in find_xfails(text, [key], path=path) if e.list_name == list_name]:
            lines = text.split("\n")
            first, last = lines[entry.lines[0] - 1], lines[entry.lines[-1] - 1]
            indent = first[:len(first) - len(first.lstrip())]
            comma = "," if re.search(r"(?:[\])]|None)\s*,", last) else ""
            dtypes = ", ".join(f"torch.{d}" for d in kept)
            lines[entry.lines[0] - 1:entry.lines[-1]] = [f'{indent}"{key}": [{dtypes}]{comma}']
            text = "\n".join(lines)
    return text


def add_planned_xfails(text: str, plan: PortPlan, *, path: str = COMMON_MPS) -> str:
    """common_mps.py with each entry the plan adds (`"key": [torch.a],  # reason`) first in its list;
    an entry already there is left as it is. RecipeError when the list is missing."""
    import ast

    from metalport.checkout.sources import named_assignments, parse_python

    for list_name, key, dtypes, reason in plan.xfail_added:
        if any(e.list_name == list_name for e in find_xfails(text, [key], path=path)):
            continue
        found = [v for n, v in named_assignments(parse_python(text, path, RecipeError, "fix its syntax"))
                 if n == list_name and isinstance(v, ast.Dict)]
        if not found:
            raise RecipeError(f"{path} has no {list_name} to add {key!r} to", location=path,
                              hint="add the entry by hand")
        lines = text.split("\n")
        opening = found[0].lineno  # the line of `LIST = {`; entries follow it
        after = lines[opening] if opening < len(lines) else ""
        indent = after[:len(after) - len(after.lstrip())] if after.strip() else lines[opening - 1][:4] + "    "
        listed = ", ".join(f"torch.{d}" for d in dtypes)
        lines.insert(opening, f'{indent}"{key}": [{listed}],  # {reason}')
        text = "\n".join(lines)
    return text


class _Texts:
    """Current texts of the worktree's files, read once, edited in memory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.texts: dict[str, str | None] = {}
        self.original: dict[str, str | None] = {}

    def get(self, rel: str) -> str | None:
        """The file's current text (None when it does not exist yet)."""
        if rel not in self.texts:
            path = self.root / rel
            self.texts[rel] = path.read_text(encoding="utf-8") if path.is_file() else None
            self.original[rel] = self.texts[rel]
        return self.texts[rel]

    def require(self, rel: str) -> str:
        """The file's current text; RecipeError when it is missing."""
        text = self.get(rel)
        if text is None:
            raise RecipeError("file is missing from the worktree", location=rel,
                              hint="re-plan the op on the current tree")
        return text


def _kernel_edit(texts: _Texts, plan: PortPlan, root: Path, functor_source: str | None) -> None:
    source = functor_source if functor_source is not None else plan.functor_source
    if not source:
        raise RecipeError(f"{plan.op} is not in the recipe table: its functor {NEEDS_LLM}",
                          hint="rerun with --model openai:<model>")
    if not (plan.kernel_file and plan.functor):
        raise RecipeError(f"the plan for {plan.op} has no kernel file (family {plan.family})",
                          hint="this op needs a hand-written port")
    code, regs = split_functor_source(source)
    if plan.params and plan.params_type:  # Note [model params structs] (port/plan/params.py)
        from metalport.port.plan.params import model_params_struct

        code = model_params_struct(code, plan.functor, plan.params, plan.params_type)
    if not re.search(rf"\bstruct {re.escape(plan.functor)}\s*\{{", code):
        raise RecipeError(f"the functor source does not define 'struct {plan.functor}'", location=plan.kernel_file,
                          hint=f"name the functor {plan.functor}")
    regs = regs or plan.registrations
    text = texts.get(plan.kernel_file)
    if plan.macro == TERNARY_ALPHA_MACRO and plan.shared_launcher is None and \
            f"#define {TERNARY_ALPHA_MACRO}(" not in (text or ""):
        code = f"{TERNARY_ALPHA_KERNELS}\n{code}"  # the file's first ternary op with a scalar brings the kernels
    from metalport.port.write.halves import DENSE_KERNELS, DENSE_MACRO, HALVES_KERNELS, HALVES_MACRO

    if plan.macro == HALVES_MACRO and f"#define {HALVES_MACRO}(" not in (text or ""):
        code = f"{HALVES_KERNELS}\n{code}"  # Note [grad over halves]: the file's first such op brings the kernel
    dense = tuple(r for r in plan.registrations if r.startswith(f"{DENSE_MACRO}("))
    if dense:  # Note [halves forward]: the contiguous kernel's registrations, whatever the model registered
        regs = (*regs, *(r for r in dense if r not in regs))
        if f"#define {DENSE_MACRO}(" not in (text or ""):
            code = f"{DENSE_KERNELS}\n{code}"
    if text is None:
        new = insert_functor(None, plan.functor, code, regs, path=plan.kernel_file)
        texts.texts[plan.kernel_file] = format_snippet(new, root, plan.kernel_file)
    else:
        # Namespace style first: dropping `::metal::` shortens lines clang-format must then reflow.
        snippet = format_snippet(file_style(code, text), root, plan.kernel_file)
        text = insert_functor(text, plan.functor, snippet, regs, path=plan.kernel_file)
        texts.texts[plan.kernel_file] = ensure_includes(text, needed_includes(code), path=plan.kernel_file)


def _params_edit(texts: _Texts, plan: PortPlan) -> None:
    """The params struct the port adds (Note [params route], port/plan/params.py): at the end of the kernel
    header both sides include, or before the functor in a kernel file that includes none."""
    if not (plan.params_source and plan.params_header):
        return
    text = texts.get(plan.params_header) or ""
    if re.search(rf"^struct {re.escape(plan.params_type or '')}\s*\{{", text, re.MULTILINE):
        return
    if plan.params_header != plan.kernel_file:
        texts.texts[plan.params_header] = f"{text.rstrip()}\n\n{plan.params_source}" if text else \
            f"#pragma once\n\n{plan.params_source}"
        return
    at = re.search(rf"^struct {re.escape(plan.functor or '')}\s*\{{", text, re.MULTILINE)
    if at is not None:
        texts.texts[plan.params_header] = f"{text[:at.start()]}{plan.params_source}\n{text[at.start():]}"


def _spec_kernel_edit(texts: _Texts, plan: PortPlan) -> None:
    """A spec launch's kernel source joins its kernel file, unless the file defines the kernel already."""
    spec = load_spec(plan.launch or {})
    kernel = texts.get(spec.kernel_file)
    if kernel is None or f"kernel void {spec.kernel_name}(" not in kernel:
        texts.texts[spec.kernel_file] = kernel_file_text(spec, plan.functor_source or "", kernel)


def _host_edit(texts: _Texts, plan: PortPlan, root: Path) -> None:
    """The host file through the one host writer (`hostgen.write_host_code`)."""
    new = write_host_code(plan, root, texts.get)
    if new is not None and plan.host_file:
        texts.texts[plan.host_file] = new


def _bodies_edit(texts: _Texts, plan: PortPlan, root: Path) -> None:
    """Each kept row's out function with its new iterator body (Note [iterator bodies]), formatted in place."""
    from metalport.port.plan.bodies import rewrite_body

    for rel, function, body in plan.bodies:
        before = texts.require(rel)
        texts.texts[rel] = format_inserted(before, rewrite_body(before, function, body, path=rel), root, rel)


def _legacy_registration_edit(texts: _Texts, plan: PortPlan) -> None:
    """Drop each MPSGraph registration line the plan replaces (gone already: nothing to do)."""
    for rel, line, text in plan.legacy_registrations:
        lines = texts.require(rel).splitlines(keepends=True)
        at = [i for i, t in enumerate(lines) if t.rstrip("\r\n") == text]
        if at:
            nearest = min(at, key=lambda i: abs(i + 1 - line))
            texts.texts[rel] = "".join(lines[:nearest] + lines[nearest + 1:])


def _legacy_edit(texts: _Texts, plan: PortPlan) -> None:
    _legacy_registration_edit(texts, plan)
    for rel, name in plan.legacy_all:
        text = texts.require(rel)
        if has_legacy(text, name):
            text = drop_empty_namespaces(remove_legacy(text, plan.op, name, path=rel, drop_include=False))
        if plan.legacy_include:
            text = "".join(line for line in text.splitlines(keepends=True)
                           if line.rstrip("\r\n").strip() != plan.legacy_include)
            text = re.sub(r"^#else[ \t]*\n(?=#endif)", "", text, flags=re.MULTILINE)  # its #else emptied
        texts.texts[rel] = text
    for rel, macro in plan.legacy_macros:  # the port removed the macro's last invocation
        texts.texts[rel] = remove_macro(texts.require(rel), macro)


def _decorator_edit(texts: _Texts, plan: PortPlan) -> None:
    """Narrow, then remove, the plan's OpInfo decorators, found again by `ast` (a second apply
    finds the removed ones gone and leaves the file as it is)."""
    every = (*plan.decorator_entries, *plan.decorator_narrowed)  # (file, OpInfo name, ...) each
    for rel in dict.fromkeys(d[0] for d in every):
        text = texts.require(rel)
        names = {d[1] for d in every if d[0] == rel}
        planned = {(n, a, b) for f, n, a, b in plan.decorator_entries if f == rel}
        narrowed = {(n, a, b): kept for f, n, a, b, kept in plan.decorator_narrowed if f == rel}
        base_spans = {(d.opinfo, d.first_line, d.last_line) for d in find_decorators(text, names, path=rel)}
        if planned and not base_spans & planned:
            continue  # applied already (the removals moved the narrowed decorators' lines)
        text = narrow_decorators(text, {(a, b): kept for (n, a, b), kept in narrowed.items()
                                        if (n, a, b) in base_spans}, path=rel)
        spans = [(a, b) for _, a, b in planned & base_spans]
        going = {n for a, b in spans for n in range(a, b + 1)}
        texts.texts[rel] = remove_lines(text, [with_own_comment(text, a, b, going) for a, b in spans])


def apply_port(plan: PortPlan, worktree_root: Path | str, *, functor_source: str | None = None,
               secret_env: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Apply `plan` in `worktree_root`; return the relative paths whose content changed.

    `functor_source` (an LLM's functor) replaces the table's; `REGISTER_*` lines inside it replace
    the plan's registrations. Raises RecipeError on a missing anchor or a plan that needs an LLM
    and got no functor, SandboxError for a path off the plan's allow-list or a text holding the
    value of a secret variable (the defaults plus `secret_env`).
    """
    root = Path(worktree_root).resolve()
    guard = PathGuard(root, set(plan.allowed_paths), secret_env=secret_env)
    texts = _Texts(root)
    texts.texts[NATIVE_FUNCTIONS] = edit_rows(texts.require(NATIVE_FUNCTIONS), plan)
    if plan.launch_kind.by_spec:  # a spec launch; PENDING (no launch yet) fails at the functor step
        _legacy_edit(texts, plan)  # first: the host function may take the legacy one's place and file
        _spec_kernel_edit(texts, plan)
        _host_edit(texts, plan, root)
    else:
        if plan.shared_launcher == "extend":  # Note [extend shared code at home]
            from metalport.port.write.shared import HOMES, extend_texts

            texts.texts.update(extend_texts({rel: texts.require(rel) for rel in HOMES}, root))
        if plan.reused_kernel is None:  # a reused kernel is launched as the tree has it
            _kernel_edit(texts, plan, root, functor_source)
            _params_edit(texts, plan)
        if plan.bodies:
            _bodies_edit(texts, plan, root)
        else:
            _host_edit(texts, plan, root)
        _legacy_edit(texts, plan)
    if plan.xfail_entries or plan.xfail_narrowed or plan.xfail_added:
        common = remove_planned_xfails(texts.require(COMMON_MPS), plan)
        texts.texts[COMMON_MPS] = add_planned_xfails(narrow_planned_xfails(common, plan), plan)
    _decorator_edit(texts, plan)
    if plan.module_tolerance_values:  # Note [module tolerances] (port/write/decorators.py)
        from metalport.port.write.decorators import MODULES_FILE, replace_module_failures

        texts.texts[MODULES_FILE] = replace_module_failures(texts.require(MODULES_FILE), plan.module_tolerance_values)
    for rel, text in texts.texts.items():
        guard.resolve(rel)  # every target passes the guard before the first write
        if text is not None:
            guard.check_text(rel, text)
    changed = []
    for rel, text in texts.texts.items():
        if text is not None and text != texts.original.get(rel) and guard.write_text(rel, text):
            changed.append(rel)
    return tuple(sorted(changed))
