"""`ast.parse` for the whole package, one thread at a time.

CPython 3.11 keeps the AST converter's recursion depth in interpreter-wide state, so two threads
parsing at once can fail with "SystemError: AST constructor recursion depth mismatch"
(python/cpython#106905). A fleet worker runs two pipelines in threads of one process, and their
plan stages both parse torch's test files: every parse in metalport goes through `parse`.
"""

from __future__ import annotations

import ast
import threading

_ONE_AT_A_TIME = threading.Lock()  # process-wide by necessity: the state it guards is the interpreter's


def parse(text: str, mode: str = "exec") -> ast.AST:
    """`ast.parse(text, mode=mode)`, never beside another parse of this process."""
    with _ONE_AT_A_TIME:
        return ast.parse(text, mode=mode)


__all__ = ["parse"]
