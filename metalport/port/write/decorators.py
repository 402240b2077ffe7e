"""An op's MPS `skip`/`expectedFailure` decorators in the OpInfo files, found and removed by `ast`.

PyTorch's porting checklist removes them with the port: a test marked as failing on MPS that now
passes is an unexpected success. A decorator is the `DecorateInfo(unittest.expectedFailure | skip,
..., device_type='mps', ...)` element of the `decorators=`/`skips=` list of the `*Info(...)` call
named for the op. Only decorators whose `dtypes` the port registers (or that name no dtypes) are
removed; tolerance overrides stay. Removal takes whole lines, like the common_mps.py lists. A
decorator the port makes pass for only some dtypes is narrowed to the others (`narrow_decorators`),
as common_mps.py xfail entries are.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from metalport.content_cache import ContentCache
from metalport.errors import RecipeError
from metalport import python_ast

OPINFO_FILES: tuple[str, ...] = (
    "torch/testing/_internal/common_methods_invocations.py",
    "torch/testing/_internal/opinfo/definitions/special.py",
    "torch/testing/_internal/opinfo/definitions/linalg.py",
    "torch/testing/_internal/opinfo/definitions/fft.py",
    "torch/testing/_internal/opinfo/definitions/_masked.py",
)
_FAILING = ("unittest.expectedFailure", "unittest.skip", "skip", "expectedFailure")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Decorator:
    """One MPS decorator of one OpInfo: its file, OpInfo name, 1-based line span and dtypes."""

    file: str
    opinfo: str
    first_line: int
    last_line: int
    dtypes: tuple[str, ...] | None  # torch dtype names; None: every dtype
    test: str | None = None  # the test it marks ("test_dtypes"), when the DecorateInfo names one


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_mps_failure(node: ast.expr) -> bool:
    if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "DecorateInfo" and node.args):
        return False
    device = _keyword(node, "device_type")
    marker = ast.unparse(node.args[0].func if isinstance(node.args[0], ast.Call) else node.args[0])
    return (isinstance(device, ast.Constant) and device.value == "mps") and marker in _FAILING


def _dtypes(node: ast.Call) -> tuple[str, ...] | None:
    value = _keyword(node, "dtypes")
    if not isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return None
    return tuple(ast.unparse(e).removeprefix("torch.") for e in value.elts)


@dataclass(frozen=True)
class _Index:
    """What `find_decorators` and `narrow_decorators` need of one text, in `ast.walk` order.

    `decorators`: per MPS failure decorator in an OpInfo's `decorators=`/`skips=` list, (the
    OpInfo's first argument, first line, last line, dtypes, whether it shares a line with a
    neighbour). `failures`: per MPS failure `DecorateInfo(...)` anywhere, (first line, last line,
    its `dtypes=` value's span (line, column, end line, end column) or None, its end column).
    """

    decorators: tuple[tuple[object, int, int, tuple[str, ...] | None, bool, str | None], ...]
    failures: tuple[tuple[int, int, tuple[int, int, int, int] | None, int], ...]


def _index(text: str) -> _Index:
    tree = python_ast.parse(text)  # SyntaxError: raised to the caller, never cached
    decorators, failures = [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if _is_mps_failure(node):
            given = _keyword(node, "dtypes")
            span = None if given is None else (given.lineno, given.col_offset, given.end_lineno or given.lineno,
                                               given.end_col_offset or 0)
            failures.append((node.lineno, node.end_lineno or node.lineno, span, node.end_col_offset or 1))
        if not (ast.unparse(node.func).endswith("Info") and node.args and isinstance(node.args[0], ast.Constant)):
            continue
        for key in ("decorators", "skips"):
            value = _keyword(node, key)
            elts = value.elts if isinstance(value, (ast.List, ast.Tuple)) else []
            for i, e in enumerate(elts):
                if not _is_mps_failure(e):
                    continue
                start, end = e.lineno, e.end_lineno or e.lineno
                before = elts[i - 1].end_lineno if i else value.lineno  # type: ignore[union-attr]
                after = elts[i + 1].lineno if i + 1 < len(elts) else value.end_lineno  # type: ignore[union-attr]
                shared = (before is not None and before >= start) or (after is not None and after <= end)
                test = e.args[2].value if len(e.args) > 2 and isinstance(e.args[2], ast.Constant) else None
                decorators.append((node.args[0].value, start, end, _dtypes(e), shared, test))  # type: ignore[arg-type]
    return _Index(tuple(decorators), tuple(failures))


# Note [content cache]: an OpInfo module (~1 MB) takes ~1 s to parse and walk; plan, edit and check
# each read the same texts.
_INDEX: ContentCache[_Index] = ContentCache("opinfo-decorators", [__file__])


def _parsed(cache: ContentCache[_T], build: Callable[[str], _T], text: str, path: str) -> _T:
    """`build(text)` through `cache`; RecipeError at `path`'s line when `text` does not parse."""
    try:
        return cache.get(text, build)
    except SyntaxError as err:
        raise RecipeError(f"cannot parse: {err.msg}", location=f"{path}:{err.lineno}",
                          hint="fix the syntax error first") from err


def find_decorators(text: str, names: Iterable[str] | None, *, path: str,
                    strict: bool = True) -> tuple[Decorator, ...]:
    """Every MPS skip/expectedFailure decorator of the OpInfos called one of `names` (None: of every
    OpInfo) in `text`.

    With `strict`, raises RecipeError when one shares a line with another list element (whole lines
    are removed); without, such a decorator is reported all the same (to compare files).
    """
    wanted = None if names is None else set(names)
    found = []
    for name, start, end, dtypes, shared, test in _parsed(_INDEX, _index, text, path).decorators:
        if wanted is not None and name not in wanted:
            continue
        if strict and shared:
            raise RecipeError(f"an MPS decorator of {name!r} shares its line with another",
                              location=f"{path}:{start}", hint="put it on its own line, then rerun")
        found.append(Decorator(path, str(name), start, end, dtypes, test if isinstance(test, str) else None))
    return tuple(sorted(found, key=lambda d: d.first_line))


def dtypes_source(dtypes: Iterable[str]) -> str:
    """`(torch.complex64, torch.uint8)`: a decorator's `dtypes=` value for torch dtype names."""
    names = [f"torch.{d}" for d in dtypes]
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def narrow_decorators(text: str, spans: Mapping[tuple[int, int], tuple[str, ...]], *, path: str) -> str:
    """`text` with the MPS decorator spanning each (first, last) line pair limited to its dtypes:
    its `dtypes=` value replaced, or `dtypes=` added before its closing parenthesis. Line count
    and every other character stay as they were."""
    try:
        index = _INDEX.get(text, _index)
    except SyntaxError as err:
        raise RecipeError(f"cannot parse: {err.msg}", location=f"{path}:{err.lineno}") from err
    lines = [line.encode("utf-8") for line in text.split("\n")]  # ast columns are UTF-8 byte offsets
    edits: list[tuple[int, int, int, int, str]] = []
    for first, last, given, end_col in index.failures:
        if (first, last) not in spans:
            continue
        value = dtypes_source(spans[(first, last)])
        if given is not None:
            edits.append((*given, value))
        else:
            row, col = last, end_col - 1  # at the `)`
            before = lines[row - 1][:col].rstrip()
            joint = " " if before.endswith(b",") else "" if before.endswith(b"(") else ", "
            edits.append((row, col, row, col, f"{joint}dtypes={value}"))
    for first, start, last, end, new in sorted(edits, reverse=True):
        head, tail = lines[first - 1][:start], lines[last - 1][end:]
        lines[first - 1:last] = [head + new.encode("utf-8") + tail] + [b""] * (last - first)
        # (a multi-line dtypes= value keeps the line count: its later lines become empty)
    return "\n".join(line.decode("utf-8") for line in lines)


def with_own_comment(text: str, first: int, last: int, removed: set[int] | frozenset[int] = frozenset()) -> tuple[int, int]:
    """The span of a decorator to remove, grown over the comment lines right above it when they
    speak of MPS (`# NotImplementedError: ... for the MPS device`) or of no device at all, and every element they head is
    removed too (`removed`: the 1-based lines going): the comment would be left describing nothing.
    A comment heading an element that stays, stays."""
    lines = text.split("\n")
    top = first
    while top > 1 and lines[top - 2].strip().startswith("#"):
        top -= 1
    comment = " ".join(lines[top - 1:first - 1]).lower()
    # A comment about another device stays; one about MPS or naming no device (`# AssertionError:
    # Tensor-likes are not close!` above `_refs.addcmul`'s MPS xfails) goes with what it heads.
    other_device = re.search(r"\b(cuda|cpu|xpu|rocm|hip)\b", comment) is not None
    if top == first or ("mps" not in comment and other_device):
        return first, last
    after = first
    while after <= len(lines) and (after in removed or first <= after <= last):
        after += 1
    following = lines[after - 1].strip() if after <= len(lines) else ""
    if following and not following.startswith(("#", ")", "]")):
        return first, last  # the comment also heads an element that stays
    return top, last


def remove_lines(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` without the whole lines of each 1-based inclusive span."""
    drop = {n for first, last in spans for n in range(first, last + 1)}
    return "\n".join(line for n, line in enumerate(text.split("\n"), start=1) if n not in drop)


# Note [module tolerances]: ModuleInfos (common_modules.py) mark MPS failures of module tests too:
# `ModuleInfo(torch.nn.LogSigmoid, ..., skips=(DecorateInfo(unittest.expectedFailure, "TestModule",
# "test_forward", device_type='mps', dtypes=[torch.float16]),))`, a float16 tolerance issue of the
# MPSGraph kernel. Upstream's log_sigmoid port replaced it by `DecorateInfo(toleranceOverride({
# torch.float16: tol(...)}), "TestModule", "test_forward", device_type='mps')`: a tightening (the
# test now runs and must pass within the tolerance, where the xfail accepted anything). A port of an
# op a module's forward calls may make exactly that replacement, for that module's test and dtypes;
# the plan names the decorators it may replace (`module_failures` + `modules_calling`), puts the
# file on its allow-list, and the contract accepts nothing else there (checks/contract/rules.py). The
# values are read from the installed torch, never written down here (`torch_facts.module_tolerance`):
# the ModuleInfo's own toleranceOverride for that test, MPS and dtype when it has one, else for
# `test_forward` what its own check needs of a kernel rounding once (the largest difference between
# its reference_fn and the module in float64 rounded to the dtype over its own samples, one
# significant digit up; rtol assert_close's default). torch 2.13's LogSigmoid has no override, so
# its float16 test_forward gets atol=4e-3 (worst 2^-8: the reference rounds sigmoid, then its log,
# to half), rtol=1e-3; upstream wrote atol=5e-3. The port writes the replacement in place of the
# failure decorator (`replace_module_failures`); without a derivable value it leaves the decorator.
MODULES_FILE = "torch/testing/_internal/common_modules.py"


@dataclass(frozen=True)
class ModuleFailure:
    """One MPS skip/expectedFailure decorator of a ModuleInfo: its module (as written), test, dtypes."""

    module: str  # "torch.nn.LogSigmoid"
    test: str | None  # "test_forward"
    dtypes: tuple[str, ...] | None  # torch dtype names; None: every dtype
    first_line: int
    last_line: int
    first_col: int = 0  # where the decorator's text starts on its first line, and ends on its last
    last_col: int = 0
    cls: str = '"TestModule"'  # the test class argument as written


# Lines as `ast` numbers them (a line ends at \r\n, \r or \n; a form feed does not end one), each kept
# with its ending, as ast.get_source_segment splits a source.
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _segment(lines: list[str], node: ast.AST) -> str | None:
    """ast.get_source_segment of `node` on a source already split into `lines` (`_LINES`)."""
    end_line, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    if end_line is None or end_col is None:
        return None
    first, col = node.lineno - 1, node.col_offset  # type: ignore[attr-defined]
    if end_line - 1 == first:
        return lines[first].encode()[col:end_col].decode()
    return "".join([lines[first].encode()[col:].decode(), *lines[first + 1:end_line - 1],
                    lines[end_line - 1].encode()[:end_col].decode()])


def module_failures(text: str, *, path: str = MODULES_FILE) -> tuple[ModuleFailure, ...]:
    """Every MPS skip/expectedFailure decorator in a `ModuleInfo(...)`'s `decorators=`/`skips=` list."""
    return _parsed(_MODULE_FAILURES, _module_failures, text, path)


def _module_failures(text: str) -> tuple[ModuleFailure, ...]:
    tree = python_ast.parse(text)  # SyntaxError: raised to the caller, never cached
    out = []
    lines = _LINES.findall(text)  # split once: ast.get_source_segment splits the whole file per call
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "ModuleInfo" and node.args):
            continue
        for key in ("decorators", "skips"):
            value = _keyword(node, key)
            for e in value.elts if isinstance(value, (ast.List, ast.Tuple)) else []:
                if _is_mps_failure(e):
                    test = e.args[2].value if len(e.args) > 2 and isinstance(e.args[2], ast.Constant) else None
                    out.append(ModuleFailure(ast.unparse(node.args[0]), test, _dtypes(e),  # type: ignore[arg-type]
                                             e.lineno, e.end_lineno or e.lineno, e.col_offset,
                                             e.end_col_offset or 0,
                                             _segment(lines, e.args[1]) or '"TestModule"'
                                             if len(e.args) > 1 else '"TestModule"'))
    return tuple(out)


# Note [content cache]: torch's ModuleInfo file (~0.5 MB) takes ~0.5 s to parse; every plan reads it.
_MODULE_FAILURES: ContentCache[tuple[ModuleFailure, ...]] = ContentCache("module-failures", [__file__])


def modules_calling(op: str, modules: Iterable[str]) -> frozenset[str]:
    """The modules among `modules` (as ModuleInfos name them, `torch.nn.LogSigmoid`) whose forward, on
    the CPU samples of torch's own ModuleInfo, calls aten::`op` (any overload); from the cached facts
    (`torch_facts.module_calls`)."""
    from metalport.torch_facts import module_calls

    wanted = set(modules)
    if not wanted:
        return frozenset()
    return frozenset(name for name, ops in module_calls(wanted).items() if op in ops)


def module_tolerances(text: str | None, op: str, dtypes: Iterable[str]) -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """Note [module tolerances]: (file, module, test, dtypes) of each MPS failure decorator of a
    ModuleInfo whose module calls `op`, naming a test and only dtypes the port registers
    (`dtypes`: torch dtype names): the ones the port may replace by a toleranceOverride."""
    if not text:
        return ()
    registered = set(dtypes)
    candidates = [f for f in module_failures(text) if f.test and f.dtypes and set(f.dtypes) <= registered]
    calling = modules_calling(op, {f.module for f in candidates})
    return tuple((MODULES_FILE, f.module, f.test or "", f.dtypes or ()) for f in candidates if f.module in calling)


def replace_module_failures(text: str, values: Iterable[tuple[str, str, str, float, float, str]], *,
                            path: str = MODULES_FILE) -> str:
    """Note [module tolerances]: `text` with each MPS failure decorator of a ModuleInfo named in
    `values` ((module, test, torch dtype name, atol, rtol, where from), one per dtype) replaced, in
    place, by a toleranceOverride on MPS for the same test and dtypes; a decorator some of whose
    dtypes have no value stays. Unchanged when nothing matches (a second apply)."""
    wanted: dict[tuple[str, str], dict[str, tuple[float, float]]] = {}
    for module, test, dtype, atol, rtol, _ in values:
        wanted.setdefault((module, test), {})[dtype] = (atol, rtol)
    found = [f for f in module_failures(text, path=path) if f.test and f.dtypes and (f.module, f.test) in wanted
             and set(f.dtypes) <= set(wanted[(f.module, f.test)])]
    lines = text.split("\n")
    for f in sorted(found, key=lambda f: (f.first_line, f.first_col), reverse=True):
        tols = ", ".join(f"torch.{d}: tol(atol={wanted[(f.module, f.test or '')][d][0]!r}, "
                         f"rtol={wanted[(f.module, f.test or '')][d][1]!r})" for d in f.dtypes or ())
        new = f"DecorateInfo(toleranceOverride({{{tols}}}), {f.cls}, \"{f.test}\", device_type='mps')"
        head, tail = lines[f.first_line - 1][:f.first_col], lines[f.last_line - 1][f.last_col:]
        lines[f.first_line - 1:f.last_line] = [head + new + tail]
    return "\n".join(lines)
