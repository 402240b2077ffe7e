"""`foreach_recipe`: a `_foreach_<name>` op as a spec recipe launching the tree's own `<name>_functor`.

Note [foreach from the tree's functor]: a unary `_foreach_<name>` computes `<name>` on each tensor
of a list; when a kernel file of the tree registers a unary `<name>_functor` (`REGISTER_UNARY_OP`)
with the same input and output type for float, half or bfloat, the port is the `_foreach_exp` spec
recipe (per-chunk launch over the list, our own kernel) with its math replaced by a call of that
functor, placed in the functor's kernel file (so the kernel sees it) and hosted in the `.mm` that
loads that file's library. It is planned, applied and checked as that spec recipe is. Everything
else (binary, scalar and list-of-scalars overloads, a name no functor has) is declined with why.
"""

from __future__ import annotations

import re
from pathlib import Path

from metalport.checkout.layout import Checkout
from metalport.checkout.sources import Sources

__all__ = ["foreach_recipe"]

_TEMPLATE = "_foreach_exp"
_FLOATING = ("float", "half", "bfloat")


def _functor_file(checkout: Checkout, sources: Sources, base: str) -> tuple[str | None, tuple[str, ...], str]:
    """(kernel file registering a unary `base` functor, its float types with same in/out, why not)."""
    from metalport.port.metal import functor_arity
    from metalport.port.reuse import legacy_file_text

    regs = [s for s in sources.shader_ops if s.name == base and s.macro == "REGISTER_UNARY_OP"]
    if not regs:
        return None, (), f"no kernel file of the tree registers a unary {base}_functor (REGISTER_UNARY_OP)"
    rel = sorted({s.where.file for s in regs})[0]
    if functor_arity(legacy_file_text(checkout.root, rel), f"{base}_functor") != 1:
        return None, (), f"{rel} has no one-operand struct {base}_functor"
    types = tuple(t for t in _FLOATING if any(s.args[:2] == (t, t) and s.where.file == rel for s in regs))
    if not types:
        return None, (), f"{rel} registers {base} for no floating type with the same output type"
    return rel, types, ""


def foreach_recipe(checkout: Checkout, sources: Sources, op: str):  # -> tuple[SpecRecipe | None, str | None]
    """(the spec recipe of a unary `_foreach_<name>` op launching the tree's `<name>_functor`, None)
    or (None, why not) (Note [foreach from the tree's functor])."""
    from metalport.errors import SpecError
    from metalport.port.reuse import host_file_of
    from metalport.port.spec import load_spec
    from metalport.port.spec_recipes import SpecRecipe, spec_recipes

    if not op.startswith("_foreach_"):
        return None, f"{op} is no _foreach_ op"
    base = op.removeprefix("_foreach_")
    template = spec_recipes().get(_TEMPLATE)
    if template is None:
        return None, f"the spec recipe table has no {_TEMPLATE} to launch a functor with"
    rel, types, why = _functor_file(checkout, sources, base)
    if rel is None:
        return None, why
    host, _ = host_file_of(checkout, sources, base, rel)
    host = host or f"aten/src/ATen/native/mps/operations/{Path(rel).stem}.mm"
    text = template.path.read_text(encoding="utf-8")
    body = text[text.index("op:"):]
    body = re.sub(r"(?m)^dtypes:\n(?:  - .*\n)+", "dtypes:\n" + "".join(f"  - [{t}, {t}]\n" for t in types), body)
    body = (body.replace(f"op: {_TEMPLATE}", f"op: {op}").replace(f"opinfo: {_TEMPLATE}", f"opinfo: {op}")
            .replace("foreach_tensor_exp_mps", f"foreach_tensor_{base}_mps")
            .replace("aten/src/ATen/native/mps/operations/ForeachOps.mm", host)
            .replace("aten/src/ATen/native/mps/kernels/ForeachOps.metal", rel).replace("name: foreach_exp", f"name: foreach_{base}"))
    header = (f"# aten::{op}: {base}_functor of {rel} on every tensor of a list in one launch (the per-chunk\n"
              f"# launch of the {_TEMPLATE} recipe; Note [foreach from the tree's functor]).\n")
    kernel = _kernel_source(template.kernel_source, base, types)
    try:
        return SpecRecipe(load_spec(header + body), kernel, Path(f"<{op} from {base}_functor>")), None
    except SpecError as err:
        return None, f"the {_TEMPLATE} launch does not fit {op}: {err.message}"


def _kernel_source(template: str, base: str, types: tuple[str, ...]) -> str:
    """The template kernel calling `<base>_functor`, with an address struct of its own (two such
    ports in one kernel file must not define one struct twice) and one instantiation per type."""
    address = "".join(w.capitalize() for w in base.split("_")) + "ForeachAddress"
    macro = f"REGISTER_FOREACH_{base.upper()}"
    text = template.replace("ForeachAddress", address).replace("REGISTER_FOREACH_EXP", macro)
    text = re.sub(r"\bforeach_exp\b", f"foreach_{base}", text)
    text = re.sub(r"\"foreach_exp_\"", f"\"foreach_{base}_\"", text)
    text = re.sub(r"\A(?://[^\n]*\n)+", f"// _foreach_{base}: {base}_functor on every tensor of a list in one launch; row y\n"
                  "// of the grid is chunk y ((tensor, first element) in `chunks`), thread x one element of it.\n", text)
    text = re.sub(r"out0\[tensor\]\.data\[i\] = .*;",
                  f"out0[tensor].data[i] = static_cast<T>({base}_functor()(self[tensor].data[i]));", text)
    text = re.sub(rf"(?m)^{macro}\((\w+)\);\n", lambda m: m.group(0) if m.group(1) in types else "", text)
    return text
