"""Parse the C++ subset of a CPU kernel's scalar lambda into a small tree (Note [translated subset]).

Note [translated subset]: expressions of literals, names (`std::exp`, `M_PI`), calls, casts
(`float(x)`, `static_cast<T>(x)`, `(float)x`), unary and binary operators, ternaries and
`std::numeric_limits<T>::f()`; statements `return e;`, declarations (`const auto x = e;`,
`float y(e);`), assignments (`x = e;`, `x *= e;`) and `if`/`else` blocks. Anything else (loops,
`switch`, `TORCH_CHECK`, member calls, lambdas) raises `Declined` with what it met.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Declined", "Node", "TYPE_NAMES", "parse_body", "parse_expr"]


class Declined(Exception):
    """The lambda is outside the translated subset; `reason` says what, in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Node:
    """One node: `kind` is num, name, call, cast, unary, binary, cond, limits (expressions) or
    return, decl, assign, if, block (statements); `text` the literal, name, operator or type;
    `kids` its operands in order."""

    kind: str
    text: str = ""
    kids: tuple[Node, ...] = ()


TYPE_NAMES = frozenset({
    "float", "double", "scalar_t", "opmath_t", "accscalar_t", "acc_t", "opmath_type", "acc_type", "int", "int64_t",
    "int32_t", "int16_t", "int8_t", "uint8_t", "bool", "BFloat16", "Half", "c10::Half", "c10::BFloat16", "at::Half",
    "at::BFloat16", "unsigned", "long", "T", "auto", "at::opmath_type", "at::acc_type", "vec_t",
})
_TOKEN = re.compile(r"""
    (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFlLuU]*|0[xX][0-9a-fA-F]+[uUlL]*)
  | (?P<name>(?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)
  | (?P<op><<=|>>=|\+=|-=|\*=|/=|%=|&=|\|=|\^=|==|!=|<=|>=|&&|\|\||<<|>>|->|::|[-+*/%<>=!~&|^?:;,(){}\[\].])
  | (?P<str>"(?:\\.|[^"\\])*")
  | (?P<space>\s+)
""", re.X)
_BINARY = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7, ">=": 7,
           "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}
# c10's constant templates (c10/util/MathConstants.h) -> the Metal constant of the same value
_CONSTANT_TEMPLATES = {"pi": "M_PI", "ln_2": "M_LN2", "e": "M_E", "frac_sqrt_2": "M_SQRT1_2", "log2e": "M_LOG2E",
                       "ln_10": "M_LN10", "log10e": "M_LOG10E", "frac_1_pi": "M_1_PI", "frac_2_pi": "M_2_PI",
                       "frac_2_sqrt_pi": "M_2_SQRTPI", "sqrt_2": "M_SQRT2", "pi_half": "M_PI_2"}
_TEMPLATED = ("static_cast", "numeric_limits", "opmath_type", "acc_type", "c10::convert", "convert",
              *_CONSTANT_TEMPLATES)
_LOOPS = ("for", "while", "do", "switch", "goto", "throw", "try")
_ASSIGN = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
_QUALIFIERS = ("const", "constexpr", "static", "volatile", "register")


def _tokens(text: str) -> list[str]:
    out, at = [], 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None:
            raise Declined(f"cannot read {text[at:at + 20]!r}")
        at = m.end()
        if m.lastgroup != "space":
            out.append(re.sub(r"\s+", "", m.group(0)) if m.lastgroup == "name" else m.group(0))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else ""

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if want is not None and tok != want:
            raise Declined(f"expected {want!r} but read {tok or 'the end'!r}")
        self.i += 1
        return tok

    def template_args(self) -> str:
        """The text of `<...>` at the cursor (nested brackets kept)."""
        self.take("<")
        depth, parts = 1, []
        while depth:
            tok = self.take()
            if not tok:
                raise Declined("unclosed template argument list")
            depth += tok == "<"
            depth -= tok == ">"
            depth -= 2 * (tok == ">>")
            if depth > 0:
                parts.append(tok)
        return " ".join(parts)

    # expressions
    def expr(self) -> Node:
        cond = self.binary(1)
        if self.peek() != "?":
            return cond
        then = self.between("?", ":")
        return Node("cond", "?", (cond, then, self.expr()))

    def between(self, opener: str, closer: str) -> Node:
        """The expression between the token `opener` at the cursor and `closer`."""
        self.take(opener)
        inner = self.expr()
        self.take(closer)
        return inner

    def binary(self, level: int) -> Node:
        left = self.unary()
        while _BINARY.get(self.peek(), 0) >= level:
            op = self.take()
            left = Node("binary", op, (left, self.binary(_BINARY[op] + 1)))
        return left

    def unary(self) -> Node:
        tok = self.peek()
        if tok in ("-", "+", "!", "~"):
            self.take()
            return Node("unary", tok, (self.unary(),))
        if tok == "(" and self.peek(1) in TYPE_NAMES and self.peek(2) == ")":
            self.take("(")
            kind = self.take()
            self.take(")")
            return Node("cast", kind, (self.unary(),))
        return self.postfix(self.primary())

    def postfix(self, node: Node) -> Node:
        while self.peek() in (".", "->", "["):
            raise Declined(f"member access or indexing ({self.peek()!r} after {node.text or node.kind})")
        return node

    def primary(self) -> Node:
        tok = self.take()
        if not tok:
            raise Declined("an expression ends early")
        if tok == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if tok == "[":
            raise Declined("a nested lambda")
        if tok.startswith('"'):
            raise Declined("a string literal")
        if _TOKEN.fullmatch(tok) and _TOKEN.fullmatch(tok).lastgroup == "num":
            return Node("num", tok)
        if not re.match(r"(?:::)?[A-Za-z_]", tok):
            raise Declined(f"unexpected {tok!r}")
        bare = tok.lstrip(":")
        if bare in ("true", "false"):
            return Node("num", bare)
        targs = None
        if self.peek() == "<" and bare.split("::")[-1] in [t.split("::")[-1] for t in _TEMPLATED]:
            targs = self.template_args()
            if self.peek().startswith("::"):
                bare = f"{bare}<{targs}>{self.take()}"
                targs = None
        if self.peek() == "{" and bare in TYPE_NAMES:
            return Node("cast", bare, (self.between("{", "}"),))
        if self.peek() != "(":
            if targs is not None and bare.split("::")[-1] in _CONSTANT_TEMPLATES:
                return Node("name", _CONSTANT_TEMPLATES[bare.split("::")[-1]])
            if targs is not None:
                raise Declined(f"unexpected template arguments after {bare}")
            return Node("name", bare)
        self.take("(")
        args: list[Node] = []
        while self.peek() != ")":
            args.append(self.expr())
            if self.peek() == ",":
                self.take(",")
        self.take(")")
        if "numeric_limits<" in bare:
            return Node("limits", bare, tuple(args))
        if targs is not None and bare.endswith("static_cast"):
            return Node("cast", targs, tuple(args))
        if targs is not None and bare.endswith(("opmath_type", "acc_type")):
            return Node("cast", "opmath_t", tuple(args))
        if bare in TYPE_NAMES:
            return Node("cast", bare, tuple(args))
        return Node("call", bare, tuple(args))

    # statements
    def block(self, until: str = "") -> Node:
        stmts = []
        while self.peek() != until:
            if until and not self.peek():
                raise Declined("an unclosed block")
            stmts.append(self.statement())
        return Node("block", "", tuple(stmts))

    def statement(self) -> Node:
        tok = self.peek()
        if tok in _LOOPS:
            raise Declined(f"a loop or jump ({tok})" if tok in ("for", "while", "do") else f"a `{tok}` statement")
        if tok.startswith(("TORCH_CHECK", "TORCH_INTERNAL_ASSERT", "AT_ASSERT", "CUDA_KERNEL_ASSERT")):
            raise Declined(f"{tok} in the lambda (a check the functor cannot make)")
        if tok == ";":
            self.take()
            return Node("block")
        if tok == "{":
            self.take("{")
            inner = self.block("}")
            self.take("}")
            return inner
        if tok == "using":  # a type alias (`using opmath_t = at::opmath_type<scalar_t>;`): types map by name
            self.take()
            alias = self.take()
            while self.peek() not in (";", ""):
                self.take()
            self.take(";")
            if alias not in TYPE_NAMES:
                raise Declined(f"a `using {alias}` the translator does not know")
            return Node("block")
        if tok == "return":
            return Node("return", "", (self.between("return", ";"),))
        if tok == "if":
            self.take()
            if self.peek() == "constexpr":
                raise Declined("an `if constexpr` on the element type")
            cond = self.between("(", ")")
            then = self.statement()
            other = Node("block")
            if self.peek() == "else":
                self.take()
                other = self.statement()
            return Node("if", "", (cond, then, other))
        return self.declaration_or_assignment()

    def declaration_or_assignment(self) -> Node:
        start = self.i
        quals = []
        while self.peek() in _QUALIFIERS:
            quals.append(self.take())
        kind = self.peek()
        if kind in TYPE_NAMES or kind.split("::")[-1] in ("opmath_type", "acc_type"):
            self.take()
            if self.peek() == "<":
                self.template_args()
                kind = "opmath_t"
            name = self.take()
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise Declined(f"a declaration of {name!r}")
            closer = {"(": ")", "{": "}"}.get(self.peek())
            if closer:  # `float y(e);`, `float y{e};`
                value = self.between(self.peek(), closer)
            else:
                self.take("=")
                value = self.expr()
            self.take(";")
            return Node("decl", f"{'const ' if 'const' in quals or 'constexpr' in quals else ''}{kind} {name}",
                        (value,))
        self.i = start
        name = self.take()
        if re.fullmatch(r"[A-Za-z_]\w*", name) and self.peek() in _ASSIGN:
            op = self.take()
            value = self.expr()
            self.take(";")
            return Node("assign", f"{name} {op}", (value,))
        raise Declined(f"a statement outside the subset (starting {name!r})")


def parse_expr(text: str) -> Node:
    """The expression `text`; Declined when it is outside the subset or does not end where it should."""
    p = _Parser(text)
    node = p.expr()
    if p.peek():
        raise Declined(f"unexpected {p.peek()!r} after an expression")
    return node


def parse_body(text: str) -> Node:
    """The statements of a lambda body (without its braces) as a block."""
    return _Parser(text).block()
