"""`translate_stub`: the Metal functor of the CPU kernel a stub is registered with, or why not.

Note [translate porter]: the CPU kernel's scalar lambda says what the op computes (Note [reading a
CPU kernel], checkout/cpu_kernels.py). The lambda serving float32 becomes the functor's floating
branch, computed in opmath float for float, half and bfloat16 (Note [translated numerics]); a
lambda serving the integral types becomes its integral branch, or those types are left out when it
does not translate. float64, complex and bool are never registered here. Names the lambda captures
are resolved in the kernel's body: an initializer made of literals and constants is inlined as a
local; one reading the kernel's arguments (`beta_.to<float>()`) is a scalar the host must pass.

Note [translated scalars]: such a scalar rides in the op's params struct (Note [params route],
port/plan/params.py): the functor's `operator()` takes the operands and then `const <Struct> params`,
and computes each captured name from the struct's fields as the kernel computed it from its
arguments (`negcoef = alpha.to<float>() * scale.to<float>()` becomes `const float negcoef =
params.alpha * params.scale;`, `.to<T>()` read as the opmath float the field already is). The
kernel's scalar arguments line up with the stub's, one field each, named as the schema names them
(`fields`: hardtanh_backward's `min`, `max` are fields `min_val`, `max_val`). A kernel argument read
through anything but a plain conversion (`iter.dtype()`, a member call) is declined. Everything
outside the subset is declined with its reason, and the op goes to a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from collections.abc import Iterator, Sequence
from pathlib import Path

from metalport.checkout.cpp import closing, split_top_level
from metalport.checkout.cpu_kernels import CPU_DIR, CpuKernel, ScalarLambda, find_cpu_kernel
from metalport.port.translate.cxx import Declined, Node, parse_body, parse_expr
from metalport.port.translate.emit import HELPERS, Emitter
from metalport.port.translate.pick import picked_chain

__all__ = ["ScalarParam", "Translation", "translate_kernel", "translate_stub"]

_FLOAT_RET = "::metal::enable_if_t<::c10::metal::is_scalar_floating_point_v<T>, {out}>"
_INT_RET = "::metal::enable_if_t<!::metal::is_floating_point_v<T>, {out}>"
_INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
_SERVED_FLOAT = ("float32", "float16", "bfloat16")
_COMPLEX = ("complex32", "complex64", "complex128")


@dataclass(frozen=True)
class ScalarParam:
    """A scalar argument of the CPU kernel the lambda reads: the params struct field carrying it
    (`beta`), the kernel argument as declared (`const Scalar& beta_`) and the lambda's name it feeds
    (`beta`, computed from it in the kernel as `beta_.to<opmath_t>()`)."""

    name: str
    argument: str
    captured: str


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
    params: tuple[ScalarParam, ...] = field(default=())  # the kernel's scalars the lambda reads
    params_struct: str | None = None  # the struct the functor takes after its operands (None: no scalars)

    @property
    def ok(self) -> bool:
        """True when the lambda became a functor."""
        return self.source is not None


def _nodes(n: Node) -> Iterator[Node]:
    """`n` and every node below it, each before its kids."""
    yield n
    for k in n.kids:
        yield from _nodes(k)


def _names(n: Node) -> list[str]:
    return [x.text.lstrip(":") for x in _nodes(n) if x.kind == "name"]


_STATEMENT = re.compile(r"^((?:(?:const|constexpr|static)\s+)*)([\w:]+(?:\s*<[^;=(){}]*>)?)\s+([A-Za-z_].*)$", re.S)
_DECLARATOR = re.compile(r"^([A-Za-z_]\w*)\s*(?:=\s*(.+)|\((.*)\)|\{(.*)\})$", re.S)


def _after_blocks(statement: str) -> str:
    """`statement` after the last brace opening or closing a block (`[&]() {`, `} else {`); the
    braces of a brace initializer (`one_half{0.5f}`) stay."""
    cut = 0
    for m in re.finditer(r"[{}]", statement):
        before, after = statement[:m.start()].rstrip(), statement[m.end():].lstrip()
        keyword = re.search(r"\b(?:else|do|try)$", before) is not None
        if m.group() == "{" and (keyword or not (before[-1:].isalnum() or before[-1:] == "_")):
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


_TO = re.compile(r"\.\s*to\s*<[^<>()]*>\s*\(\s*\)")


def _resolve(lam: ScalarLambda, kernel: CpuKernel, free: list[str], emitter: Emitter, fields: dict[str, str]
             ) -> tuple[list[str], list[ScalarParam]]:
    """Lines declaring the names `free` reads (constants, and the scalars computed from the params
    struct's fields, Note [translated scalars]) and the kernel arguments read (in order met)."""
    lines: list[str] = []
    params: list[ScalarParam] = []
    args = _kernel_params(kernel)
    seen: set[str] = set()

    def argument(name: str, captured: str) -> str:
        if name not in fields:
            raise Declined(f"reads the kernel argument {name} ({args[name]}), which no params field carries")
        if name not in {p.argument.split()[-1] for p in params}:
            params.append(ScalarParam(fields[name], f"{args[name]} {name}", captured))
        return f"params.{fields[name]}"

    def visit(name: str, depth: int) -> None:
        if name in seen or name in emitter.names:
            return
        seen.add(name)
        found = _declaration(lam.before, name)
        if found is None:
            if name in args:
                emitter.names[name] = argument(name, name)
                return
            emitter.expr(Node("name", name))  # a constant such as M_PI, or Declined naming it
            return
        kind, init = found
        vector = _VEC_TYPE.match(kind)
        if vector is not None:  # Note [vector masks]: a vector of one value stands for the value
            kind = vector.group(1) or "auto"
            made = _VEC_OF.match(init)
            if made is not None and closing(init, made.end() - 1) == len(init.rstrip()) - 1:
                init = init[made.end():-1]  # `Vec(threshold)`: the value
        elif "Vectorized" in kind or kind.startswith(("Vec", "vec")):
            raise Declined(f"reads {name}, a vector the scalar lambda cannot use")
        if re.search(r"\biter\b|\bit\b", init):
            raise Declined(f"reads {name} = {init}, which the iterator decides on the host")
        words = set(re.findall(r"[A-Za-z_]\w*", init))
        if words & set(args):
            init = _TO.sub("", init)  # the field is opmath float already (Note [translated scalars])
        elif _TO.search(init):
            raise Declined(f"reads {name} = {init}, a conversion of no kernel argument")
        value = parse_expr(init)
        if depth > 8:
            raise Declined(f"{name} is defined through too many other names")
        for other in _names(value):
            if other in args and other not in emitter.names:
                emitter.names[other] = argument(other, name)
            else:
                visit(other, depth + 1)
        text = emitter.expr(value)
        metal = emitter.type_of(kind)
        metal = "float" if metal == "auto" and emitter.floating else metal
        if metal == "float" and kind.split("::")[-1] == "scalar_t" and lam.dtypes & {"float16", "bfloat16"}:
            text = f"static_cast<float>(static_cast<T>({text}))"  # the element type's value, as the CPU holds it
        emitter.names[name] = name
        lines.append(f"    const {metal} {name} = {text};" if metal != "T" else
                     f"    const T {name} = static_cast<T>({text});")

    for name in free:
        visit(name, 0)
    return lines, params


def _branch(pieces: list[tuple[str | None, ScalarLambda]], kernel: CpuKernel, floating: bool, out_bool: bool,
            fields: dict[str, str], struct: str | None) -> tuple[str, list[ScalarParam], set[str]]:
    """One `operator()` of the functor, translated from the lambda of `pieces` (one, with no
    condition) or from the if/else chain the kernel picks its lambdas by (Note [lambdas picked at
    run time]), and the scalars it reads; it takes the params struct `struct` after the operands
    when the kernel takes scalars (None: it takes none)."""
    lams = [lam for _, lam in pieces]
    if any("complex" in t for lam in lams for t, _ in lam.params):
        raise Declined("a lambda over complex values")
    if len({len(lam.params) for lam in lams}) > 1:
        raise Declined("its scalar lambdas take different numbers of operands")
    bodies = [parse_body(lam.body) for lam in lams]
    conds = [parse_expr(c) if c is not None else None for c, _ in pieces]
    emitter = Emitter(floating, {p: p for lam in lams for _, p in lam.params})
    local = {x.text.split(" ")[-1] for b in bodies for x in _nodes(b) if x.kind == "decl"} | set(emitter.names)
    read = [n for b in (*bodies, *(c for c in conds if c is not None)) for n in _names(b)]
    free = [n for n in dict.fromkeys(read) if n not in local and not _is_constant(n)]
    last = max(lams, key=lambda lam: len(lam.before))
    consts, params = _resolve(last, kernel, free, emitter, fields)
    wide = "float" if floating else "T"

    def head(lam: ScalarLambda, indent: str) -> list[str]:
        body = bodies[lams.index(lam)]
        assigned = {x.text.split(" ")[0] for x in _nodes(body) if x.kind == "assign"}  # `x = ...`, `x *= ...`
        const = {p: "" if p in assigned else "const " for _, p in lam.params}
        return [f"{indent}{const[p]}{wide} {p} = static_cast<{wide}>(in{i});" if floating else
                f"{indent}{const[p]}T {p} = in{i};" for i, (_, p) in enumerate(lam.params)]

    if len(pieces) == 1:
        lines = [*head(lams[0], "    "), *consts, *emitter.statements(bodies[0], "    ")]
    else:
        lines = list(consts)
        for k, (cond, body) in enumerate(zip(conds, bodies)):
            opener = "if" if k == 0 else "} else if"
            lines.append(f"    {opener} ({emitter.expr(cond)}) {{" if cond is not None else "    } else {")
            lines += [*head(lams[k], "      "), *emitter.statements(body, "      ")]
        lines.append("    }")
        if conds[-1] is not None:
            raise Declined("its if/else chain has no final `else` (a case computing nothing)")
    if not any("return " in line for line in lines):
        raise Declined("a lambda with no return")
    n = len(lams[0].params)
    ins = ", ".join([*(f"const T in{i}" for i in range(n)), *([f"const {struct} params"] if struct else [])])
    ret = (_FLOAT_RET if floating else _INT_RET).format(out="bool" if out_bool else "T")
    cast = "static_cast<bool>(" if out_bool else "static_cast<T>("
    text = "\n".join(["  template <typename T>", f"  inline {ret} operator()({ins}) {{",
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

    def truth(n: Node) -> bool:
        if n.kind in ("binary", "unary"):
            return n.text in _TRUTH_OPS
        if n.kind == "call":
            return n.text.split("::")[-1] in _TRUTH_CALLS
        return n.kind == "num" and n.text in ("true", "false")

    found = [n.kids[0] for n in _nodes(tree) if n.kind == "return"]
    return bool(found) and all(truth(r) for r in found)


# Note [vector masks]: `cpu_kernel_vec` runs its vectorized lambda over contiguous runs and the
# scalar one only on leftovers and strided inputs, so what torch CPU computes for most elements is
# the vectorized lambda's. The two agree except where the vectorized one selects by a comparison
# mask (`blendv(a, b, mask)`, `mask & v`): a NaN operand fails every comparison, so it lands on the
# side the mask sends it, which the scalar lambda's own test may not (hardtanh_backward's scalar
# lambda passes grad through at a NaN input, its vectorized one gives 0; logit_backward's
# eps >= 0 lambda gives NaN at a NaN input, its vectorized one 0). Such a vectorized lambda is
# translated in its place: `blendv(a, b, m)` becomes `m ? b : a`, `m & v` becomes `m ? v : 0`, a
# mask `&`/`|` a mask the logical operator; captured vector constants (`kZeroVec(scalar_t(0))`)
# stand for their one element. One outside that subset (member calls such as `.abs()`, helper
# types) leaves the scalar lambda translated.
_COMPARE = ("==", "!=", "<", ">", "<=", ">=")
_BLENDV = re.compile(r"\b(?:(?:at::)?(?:vec::)?Vectorized\s*<[^<>;]*>|Vec)\s*::\s*blendv\b")
_VEC_OF = re.compile(r"^\s*(?:(?:at::)?(?:vec::)?Vectorized\s*<[^<>;]*>|Vec)\s*\(")  # a vector made of one value
_VEC_TYPE = re.compile(r"^(?:const\s+)?(?:(?:at::)?(?:vec::)?Vectorized\s*<\s*([\w:]+)\s*>|Vec\w*)\s*&?$")


def _is_mask(n: Node) -> bool:
    return n.kind == "binary" and (n.text in _COMPARE or (n.text in ("&", "|") and all(map(_is_mask, n.kids))))


def _unmask(n: Node, selected: list[int]) -> Node:
    """`n` with the vectorized lambda's mask selections written as scalar ones (Note [vector masks])."""
    kids = tuple(_unmask(k, selected) for k in n.kids)
    if n.kind == "call" and n.text == "blendv":
        if len(n.kids) != 3 or not _is_mask(n.kids[2]):
            raise Declined("a blendv whose mask is no comparison")
        selected.append(1)
        return Node("cond", "?", (kids[2], kids[1], kids[0]))
    if n.kind == "binary" and n.text in ("&", "|"):
        masks = [_is_mask(k) for k in n.kids]
        if all(masks):
            return Node("binary", n.text * 2, kids)
        if n.text == "&" and any(masks):
            selected.append(1)
            mask, value = (kids[0], kids[1]) if masks[0] else (kids[1], kids[0])
            return Node("cond", "?", (mask, value, Node("cast", "scalar_t", (Node("num", "0"),))))
        raise Declined(f"a bitwise {n.text} of values")
    return Node(n.kind, n.text, kids)


def _cxx(n: Node) -> str:
    """C++ text of a statement or expression tree (what `parse_body` reads back)."""
    k, kids = n.kind, [_cxx(c) for c in n.kids]
    if k in ("num", "name"):
        return n.text
    if k in ("call", "limits"):
        return f"{n.text}({', '.join(kids)})"
    if k == "cast":
        return f"static_cast<{n.text}>({kids[0]})"
    if k == "unary":
        return f"({n.text}{kids[0]})"
    if k == "binary":
        return f"({kids[0]} {n.text} {kids[1]})"
    if k == "cond":
        return f"({kids[0]} ? {kids[1]} : {kids[2]})"
    if k == "return":
        return f"return {kids[0]};"
    if k == "decl":
        return f"{n.text} = {kids[0]};"
    if k == "assign":
        return f"{n.text} {kids[0]};"
    if k == "if":
        return f"if ({kids[0]}) {{ {kids[1]} }} else {{ {kids[2]} }}"
    return " ".join(kids)


def _vector_form(lam: ScalarLambda) -> ScalarLambda | None:
    """The scalar lambda standing for `lam`'s vectorized one where that selects by a mask (Note
    [vector masks]), None where it does not or falls outside the subset."""
    if lam.vector is None:
        return None
    vparams, body, line, text = lam.vector
    if len(vparams) != len(lam.params) or not all(_VEC_TYPE.match(t) for t, _ in vparams):
        return None
    selected: list[int] = []
    try:
        tree = _unmask(parse_body(_BLENDV.sub("blendv", body)), selected)
    except Declined:
        return None
    if not selected:
        return None
    shown = f"// the vectorized lambda (contiguous inputs run it; it selects by a mask)\n{text}"
    return replace(lam, line=line, params=tuple(("scalar_t", name) for _, name in vparams), body=_cxx(tree),
                   text=shown, vector=None)


def _is_constant(name: str) -> bool:
    return name in ("NAN", "INFINITY", "true", "false") or bool(re.fullmatch(r"M_[A-Z0-9_]+", name))


def _pick(lams: list[ScalarLambda], dtypes: tuple[str, ...]) -> list[ScalarLambda]:
    """The distinct lambdas (by body) serving any of `dtypes`."""
    out: dict[str, ScalarLambda] = {}
    for lam in lams:
        if lam.dtypes & set(dtypes):
            out.setdefault(re.sub(r"\s+", "", lam.body), lam)
    return list(out.values())


_CARRIED = re.compile(r"^(?:const\s+)?(?:(?:(?:c10|at)::)?(?:Scalar|double|float|int64_t|bool)|std::optional<double>)$")


def _fields(kernel: CpuKernel, fields: Sequence[str] | None) -> dict[str, str]:
    """Kernel scalar argument -> params field (Note [translated scalars]): `fields` in the kernel's
    argument order, or the argument's own name less a trailing `_`/`_scalar` when not given.
    Declined when an argument is no scalar a params struct carries or the counts differ."""
    args = list(_kernel_params(kernel).items())
    if len(args) != len(kernel.params):
        raise Declined(f"{kernel.function} takes ({', '.join(kernel.params)}), arguments the translator cannot name")
    for name, kind in args:
        if not _CARRIED.match(kind.strip()):
            raise Declined(f"{kernel.function} takes {kind} {name}, which no params struct field carries")
    if fields is None:
        fields = [re.sub(r"(?:_scalar|_)$", "", name) for name, _ in args]
    if len(fields) != len(args):
        raise Declined(f"{kernel.function} takes {len(args)} scalar(s) ({', '.join(n for n, _ in args)}) but its "
                       f"stub passes {len(fields)} ({', '.join(fields)})")
    return {name: field for (name, _), field in zip(args, fields)}


def translate_kernel(kernel: CpuKernel, op: str, fields: Sequence[str] | None = None,
                     struct: str | None = None) -> Translation:
    """The functor `{op}_functor` translated from `kernel`'s scalar lambdas, or a declined
    Translation with the reason (Note [translate porter]). A kernel taking scalars gets a functor
    reading them from the params struct `struct` (default `params_type_name(op)`), whose fields
    `fields` name them in the kernel's argument order (Note [translated scalars])."""
    from metalport.port.plan.params import params_type_name

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
    lam = main[0]
    pieces: list[tuple[str | None, ScalarLambda]] = [(None, lam)]
    if len(main) > 1:  # Note [lambdas picked at run time]
        try:
            pieces = picked_chain(main)
        except Declined as err:
            lines = ", ".join(str(x.line) for x in main)
            return _declined(base, f"{kernel.function} picks one of {len(main)} scalar lambdas at run time (lines "
                                   f"{lines}): {err.reason}", main[0])
        lam = pieces[0][1]
    vector_pieces = [(c, _vector_form(x) or x) for c, x in pieces] if floats else pieces
    shown = _shown(pieces)
    base = Translation(op, kernel.stub, kernel=kernel.function, where=lam.where, lambda_text=shown,
                       branch=lam.branch, arity=len(lam.params))
    returns = (lam.returns or "").replace("const", "").strip()
    if any(re.search(r"tuple|pair|make_tuple|std::tie", (x.returns or "") + x.body) for _, x in pieces):
        return _declined(base, "two outputs (the lambda returns a tuple)")
    if len(lam.params) not in (1, 2):
        return _declined(base, f"the lambda takes {len(lam.params)} operands; translated ports are unary or binary")
    out_bool = returns == "bool" or (not returns and _returns_truth(lam.body))
    parts: list[str] = []
    params: list[ScalarParam] = []
    helpers: set[str] = set()
    try:
        named = _fields(kernel, fields)
        struct = (struct or params_type_name(op)) if named else None
        if floats:
            try:  # Note [vector masks]: the vectorized lambdas where they select by a mask
                text, params, used = _branch(vector_pieces, kernel, True, out_bool, named, struct)
                pieces = vector_pieces
            except Declined:
                if vector_pieces == pieces:
                    raise
                text, params, used = _branch(pieces, kernel, True, out_bool, named, struct)
            parts.append(text)
            helpers |= used
    except Declined as err:
        return _declined(base, err.reason)
    dtypes = [t for t in _SERVED_FLOAT if floats and any(t in x.dtypes for x in kernel.lambdas
                                                         if t == "float32" or not x.dtypes & set(_COMPLEX))]
    if ints:
        try:
            int_pieces = [(None, ints[0])] if len(ints) == 1 else picked_chain(ints)
            text, more, used = _branch(int_pieces, kernel, False, out_bool, named, struct)
            parts.append(text)
            helpers |= used
            params += [p for p in more if p.name not in {q.name for q in params}]
            dtypes += [t for t in _INTEGRAL if all(t in x.dtypes for _, x in int_pieces)]
        except Declined:
            if not floats:
                raise
    lam, shown = pieces[0][1], _shown(pieces)
    source = f"struct {op}_functor {{\n" + "".join(HELPERS[h] for h in sorted(helpers)) + "".join(parts) + "};\n"
    return Translation(op, kernel.stub, None, kernel.function, lam.where, shown, lam.branch, len(lam.params),
                       out_bool, source, tuple(dtypes), tuple(params), struct)


def _shown(pieces: list[tuple[str | None, ScalarLambda]]) -> str:
    """The lambda(s) translated, as the plan shows them (with their conditions when picked at run time)."""
    if len(pieces) == 1:
        return pieces[0][1].text
    return "\n".join(f"// {'if (' + c + ')' if c else 'else'}: line {x.line}\n{x.text}" for c, x in pieces)


def _declined(base: Translation, reason: str, lam: ScalarLambda | None = None) -> Translation:
    if lam is not None:
        return replace(base, declined=reason, where=lam.where, lambda_text=lam.text, branch=lam.branch)
    return replace(base, declined=reason)


def translate_stub(root: Path, stub: str, op: str, index: dict | None = None, fields: Sequence[str] | None = None,
                   struct: str | None = None) -> Translation:
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
        return translate_kernel(kernel, op, fields, struct)
    except Declined as err:
        return Translation(op, stub, declined=err.reason, kernel=kernel.function)
