"""Which exec_*_kernel convention an op's kernels follow, read from the library's host names.

`REGISTER_UNARY_OP` gives `<op>_dense_scalar_<out>_<in>` (and castout variants),
`REGISTER_UNARY_ALPHA_OP` `<op>_dense_<out>_<in>_<alpha>` (the alpha may be a params struct,
`nan_to_num_dense_float_float_NanToNumParams_float`), the binary macros
`<op>_dense_broadcast_<out>_<in>[_<alpha>]`, the ternary ones `<op>_strided_cast_<out>`, and
ternary kernels with a scalar (Note [ternary alpha kernels], metalport/port/plan/functor_sources.py)
`<op>_dense_<out>_<in>_<alpha>` with `<op>_strided_cast_<out>_<alpha>`, and a backward over the
halves of its input (Note [grad over halves], metalport/port/write/halves.py) `<op>_halves_<T>`.
Only names of the form `<op>_<flavour>_<metal types>` count, so `add_relu_…` is not `add`.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from metalport.checks.host.elementwise import METAL_DTYPES
from metalport.checks.cases.samples import ExecConvention

_FLAVOUR_WORDS = {"dense", "strided", "scalar", "lhs", "rhs", "broadcast", "cast", "castout", "ilp", "ilp4", "halves"}


def _split(name: str, base: str) -> tuple[str, tuple[str, ...]] | None:
    """(`dense_broadcast`, (`float`, `float`)) for `<base>_dense_broadcast_float_float`, else None."""
    if not name.startswith(base + "_"):
        return None
    words = name[len(base) + 1:].split("_")
    k = 0
    while k < len(words) and words[k] in _FLAVOUR_WORDS:
        k += 1
    types = tuple(words[k:])
    params = next((j for j in range(k, len(words)) if words[j].endswith("Params")), None)
    if params is not None:  # `<out>_<in>_NanToNumParams_float`: a params struct stands for the alpha
        types = (*words[k:params], "_".join(words[params:]))
        if k == 0 or len(types) != 3 or not all(t in METAL_DTYPES for t in types[:2]):
            return None
        return "_".join(words[:k]), types
    if k == 0 or not all(t in METAL_DTYPES for t in types):
        return None
    return "_".join(words[:k]), types


def classify(names: Iterable[str], base: str) -> tuple[ExecConvention, list[torch.dtype]] | None:
    """The family of `base`'s kernels and the input dtypes they register, or None if unmodelled."""
    parsed = [p for p in (_split(n, base) for n in names) if p is not None]

    def inputs(flavour: str, arity: int) -> list[torch.dtype]:
        found = {METAL_DTYPES[t[1]] for f, t in parsed if f == flavour and len(t) == arity}
        return [d for d in METAL_DTYPES.values() if d in found]

    rules = (
        (ExecConvention.BINARY_ALPHA, "dense_broadcast", 3),
        (ExecConvention.BINARY, "dense_broadcast", 2),
        (ExecConvention.UNARY, "dense_scalar", 2),
        (ExecConvention.UNARY_ALPHA, "dense", 3),
    )
    halves = {METAL_DTYPES[t[0]] for f, t in parsed if f == "halves" and len(t) == 1}
    if halves:  # Note [grad over halves]: `<op>_halves_<T>` (port/write/halves.py)
        return ExecConvention.HALVES_BACKWARD, [d for d in METAL_DTYPES.values() if d in halves]
    ternary_alpha = any(f == "strided_cast" and len(t) == 2 for f, t in parsed)
    for family, flavour, arity in rules:
        got = inputs(flavour, arity)
        if got and family is ExecConvention.UNARY_ALPHA and ternary_alpha:
            return ExecConvention.TERNARY_ALPHA, got
        if got:
            return family, got
    if any(f == "strided_cast" and len(t) == 1 for f, t in parsed):
        got = inputs("dense", 2)
        if got:
            return ExecConvention.TERNARY, got
    castout = {METAL_DTYPES[t[0]] for f, t in parsed if f == "dense_castout" and len(t) == 1}
    if castout:
        return ExecConvention.UNARY, [d for d in METAL_DTYPES.values() if d in castout]
    return None


def classify_two_outputs(names: Iterable[str], base: str) -> list[torch.dtype]:
    """The input dtypes of a two-output unary kernel pair (`frexp_dense_float` and
    `frexp_strided_float`: one Metal type each); empty when `base` registers none."""
    parsed = [p for p in (_split(n, base) for n in names) if p is not None and len(p[1]) == 1]
    dense = {t[0] for f, t in parsed if f == "dense"}
    strided = {t[0] for f, t in parsed if f == "strided"}
    return [d for name, d in METAL_DTYPES.items() if name in dense & strided]
