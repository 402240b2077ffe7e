"""Stub routing: which dispatch stub(s) an op's CPU/CUDA kernel calls, read from the CPU side.

A structured op's MPS port registers a stub, and the stub that matters is the one the shared
kernel calls, not the one named after the op: `sub_out` calls `add_stub` with `-alpha`, `sgn_out`
calls `sign_stub` for real dtypes and `sgn_stub` for complex ones, and
`special_chebyshev_polynomial_t_out` calls `chebyshev_polynomial_t_stub`. `read_routes` reads
that from `TORCH_IMPL_FUNC(x_out)` and plain `x_out` functions in `aten/src/ATen/native/*.cpp`
(macros expanded). A tree without the `.cpp` (a wheel workspace) gets routes guessed from the
`DECLARE_DISPATCH` names of the ATen headers, marked `assumed`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from metalport.checkout.cpp import Function, Unit, closing, match_bracket, read_unit, split_top_level
from metalport.registry.model import Entry, Op, Registry

_WORD = re.compile(r"[A-Za-z_]\w*")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_IF = re.compile(r"\bif\s*\(")
_OPENS_IF = re.compile(r"\s*(?:else\s+)?if\s*\(")
_COMPLEX = re.compile(r"\bis_complex\s*\(\s*\)|isComplexType\s*\(")
_SUFFIXES = re.compile(r"(_out|_cpu|_cuda|_kernel|_impl)+$")


@dataclass(frozen=True)
class StubCall:
    """One call of a stub in a kernel's body.

    `dtypes` says when the call runs: "all" (unconditional), "complex" / "real" (under an
    `is_complex()` test or its `else`), or "some" (another condition, e.g. `decimals != 0`).
    `args` are the arguments after the device type and iterator (`("-alpha",)`).
    """

    stub: str
    dtypes: str
    condition: str | None
    args: tuple[str, ...]
    file: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class StubRoute:
    """The stubs `kernel` (`sgn_out`) calls, in the order a port must register them.

    `assumed` routes were not read from a kernel body: `file`/`line` then name the
    DECLARE_DISPATCH (or are None for a ufunc-generated kernel) and `reason` says why.
    """

    kernel: str
    calls: tuple[StubCall, ...]
    assumed: bool
    file: str | None
    line: int | None
    reason: str | None = None

    @property
    def stub(self) -> str:
        """The stub a port registers first: unconditional, then real-dtype, then the rest."""
        return self.calls[0].stub

    @property
    def stubs(self) -> tuple[str, ...]:
        """Every distinct stub the kernel calls, in registration order."""
        return tuple(dict.fromkeys(c.stub for c in self.calls))

    @property
    def where(self) -> str | None:
        return f"{self.file}:{self.line}" if self.file else None

    def describe(self) -> str:
        """One line: `sgn_out calls sign_stub (real), sgn_stub (complex) [UnaryOps.cpp:747]`."""
        parts = []
        for c in self.calls:
            note = [] if c.dtypes == "all" else [c.dtypes if c.dtypes != "some" else f"if {c.condition}"]
            note += [f"with {', '.join(c.args)}"] if c.args and c.args != ("alpha",) else []
            parts.append(f"{c.stub} ({'; '.join(note)})" if note else c.stub)
        where = f" ({'assumed: ' + self.reason if self.assumed else self.where})"
        return f"{self.kernel} calls {', '.join(parts)}{where}"


_ORDER = {"all": 0, "real": 1, "some": 2, "complex": 3}


def _source(unit: Unit, start: int, end: int) -> str:
    """The text between two offsets, comments dropped and whitespace folded."""
    return re.sub(r"\s+", " ", _COMMENT.sub(" ", unit.text[start:end])).strip()


def _cond_text(unit: Unit, paren: int) -> str:
    return _source(unit, paren + 1, closing(unit.code, paren))


def _if_ending_at(unit: Unit, body_start: int, end: int) -> str | None:
    """The condition of the `if` whose then-branch ends at `end` (a `}` or `;`)."""
    code = unit.code
    if code[end] == "}":
        opened = match_bracket(code, end, backward=True, bound=body_start + 1)
        end = opened if opened >= 0 else body_start
    iff = list(_IF.finditer(code, body_start, end))
    return _cond_text(unit, iff[-1].end() - 1) if iff else None


def _branch(unit: Unit, body_start: int, head_start: int, head_end: int) -> tuple[str, str | None] | None:
    """(dtypes, condition) when the code at head_start:head_end opens an `if` or `else` branch."""
    head = unit.code[head_start:head_end]
    opens_if = _OPENS_IF.match(head)
    if opens_if:
        cond = _cond_text(unit, head_start + opens_if.end() - 1)
        return _dtypes_of(cond), cond
    if head.lstrip().startswith("else"):
        cond = _if_ending_at(unit, body_start, head_start - 1) if head_start > body_start else None
        if cond is None:
            return "some", None
        return {"complex": "real", "real": "complex"}.get(_dtypes_of(cond), "some"), f"!({cond})"
    return None


def _statement_start(code: str, body_start: int, at: int) -> int:
    return max(body_start, *(code.rfind(c, body_start, at) + 1 for c in ";{}"))


def _condition(unit: Unit, body_start: int, at: int) -> tuple[str, str | None]:
    """(dtypes, condition) of the innermost `if` / `else` around `at` in a function body."""
    code = unit.code
    start = _statement_start(code, body_start, at)
    found = _branch(unit, body_start, start, at)
    if found is not None:
        return found
    i = start
    while i > body_start:
        i -= 1
        if code[i] == "}":  # a closed block before `at`: step over it
            i = match_bracket(code, i, backward=True, bound=body_start)
            if i < 0:
                break
        elif code[i] == "{":
            head_start = _statement_start(code, body_start, i)
            found = _branch(unit, body_start, head_start, i)
            if found is not None:
                return found
            i = head_start
    return "all", None


def _dtypes_of(cond: str) -> str:
    if _COMPLEX.search(cond):
        negated = cond.lstrip().startswith("!")
        return "real" if negated else "complex"
    return "some"


def _forwarded(unit: Unit, body_start: int, at: int, stub: str) -> tuple[str, ...]:
    """The arguments after a stub passed to a helper (`unary_op_impl_float_out(result, self,
    logit_stub, Scalar(eps ? eps.value() : -1.0))`): ATen's helpers forward them to the stub
    after the iterator they build. () when the stub is not an argument of a call."""
    code = unit.code
    i = match_bracket(code, at - 1, "()[]{}", backward=True, bound=body_start, depth=1)
    if i <= body_start or code[i] != "(":
        return ()
    parts = split_top_level(_source(unit, i + 1, closing(code, i)))
    helper = re.search(r"(\w+)\s*(?:<[^<>;]*>)?\s*$", code[body_start:i])
    if stub not in parts or helper is None or not _forwards(code, helper.group(1), parts.index(stub)):
        return ()
    return tuple(parts[parts.index(stub) + 1:])


def _forwards(code: str, helper: str, at: int) -> bool:
    """True when `helper`, defined in the unit, takes a parameter pack right after its parameter
    `at` (the stub): `unary_op_impl_float_out(Tensor& result, const Tensor& self, Stub& stub,
    Args... args)` passes those on to the stub; a named parameter there (`bool
    promotes_integer_to_float`) is the helper's own."""
    for m in re.finditer(rf"\b{re.escape(helper)}\s*\(", code):
        end = closing(code, m.end() - 1)
        if not re.match(r"\s*(?:const\s*)?\{", code[end + 1:end + 40]):
            continue  # a call, not the definition
        params = split_top_level(code[m.end():end])
        return len(params) > at + 1 and "..." in params[at + 1]
    return False


def _calls(unit: Unit, fn: Function, stubs: set[str]) -> list[StubCall]:
    code = unit.code
    found = []
    for m in _WORD.finditer(code, fn.body_start, fn.body_end):
        name = m.group(0)
        if name not in stubs and not name.endswith("_stub"):
            continue
        if code[m.start() - 1] in ".>":
            continue  # a member, not the stub
        after = code[m.end():m.end() + 40].lstrip()
        args: tuple[str, ...] = ()
        if after.startswith("("):
            opened = code.index("(", m.end())
            args = tuple(split_top_level(_source(unit, opened + 1, closing(code, opened)))[2:])
        elif after[:1] in ",)":
            args = _forwarded(unit, fn.body_start, m.start(), name)
        dtypes, cond = _condition(unit, fn.body_start + 1, m.start())
        file, line = unit.origin(m.start())
        found.append(StubCall(name, dtypes, cond, args, file, line))
    return found


def read_routes(cpp_files: Iterable[Path], root: Path, declared: Iterable[str]) -> tuple[StubRoute, ...]:
    """The route of every function in `cpp_files` that calls a stub (a `declared` name or `*_stub`)."""
    stubs = set(declared)
    routes = []
    for path in cpp_files:
        unit = read_unit(path, root)
        for fn in unit.functions:
            calls = _calls(unit, fn, stubs)
            if calls:
                calls.sort(key=lambda c: _ORDER[c.dtypes])
                routes.append(StubRoute(fn.name, tuple(calls), False, fn.file, fn.line))
    return tuple(routes)


def assumed_route(kernel: str, op: str, declared: dict[str, tuple[str, int]], *,
                  ufunc: bool = False) -> StubRoute | None:
    """A route guessed from names when no kernel body says: `<kernel without _out>_stub`,
    `<op>_stub`, `<op without special_>_stub`, then (linalg's solvers are declared without their
    prefix: `_linalg_svd` -> `svd_stub`, `linalg_ldl_factor_ex` -> `ldl_factor_stub`) the op
    without `linalg_` and `_ex`, whichever is declared (`declared`: stub -> file, line).

    A ufunc kernel (`add_out`, generated from `ufunc_inner_loop`) calls `<op>_stub` by construction.
    """
    base = _SUFFIXES.sub("", kernel)
    solver = op.lstrip("_").removeprefix("linalg_").lstrip("_")
    for name in dict.fromkeys([base, op, op.lstrip("_"), op.removeprefix("special_"),
                               base.removeprefix("special_"), solver, solver.removesuffix("_ex")]):
        stub = f"{name}_stub"
        if stub in declared:
            file, line = declared[stub]
            reason = ("ufunc_inner_loop kernels call <op>_stub" if ufunc else
                      f"no body of {kernel} in the tree; the stub is named after it")
            return StubRoute(kernel, (StubCall(stub, "all", None, (), file, line),), True,
                             None if ufunc else file, None if ufunc else line, reason)
    return None


@lru_cache(maxsize=4)
def _registry_lines(text: str) -> tuple[str, ...]:
    return tuple(text.splitlines())


def _is_ufunc(entry: Entry, lines: tuple[str, ...]) -> bool:
    return any(line.strip().startswith("ufunc_inner_loop:")
               for line in lines[entry.span.start - 1:entry.span.end])


def route_op(op: Op, registry: Registry, routes: dict[str, StubRoute],
             declared: dict[str, tuple[str, int]]) -> StubRoute | None:
    """The route of `op`: of its first entry (`.out` overloads first) whose CPU (else CUDA) kernel has
    a body in `routes` (kernel -> route), else one assumed from names (see `assumed_route`)."""
    entries = sorted(op.entries, key=lambda e: (not e.overload.startswith("out"), e.span.start))
    kernels = [(e, d.kernel) for e in entries if (d := e.kernel_for("CPU") or e.kernel_for("CUDA"))]
    for _, kernel in kernels:
        if kernel in routes:
            return routes[kernel]
    lines = _registry_lines(registry.text)
    for entry in entries:
        if entry.structured and _is_ufunc(entry, lines):
            found = assumed_route(f"{entry.base}_out", op.name, declared, ufunc=True)
            if found is not None:
                return found
    for _, kernel in kernels:
        found = assumed_route(kernel, op.name, declared)
        if found is not None:
            return found
    return assumed_route(op.name, op.name, declared) if not kernels else None
