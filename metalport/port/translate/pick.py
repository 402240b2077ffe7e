"""`picked_chain`: the `if`/`else` chain a CPU kernel picks one of its scalar lambdas by at run time.

Note [lambdas picked at run time]: a kernel may call `cpu_kernel` in each branch of a chain on its
scalars (logit: `if (eps < 0) { cpu_kernel(iter, [](x) {...}); } else { lo = eps; ...
cpu_kernel(iter, [lo, hi](x) {...}); }`). The functor then takes the same chain over the params
struct's fields, with each lambda's body in its branch. A branch that calls no `cpu_kernel` is
left out only when its condition reads nothing but the iterator and the build (`at::hasMKL() &&
iter.is_contiguous()`): that is another implementation of the same math (a vendor library), which
a Metal kernel has no use for. Any other branch without a lambda, a chain that does not hold every
lambda, or a lambda nested deeper is declined with why.
"""

from __future__ import annotations

import re

from metalport.checkout.cpp import match_bracket
from metalport.checkout.cpu_kernels import ScalarLambda
from metalport.port.translate.cxx import Declined

__all__ = ["picked_chain"]

_HOST_ONLY = re.compile(r"^(?:[\s()!&|]|\bat::hasMKL\(\)|\b(?:iter|it)\s*\.\s*\w+\s*\(\s*\))*$")


def _open_of(text: str, close: int) -> int:
    """Offset of the bracket opening the `)` or `}` at `close`, scanning back; -1 if unbalanced."""
    return match_bracket(text, close, {")": "()", "}": "{}"}[text[close]], backward=True)


def _innermost_open(text: str) -> int:
    """Offset of the innermost `{` still open at the end of `text`; -1 if none."""
    stack: list[int] = []
    for i, ch in enumerate(text):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            stack.pop()
    return stack[-1] if stack else -1


def picked_chain(lams: list[ScalarLambda]) -> list[tuple[str | None, ScalarLambda]]:
    """(condition or None for the final `else`, lambda) per branch of the chain the kernel picks
    among `lams` by (Note [lambdas picked at run time]), in order; Declined when the lambdas do
    not sit one per branch of one such chain."""
    last = max(lams, key=lambda lam: len(lam.before))
    text = last.before
    open_at = _innermost_open(text)
    if open_at < 0:
        raise Declined("its scalar lambdas are not in the branches of an if/else chain")
    branches: list[tuple[str | None, int, int]] = []  # (condition, body start, body end) from the last
    end = len(text)
    while True:
        head = text[:open_at].rstrip()
        if head.endswith(")"):
            paren = _open_of(head, len(head) - 1)
            if paren < 0 or not re.search(r"\bif\s*$", head[:paren]):
                raise Declined("its scalar lambdas are picked by something other than an if/else chain")
            branches.append((head[paren + 1:-1].strip(), open_at, end))
            head = re.sub(r"\bif\s*$", "", head[:paren]).rstrip()
            if not re.search(r"\belse$", head):
                break  # the chain's first `if`
        elif re.search(r"\belse$", head):
            if branches:
                raise Declined("an `else` in the middle of its if/else chain")
            branches.append((None, open_at, end))
        else:
            raise Declined("its scalar lambdas are not in the branches of an if/else chain")
        head = head[:-4].rstrip()
        if not head.endswith("}"):
            raise Declined("an if/else chain the translator cannot read")
        end = len(head) - 1
        open_at = _open_of(head, end)
        if open_at < 0:
            raise Declined("an if/else chain the translator cannot read")
    out: list[tuple[str | None, ScalarLambda]] = []
    placed: set[int] = set()
    for cond, start, stop in reversed(branches):
        inside = [lam for lam in lams if start < len(lam.before) <= stop]
        if len(inside) > 1:
            raise Declined(f"one branch of its if/else chain calls {len(inside)} cpu_kernels")
        if not inside:
            if cond is not None and _HOST_ONLY.match(cond):
                continue  # another implementation of the same math (a vendor library on the host)
            raise Declined(f"the branch `{cond or 'else'}` of its if/else chain calls no cpu_kernel")
        placed.add(id(inside[0]))
        out.append((cond, inside[0]))
    if len(placed) != len(lams):
        raise Declined("not every scalar lambda sits in a branch of one if/else chain")
    return out
