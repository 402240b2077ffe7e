"""`translate_stub`: the Metal functor of the CPU kernel a stub is registered with, or why not.

Note [translate porter]: the CPU kernel's scalar lambda says what the op computes (Note [reading a
CPU kernel], checkout/cpu_kernels.py). The lambda serving float32 becomes the functor's floating
branch, computed in opmath float for float, half and bfloat16 (Note [translated numerics]); a
lambda serving the integral types becomes its integral branch, or those types are left out when it
does not translate. float64, complex and bool are never registered here. Names the lambda captures
are resolved in the kernel's body: an initializer made of literals and constants is inlined as a
local; one reading the kernel's arguments (`beta_.to<float>()`) is a scalar the host must pass,
listed in `params` — a params struct carries it (the params route), so until then such a lambda is
declined with the names. Everything outside the subset is declined with its reason, and the op goes
to a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from metalport.checkout.cpp import split_top_level
from metalport.checkout.cpu_kernels import CPU_DIR, CpuKernel, ScalarLambda, find_cpu_kernel
from metalport.port.translate.cxx import Declined, Node, parse_body, parse_expr
from metalport.port.translate.emit import HELPERS, Emitter

__all__ = ["ScalarParam", "Translation", "translate_kernel", "translate_stub"]

_FLOAT_RET = "::metal::enable_if_t<::c10::metal::is_scalar_floating_point_v<T>, {out}>"
_INT_RET = "::metal::enable_if_t<!::metal::is_floating_point_v<T>, {out}>"
_INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
_SERVED_FLOAT = ("float32", "float16", "bfloat16")
_COMPLEX = ("complex32", "complex64", "complex128")


@dataclass(frozen=True)
class ScalarParam:
    """A scalar the lambda captures from the kernel's arguments: its name in the lambda, its Metal
    type and the C++ that computes it on the host (`beta_.to<float>()`)."""

    name: str
    metal_type: str
    source: str


@dataclass(frozen=True)
class Translation:
    """The translation of one stub's CPU kernel: `source` is the functor (None when `declined`
    says why not); `where` the lambda's `file:line`, `lambda_text` the lambda as written."""

    op: str
    stub: str
    declined: str | None = None
    kernel: str | None = None
    where: str | None = None
    lambda_text: str | None = None
    branch: str | None = None
    arity: int = 0
    out_bool: bool = False
    source: str | None = None
    dtypes: tuple[str, ...] = ()  # torch dtype names the functor serves
    params: tuple[ScalarParam, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when the lambda became a functor."""
        return self.source is not None


def _names(n: Node) -> list[str]:
    own = [n.text.lstrip(":")] if n.kind == "name" else []
    return own + [x for k in n.kids for x in _names(k)]


def _declared(n: Node) -> list[str]:
    own = [n.text.split(" ")[-1]] if n.kind == "decl" else []
    return own + [x for k in n.kids for x in _declared(k)]


_STATEMENT = re.compile(r"^((?:(?:const|constexpr|static)\s+)*)([\w:]+(?:\s*<[^;=(){}]*>)?)\s+([A-Za-z_].*)$", re.S)
_DECLARATOR = re.compile(r"^([A-Za-z_]\w*)\s*(?:=\s*(.+)|\((.*)\)|\{(.*)\})$", re.S)


def _after_blocks(statement: str) -> str:
    """`statement` after the last brace opening or closing a block (`[&]() {`, `} else {`); the
    braces of a brace initializer (`one_half{0.5f}`) stay."""
    cut = 0
    for m in re.finditer(r"[{}]", statement):
        before, after = statement[:m.start()].rstrip(), statement[m.end():].lstrip()
        if m.group() == "{" and not (before[-1:].isalnum() or before[-1:] == "_"):
            cut = m.end()
        elif m.group() == "}" and after[:1] not in ("", ",", ")"):
            cut = m.end()
    return statement[cut:]


def _declaration(before: str, name: str) -> tuple[str, str] | None:
    """(declared type, initializer) of the last declaration of `name` in `before` (the kernel's code
    up to the call); a statement may declare several names (`const float zero(0), three(3);`)."""
    found = None
    for statement in before.split(";"):
        m = _STATEMENT.match(_after_blocks(statement).strip())
        if m is None or m.group(2) in ("return", "using", "typedef", "else"):
            continue
        for part in split_top_level(m.group(3), "([{", ")]}"):
            d = _DECLARATOR.match(part.strip())
            if d is not None and d.group(1) == name:
                found = (m.group(2).strip(), next(g for g in d.groups()[1:] if g is not None).strip())
    return found


def _kernel_params(kernel: CpuKernel) -> dict[str, str]:
    out = {}
    for p in kernel.params:
        words = re.sub(r"[&*]", " ", p.split("=")[0]).split()
        if len(words) >= 2:
            out[words[-1]] = " ".join(words[:-1])
    return out


def _param_type(kind: str) -> str:
    base = kind.replace("const", "").strip().split("::")[-1]
    return "bool" if base == "bool" else "long" if base in ("int64_t", "long") else "float"


def _resolve(lam: ScalarLambda, kernel: CpuKernel, free: list[str], emitter: Emitter
             ) -> tuple[list[str], list[ScalarParam]]:
    """Lines declaring the constants `free` names, and the scalars among them (in order met)."""
    lines: list[str] = []
    params: list[ScalarParam] = []
    args = _kernel_params(kernel)
    seen: set[str] = set()

    def visit(name: str, depth: int) -> None:
        if name in seen or name in emitter.names:
            return
        seen.add(name)
        found = _declaration(lam.before, name)
        if found is None:
            if name in args:
                params.append(ScalarParam(name, _param_type(args[name]), name))
                return
            emitter.expr(Node("name", name))  # a constant such as M_PI, or Declined naming it
            return
        kind, init = found
        words = set(re.findall(r"[A-Za-z_]\w*", init))
        if words & set(args) or re.search(r"\.\s*to\s*[<(]|\biter\b|\bit\b", init):
            params.append(ScalarParam(name, _param_type(kind), init))
            return
        if "Vectorized" in kind or kind.startswith(("Vec", "vec")):
            raise Declined(f"reads {name}, a vector the scalar lambda cannot use")
        value = parse_expr(init)
        if depth > 8:
            raise Declined(f"{name} is defined through too many other names")
        for other in _names(value):
            visit(other, depth + 1)
        text = emitter.expr(value)
        metal = emitter.type_of(kind)
        emitter.names[name] = name
        lines.append(f"    const {metal} {name} = {text};")

    for name in free:
        visit(name, 0)
    return lines, params


def _branch(lam: ScalarLambda, kernel: CpuKernel, floating: bool, out_bool: bool
            ) -> tuple[str, list[ScalarParam], set[str]]:
    """One `operator()` of the functor, translated from `lam`, and the scalars it needs."""
    if any("complex" in t for t, _ in lam.params):
        raise Declined("a lambda over complex values")
    body = parse_body(lam.body)
    names = {p: p for _, p in lam.params}
    emitter = Emitter(floating, names)
    local = set(_declared(body)) | set(names)
    free = [n for n in dict.fromkeys(_names(body)) if n not in local]
    free = [n for n in free if not _is_constant(n)]
    consts, params = _resolve(lam, kernel, free, emitter)
    for p in params:
        emitter.names[p.name] = p.name
    lines = emitter.statements(body, "    ")
    if not any("return " in line for line in lines):
        raise Declined("a lambda with no return")
    wide = "float" if floating else "T"
    ins = ", ".join(f"const T in{i}" for i in range(len(lam.params)))
    head = [f"    const {wide} {p} = static_cast<{wide}>(in{i});" if floating else f"    const T {p} = in{i};"
            for i, (_, p) in enumerate(lam.params)]
    ret = (_FLOAT_RET if floating else _INT_RET).format(out="bool" if out_bool else "T")
    cast = "static_cast<bool>(" if out_bool else "static_cast<T>("
    text = "\n".join([f"  template <typename T>", f"  inline {ret} operator()({ins}) {{", *head, *consts,
                      *[line.replace("RESULT(", cast) for line in lines], "  }"])
    return text + "\n", params, emitter.helpers


_TRUTH_OPS = ("==", "!=", "<", ">", "<=", ">=", "&&", "||", "!")
_TRUTH_CALLS = ("isnan", "isinf", "isfinite", "signbit", "_isnan", "_isinf")


def _returns_truth(body: str) -> bool:
    """Whether every `return` of a lambda with no declared return type yields a truth value (a
    comparison, a logical operation, `isnan(x)`): its output is bool, as C++ deduces it."""
    try:
        tree = parse_body(body)
    except Declined:
        return False

    def returns(n: Node) -> list[Node]:
        return [n.kids[0]] if n.kind == "return" else [r for k in n.kids for r in returns(k)]

    def truth(n: Node) -> bool:
        if n.kind in ("binary", "unary"):
            return n.text in _TRUTH_OPS
        if n.kind == "call":
            return n.text.split("::")[-1] in _TRUTH_CALLS
        return n.kind == "num" and n.text in ("true", "false")

    found = returns(tree)
    return bool(found) and all(truth(r) for r in found)


def _is_constant(name: str) -> bool:
    return name in ("NAN", "INFINITY", "true", "false") or bool(re.fullmatch(r"M_[A-Z0-9_]+", name))


def _pick(lams: list[ScalarLambda], dtypes: tuple[str, ...]) -> list[ScalarLambda]:
    """The distinct lambdas (by body) serving any of `dtypes`."""
    out: dict[str, ScalarLambda] = {}
    for lam in lams:
        if lam.dtypes & set(dtypes):
            out.setdefault(re.sub(r"\s+", "", lam.body), lam)
    return list(out.values())


def translate_kernel(kernel: CpuKernel, op: str) -> Translation:
    """The functor `{op}_functor` translated from `kernel`'s scalar lambdas, or a declined
    Translation with the reason (Note [translate porter])."""
    base = Translation(op, kernel.stub, kernel=kernel.function)
    if not kernel.lambdas and kernel.calls_other == ("cpu_kernel_multiple_outputs",):
        return _declined(base, f"two outputs ({kernel.function} calls cpu_kernel_multiple_outputs)")
    if not kernel.lambdas:
        helpers = f" (it calls {', '.join(kernel.calls_other)})" if kernel.calls_other else ""
        return _declined(base, f"{kernel.function} ({kernel.file}:{kernel.line}) has no cpu_kernel scalar lambda{helpers}")
    floats = _pick(list(kernel.lambdas), ("float32",)) or _pick(list(kernel.lambdas), ("float16", "bfloat16"))
    ints = _pick(list(kernel.lambdas), _INTEGRAL)
    main = floats or ints
    if not main:
        kinds = set().union(*(lam.dtypes for lam in kernel.lambdas))
        why = "complex-only" if kinds and kinds <= set(_COMPLEX) else "no lambda serving float or integral types"
        return _declined(base, f"{kernel.function}: {why}", kernel.lambdas[0])
    if len(main) > 1:
        lines = ", ".join(str(lam.line) for lam in main)
        return _declined(base, f"{kernel.function} picks one of {len(main)} scalar lambdas at run time (lines {lines})",
                         main[0])
    lam = main[0]
    base = Translation(op, kernel.stub, kernel=kernel.function, where=lam.where, lambda_text=lam.text,
                       branch=lam.branch, arity=len(lam.params))
    returns = (lam.returns or "").replace("const", "").strip()
    if re.search(r"tuple|pair|make_tuple|std::tie", (lam.returns or "") + lam.body):
        return _declined(base, "two outputs (the lambda returns a tuple)")
    if len(lam.params) not in (1, 2):
        return _declined(base, f"the lambda takes {len(lam.params)} operands; translated ports are unary or binary")
    out_bool = returns == "bool" or (not returns and _returns_truth(lam.body))
    parts: list[str] = []
    params: list[ScalarParam] = []
    helpers: set[str] = set()
    try:
        if floats:
            text, params, used = _branch(lam, kernel, True, out_bool)
            parts.append(text)
            helpers |= used
    except Declined as err:
        return _declined(base, err.reason)
    dtypes = [t for t in _SERVED_FLOAT if floats and any(t in x.dtypes for x in kernel.lambdas
                                                         if t == "float32" or not x.dtypes & set(_COMPLEX))]
    if len(ints) == 1:
        try:
            text, more, used = _branch(ints[0], kernel, False, out_bool)
            parts.append(text)
            helpers |= used
            params += [p for p in more if p.name not in {q.name for q in params}]
            dtypes += [t for t in _INTEGRAL if t in ints[0].dtypes]
        except Declined:
            if not floats:
                raise
    source = f"struct {op}_functor {{\n" + "".join(HELPERS[h] for h in sorted(helpers)) + "".join(parts) + "};\n"
    result = Translation(op, kernel.stub, None, kernel.function, lam.where, lam.text, lam.branch, len(lam.params),
                         out_bool, source, tuple(dtypes), tuple(params))
    if params:
        names = ", ".join(p.name for p in params)
        return replace(result, source=None, declined=f"captures scalars {names}: needs the params route")
    return result


def _declined(base: Translation, reason: str, lam: ScalarLambda | None = None) -> Translation:
    if lam is not None:
        return replace(base, declined=reason, where=lam.where, lambda_text=lam.text, branch=lam.branch)
    return replace(base, declined=reason)


def translate_stub(root: Path, stub: str, op: str, index: dict | None = None) -> Translation:
    """`translate_kernel` of the CPU kernel `stub` is registered with in the tree at `root`; a
    declined Translation when no CPU kernel file registers it."""
    from metalport.checkout.cpu_kernels import cpu_kernel_index

    index = index if index is not None else cpu_kernel_index(root)
    kernel = find_cpu_kernel(root, stub, index)
    if kernel is None and stub in index:
        path, function = index[stub]
        return Translation(op, stub, declined=f"{path.name} registers {stub} with {function}, which is no function "
                                              "written out in that file (a macro makes it?)")
    if kernel is None:
        return Translation(op, stub, declined=f"no {CPU_DIR}/*.cpp registers {stub} (REGISTER_DISPATCH)")
    try:
        return translate_kernel(kernel, op)
    except Declined as err:
        return Translation(op, stub, declined=err.reason, kernel=kernel.function)
