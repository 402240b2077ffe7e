"""Write a parsed scalar lambda (`cxx.Node`) as Metal in c10/metal style.

Note [translated numerics]: a floating branch computes in opmath `float` (half and bfloat16
operands are widened first, as `at::opmath_type` does on the CPU), every floating literal gets an
`f` suffix (Metal has no double) and `std::` math maps to `::metal::precise::` or its `c10::metal`
counterpart (`log1p`, `erfinv`, `i0`, ...): never to a fast approximation. `std::max`/`std::min`
keep C++'s order-dependent NaN rule (`a < b ? b : a`), which `::metal::max` does not. An integral
branch computes in the element type `T`.
"""

from __future__ import annotations

import re

from metalport.port.translate.cxx import Declined, Node

__all__ = ["FUNCTIONS", "HELPERS", "Emitter"]

_PRECISE = ("exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "cbrt", "sin", "cos", "tan", "asin", "acos",
            "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "atan2", "pow", "fmod")
_METAL = ("floor", "ceil", "trunc", "round", "rint", "copysign", "fmin", "fmax", "isnan", "isinf", "isfinite",
          "signbit", "fabs", "nextafter")
_C10 = {"log1p": "log1p", "expm1": "expm1f", "erf": "erf", "erfc": "erfc", "erfinv": "erfinv", "calc_erfinv": "erfinv",
        "lgamma": "log_gamma", "tgamma": "gamma", "digamma": "digamma", "calc_digamma": "digamma",
        "trigamma": "trigamma", "calc_trigamma": "trigamma", "calc_i0": "i0", "calc_i0e": "i0e", "calc_i1": "i1",
        "calc_i1e": "i1e", "calc_erfcx": "erfcx", "erfcx": "erfcx", "zeta": "zeta", "xlogy": "xlogy",
        "xlog1py": "xlog1py", "hypot": "hypot", "entr": "entr", "sinc": "sinc", "calc_igamma": "igamma",
        "calc_igammac": "igammac",
        **{n: n for n in ("bessel_j0_forward", "bessel_j1_forward", "bessel_y0_forward", "bessel_y1_forward",
                          "modified_bessel_i0_forward", "modified_bessel_i1_forward", "modified_bessel_k0_forward",
                          "modified_bessel_k1_forward", "scaled_modified_bessel_k0_forward",
                          "scaled_modified_bessel_k1_forward", "spherical_bessel_j0", "chebyshev_polynomial_t_forward",
                          "chebyshev_polynomial_u_forward", "chebyshev_polynomial_v_forward",
                          "chebyshev_polynomial_w_forward", "hermite_polynomial_h_forward",
                          "hermite_polynomial_he_forward", "shifted_chebyshev_polynomial_t_forward",
                          "shifted_chebyshev_polynomial_u_forward", "shifted_chebyshev_polynomial_v_forward",
                          "shifted_chebyshev_polynomial_w_forward")}}
# CPU spelling (namespace dropped) -> Metal function; `_minmax` and `abs` are handled apart.
FUNCTIONS: dict[str, str] = {
    **{f: f"::metal::precise::{f}" for f in _PRECISE}, **{f: f"::metal::{f}" for f in _METAL},
    **{f"{f}f": f"::metal::precise::{f}" for f in _PRECISE}, "nearbyint": "::metal::rint",
    "_isnan": "::metal::isnan", "_isinf": "::metal::isinf", **{k: f"::c10::metal::{v}" for k, v in _C10.items()},
}
_NAMESPACES = re.compile(r"^(?:::)?(?:std|c10|at|at::native|at::vec|c10::cuda::compat|::std)::")
_CONSTANTS = {f"M_{c}": f"M_{c}_F" for c in ("PI", "PI_2", "PI_4", "1_PI", "2_PI", "2_SQRTPI", "SQRT2", "SQRT1_2",
                                             "E", "LN2", "LN10", "LOG2E", "LOG10E")}
_LIMITS = {"infinity", "quiet_NaN", "lowest", "max", "min", "epsilon", "denorm_min"}
# C++ type name (namespace dropped) -> its Metal type; the element types are opmath float or `T` (`Emitter.type_of`)
_FIXED_TYPES = {"auto": "auto", "bool": "bool", "int64_t": "long", "long": "long", "int": "int", "int32_t": "int",
                "unsigned": "int", "float": "float", "double": "float"}
_ELEMENT_TYPES = ("scalar_t", "opmath_t", "accscalar_t", "acc_t", "opmath_type", "acc_type", "BFloat16", "Half", "T",
                  "vec_t")


# std::max / std::min as C++ defines them: the first argument wins an unordered comparison; std::hypot
# as C defines it.
HELPERS = {
    "max": "  template <typename U>\n  static U cpp_max(const U a, const U b) {\n    return a < b ? b : a;\n  }\n",
    "min": "  template <typename U>\n  static U cpp_min(const U a, const U b) {\n    return b < a ? b : a;\n  }\n",
    # C's hypot: an infinite operand wins over a NaN; c10::metal::hypot orders its operands as if
    # both were >= 0 and lets max/min drop a NaN, so it gets magnitudes of finite, non-NaN values.
    "hypot": ("  static float cpp_hypot(const float a, const float b) {\n"
              "    if (::metal::isinf(a) || ::metal::isinf(b)) {\n      return INFINITY;\n    }\n"
              "    if (::metal::isnan(a) || ::metal::isnan(b)) {\n      return NAN;\n    }\n"
              "    return ::c10::metal::hypot(::metal::fabs(a), ::metal::fabs(b));\n  }\n"),
}


class Emitter:
    """Metal text for expressions and statements of one branch: `floating` computes in opmath float,
    else in `T`. `names` maps every name the lambda may read (parameters, locals, constants) to its
    Metal spelling; declarations add to it as they are emitted."""

    def __init__(self, floating: bool, names: dict[str, str]) -> None:
        self.floating = floating
        self.names = dict(names)
        self.helpers: set[str] = set()  # `cpp_max`/`cpp_min` the branch calls (HELPERS)

    def type_of(self, cpp: str) -> str:
        """The Metal type for a C++ type name of the lambda."""
        base = cpp.split("::")[-1]
        if base in _ELEMENT_TYPES:
            return "float" if self.floating else "T"
        if base not in _FIXED_TYPES:
            raise Declined(f"the type {cpp!r}")
        return _FIXED_TYPES[base]

    def expr(self, n: Node) -> str:
        """`n` as a Metal expression (fully parenthesised where precedence could matter)."""
        if n.kind == "num":
            return self._number(n.text)
        if n.kind == "name":
            return self._name(n.text)
        if n.kind == "unary":
            return f"{n.text}({self.expr(n.kids[0])})" if n.kids[0].kind in ("binary", "cond") \
                else f"{n.text}{self.expr(n.kids[0])}"
        if n.kind == "binary":
            return f"({self.expr(n.kids[0])} {n.text} {self.expr(n.kids[1])})"
        if n.kind == "cond":
            return f"({self.expr(n.kids[0])} ? {self.expr(n.kids[1])} : {self.expr(n.kids[2])})"
        if n.kind == "cast":
            if len(n.kids) != 1:
                raise Declined(f"a cast to {n.text} with {len(n.kids)} arguments")
            return f"static_cast<{self.type_of(n.text)}>({self.expr(n.kids[0])})"
        if n.kind == "limits":
            return self._limits(n.text)
        if n.kind == "call":
            return self._call(n)
        raise Declined(f"a {n.kind} where an expression belongs")

    def _number(self, text: str) -> str:
        if text in ("true", "false"):
            return text
        if text.lower().startswith("0x"):
            return text.rstrip("uUlL")
        digits = text.rstrip("fFlLuU")
        floating = any(c in digits for c in ".eE")
        if floating:
            return (digits + "0" if digits.endswith(".") else digits) + "f"
        return digits

    def _name(self, name: str) -> str:
        bare = name.lstrip(":")
        if bare in self.names:
            return self.names[bare]
        if bare in _CONSTANTS:
            return _CONSTANTS[bare]
        if bare in ("NAN", "INFINITY"):
            return bare
        raise Declined(f"reads {bare}, which the lambda does not define")

    def _limits(self, text: str) -> str:
        m = re.fullmatch(r"(?:::)?(?:std::)?numeric_limits<(.+)>::(\w+)", text)
        if m is None or m.group(2) not in _LIMITS:
            raise Declined(f"{text}, which has no Metal counterpart")
        kind = self.type_of(m.group(1).strip())
        if kind == "float" and m.group(1).strip() != "float" and self.floating:
            # the element type's own limit (half's epsilon is not float's), widened to opmath
            return f"static_cast<float>(::metal::numeric_limits<T>::{m.group(2)}())"
        return f"::metal::numeric_limits<{kind}>::{m.group(2)}()"

    def _call(self, n: Node) -> str:
        name = _NAMESPACES.sub("", n.text.lstrip(":"))
        args = [self.expr(k) for k in n.kids]
        if name in ("max", "min") and len(args) == 2:
            self.helpers.add(name)
            return f"cpp_{name}({args[0]}, {args[1]})"
        if name in ("abs", "fabs") and len(args) == 1:
            return f"::metal::{'fabs' if self.floating else 'abs'}({args[0]})"
        if name == "isnan" and not self.floating:
            return "false"
        if name == "hypot" and len(args) == 2 and self.floating:
            self.helpers.add("hypot")
            return f"cpp_hypot({args[0]}, {args[1]})"
        target = FUNCTIONS.get(name)
        if target is None:
            raise Declined(f"calls {n.text}, which has no Metal counterpart in the function map")
        if not self.floating and target.startswith(("::metal::precise::", "::c10::metal::")):
            raise Declined(f"calls {n.text} in an integral branch")
        return f"{target}({', '.join(args)})"

    def statements(self, block: Node, indent: str) -> list[str]:
        """The lines of a statement block; `return` casts to the functor's result via `RESULT(...)`."""
        out: list[str] = []
        for s in block.kids:
            if s.kind == "block":
                out += self.statements(s, indent)
            elif s.kind == "return":
                out.append(f"{indent}return RESULT({self.expr(s.kids[0])});")
            elif s.kind == "decl":
                const, _, rest = s.text.rpartition("const ")
                kind, name = (rest if _ else s.text).split(" ")
                value = self.expr(s.kids[0])
                metal = self.type_of(kind)
                local = f"{name}_" if name == "T" or re.fullmatch(r"in\d+", name) else name
                self.names[name] = local
                out.append(f"{indent}{'const ' if _ else ''}{metal} {local} = {value};")
            elif s.kind == "assign":
                name, op = s.text.split(" ")
                if name not in self.names:
                    raise Declined(f"assigns {name}, which the lambda does not declare")
                out.append(f"{indent}{self.names[name]} {op} {self.expr(s.kids[0])};")
            elif s.kind == "if":
                out.append(f"{indent}if ({self.expr(s.kids[0])}) {{")
                out += self.statements(_as_block(s.kids[1]), indent + "  ")
                other = _as_block(s.kids[2])
                if other.kids:
                    out.append(f"{indent}}} else {{")
                    out += self.statements(other, indent + "  ")
                out.append(f"{indent}}}")
            else:
                raise Declined(f"a {s.kind} statement")
        return out


def _as_block(n: Node) -> Node:
    return n if n.kind == "block" else Node("block", "", (n,))
