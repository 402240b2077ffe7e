"""The host-expression language of launch specs (Note [spec checks]): argument checks, `dims:`
output shapes, params `from:` values and `geometry.threads`, written in the common subset of Python
and C++ so that the emulated host evaluates them (`evaluate`) and `hostgen` writes them as C++.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from metalport.errors import SpecError
from metalport import python_ast

if TYPE_CHECKING:
    from metalport.port.spec.model import CheckSpec


def spec_error(op: str, where: str, what: str, hint: str | None = None) -> SpecError:
    """The one-line error of a spec, naming the field: `spec mode: geometry.threadgroup: ...`."""
    return SpecError(f"spec {op}: {where}: {what}", hint=hint)


# Note [spec checks]: `checks:` entries are the argument checks of the host function, run before
# any allocation: hostgen writes each as `TORCH_CHECK(<require>, <message parts>)` and the emulated
# host (speclaunch) raises HostCheckFailed with the same message, so conformance can demand that a
# call torch's CPU kernel refuses is refused by the port too, with torch's words. A condition is
# written in the common subset of Python and C++: comparisons, and/or/not, numbers, scalar
# arguments, a Tensor argument's `dim()`, `numel()` and `size(d)`, and `wrap(d, n)` (a dim wrapped
# into [0, n), `maybe_wrap_dim`); a message's `{...}` parts are such expressions too.
# The same host expressions give `dims:` output shapes and params `from:` values: they may also
# use + - * //, `a if cond else b` (C++ `?:`), and over an int[] argument len(x), max(x), min(x),
# sum(x) (max/min of two ints too).
_CHECK_NODES = (ast.Expression, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Name, ast.Load, ast.Constant, ast.And,
                ast.Or, ast.Not, ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Call,
                ast.Attribute, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.IfExp)
CHECK_TENSOR_METHODS = ("dim", "numel", "size")
LIST_FUNCTIONS = ("len", "max", "min", "sum")  # over an int[] argument (max/min: or of two ints)


def _fine_call(node: ast.Call) -> bool:
    if node.keywords:
        return False
    if isinstance(node.func, ast.Name):
        if node.func.id == "wrap":
            return len(node.args) == 2
        return node.func.id in LIST_FUNCTIONS and (len(node.args) == 1 or
                                                   (node.func.id in ("max", "min") and len(node.args) == 2))
    return isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
        and node.func.attr in CHECK_TENSOR_METHODS


def check_expression(text: str, where: str, op: str) -> ast.Expression:
    """The parsed `text`; SpecError naming `where` when it is no host expression."""
    try:
        tree = python_ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise spec_error(op, where, f"{text!r} is not an expression") from None
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        bad = not isinstance(node, _CHECK_NODES) or \
            (isinstance(node, ast.Constant) and not isinstance(node.value, (int, float))) or \
            (isinstance(node, ast.Call) and not _fine_call(node)) or \
            (isinstance(node, ast.Attribute) and (node.attr not in CHECK_TENSOR_METHODS or id(node) not in called))
        if bad:
            raise spec_error(op, where, f"{text!r} uses {type(node).__name__}",
                        hint="only comparisons, and/or/not, + - * //, a if c else b, numbers, arguments, "
                             "t.dim() t.numel() t.size(d), wrap(d, n), len/max/min/sum of an int[]")
    return tree


def message_parts(message: str) -> list[tuple[str, str | None]]:
    """(text, expression or None) pieces of a check message."""
    return [(text, name) for text, name, _, _ in string.Formatter().parse(message)]


def evaluate(tree: ast.AST, values: Mapping[str, Any]) -> Any:
    """The value of a validated host expression for argument `values`; IndexError/RuntimeError as
    the host's C++ would throw (`t.size(d)` past its dims), ExpressionError for anything else."""
    try:
        return _evaluate(tree, values)
    except (IndexError, RuntimeError):
        raise
    except (TypeError, ValueError, KeyError, ZeroDivisionError, AttributeError) as err:
        text = ast.unparse(tree)
        raise ExpressionError(f"{text!r} cannot be evaluated for this call ({type(err).__name__}: {err})") from None


def _evaluate(tree: ast.AST, values: Mapping[str, Any]) -> Any:

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.Call):
            args = [ev(x) for x in node.args]
            if isinstance(node.func, ast.Name) and node.func.id != "wrap":
                if len(args) == 2:
                    return max(args) if node.func.id == "max" else min(args)
                items = [int(v) for v in args[0]]
                if node.func.id == "len":
                    return len(items)
                if node.func.id == "sum":
                    return sum(items)
                return (max if node.func.id == "max" else min)(items, default=0)
            if isinstance(node.func, ast.Name):  # wrap(d, n)
                d, n = args
                return d % n if n else d
            assert isinstance(node.func, ast.Attribute)
            return int(getattr(ev(node.func.value), node.func.attr)(*args))
        if isinstance(node, ast.UnaryOp):
            return (not ev(node.operand)) if isinstance(node.op, ast.Not) else -ev(node.operand)
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.FloorDiv):
                quotient = abs(a) // abs(b)  # C++ integer division truncates toward zero
                return quotient if (a < 0) == (b < 0) else -quotient
            return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}[type(node.op)]
        if isinstance(node, ast.BoolOp):
            parts = (bool(ev(v)) for v in node.values)
            return all(parts) if isinstance(node.op, ast.And) else any(parts)
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op_, right_node in zip(node.ops, node.comparators):
                right = ev(right_node)
                ok = {ast.Eq: left == right, ast.NotEq: left != right, ast.Lt: left < right,
                      ast.LtE: left <= right, ast.Gt: left > right, ast.GtE: left >= right}[type(op_)]
                if not ok:
                    return False
                left = right
            return True
        raise ValueError(ast.dump(node))

    return ev(tree)


def check_holds(check: CheckSpec, values: Mapping[str, Any]) -> bool:
    """Whether the call with argument `values` passes `check` (a validated CheckSpec)."""
    return bool(evaluate(python_ast.parse(check.require, mode="eval"), values))


def check_message(check: CheckSpec, values: Mapping[str, Any]) -> str:
    """The check's message for argument `values`, each value streamed as C++ would (bools as 1/0)."""
    out = []
    for text, name in message_parts(check.message):
        out.append(text)
        if name:
            value = evaluate(python_ast.parse(name.strip(), mode="eval"), values)
            out.append(str(int(value) if isinstance(value, bool) else value))
    return "".join(out)


def host_value(expr: str, values: Mapping[str, Any]) -> int:
    """The value of a validated host expression (a `dims:` entry, a params `from:`) for argument `values`."""
    return int(evaluate(python_ast.parse(expr.strip(), mode="eval"), values))


def dims_exprs(shape_arg: str) -> list[str]:
    """The expressions of a `dims:[...]` shape, as written."""
    tree = python_ast.parse(shape_arg.strip(), mode="eval").body
    assert isinstance(tree, ast.List)
    return [ast.get_source_segment(shape_arg.strip(), e) or ast.unparse(e) for e in tree.elts]


def is_expression(source: str) -> bool:
    """Whether a params `from:` is a host expression rather than a name."""
    return not source.isidentifier()


def uses_in(texts: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(argument, how it is used: "tensor" (t.size(d)), "list" (len/max/min/sum of it) or "scalar")
    for every argument the expressions name, in order of appearance."""
    found: list[tuple[str, str]] = []
    for text in texts:
        tree = python_ast.parse(text.strip(), mode="eval")
        receivers = {id(n.func.value) for n in ast.walk(tree) if isinstance(n, ast.Call)
                     and isinstance(n.func, ast.Attribute)}
        listed = {id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                  and n.func.id in LIST_FUNCTIONS and len(n.args) == 1}
        callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        found += [(n.id, "tensor" if id(n) in receivers else "list" if id(n) in listed else "scalar")
                  for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in callees]
    return tuple(dict.fromkeys(found))


class ExpressionError(ValueError):
    """A validated expression that cannot be evaluated for these arguments (an argument of the
    wrong kind: a spec that names, say, a tensor where a list goes)."""


def eval_threads(expr: str, values: Mapping[str, int]) -> int:
    """The value of a checked `geometry.threads` expression."""
    tree = python_ast.parse(expr, mode="eval")

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return int(values[node.id])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = [ev(a) for a in node.args]
            return max(args) if node.func.id == "max" else min(args)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
            return ops[type(node.op)] if type(node.op) in ops else a // b
        raise ValueError(expr)

    return ev(tree)


__all__ = ["CHECK_TENSOR_METHODS", "LIST_FUNCTIONS", "ExpressionError", "check_expression", "check_holds",
           "check_message", "dims_exprs", "eval_threads", "evaluate", "host_value", "is_expression",
           "message_parts", "spec_error", "uses_in"]
