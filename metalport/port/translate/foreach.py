"""`foreach_recipe`: a `_foreach_<name>` op as a spec recipe launching the tree's own `<name>_functor`.

Note [foreach from the tree's functor]: a unary `_foreach_<name>` computes `<name>` on each tensor
of a list; when a kernel file of the tree registers a unary `<name>_functor` (`REGISTER_UNARY_OP`)
with the same input and output type for float, half or bfloat, the port is the `_foreach_exp` spec
recipe (per-chunk launch over the list, our own kernel) with its math replaced by a call of that
functor, placed in the functor's kernel file (so the kernel sees it) and hosted in the `.mm` that
loads that file's library. It is planned, applied and checked as that spec recipe is. Everything
else is declined with why: an op every overload of which takes a second operand (`_foreach_add`'s
List, Scalar, ScalarList and Tensor overloads, `_foreach_maximum`'s), as the launch has no slot for
it, and a name no one-operand functor of the tree has.

Note [foreach from the recipe table]: where the tree has no `<name>_functor` (it has no `frac` or
`sign` Metal kernel yet), the recipe table's own unary `<name>` functor (the math the `<name>` port
writes, keeping the input type) is the list's math: the kernel defines it first as
`foreach_<name>_functor`, so a later `<name>` port adding `<name>_functor` to the same file does
not define one struct twice, and the port is placed in the file the table keeps unary functors in.
"""

from __future__ import annotations

import re
from pathlib import Path

from metalport.checkout.layout import Checkout
from metalport.checkout.sources import Sources
from metalport.metal_types import FLOATING

__all__ = ["foreach_recipe"]

_TEMPLATE = "_foreach_exp"


def _functor_file(checkout: Checkout, sources: Sources, base: str) -> tuple[str | None, tuple[str, ...], str]:
    """(kernel file registering a unary `base` functor, its float types with same in/out, why not)."""
    from metalport.port.write.metal import functor_arity
    from metalport.port.tree.reuse import legacy_file_text

    regs = [s for s in sources.shader_ops if s.name == base and s.macro == "REGISTER_UNARY_OP"]
    if not regs:
        return None, (), f"no kernel file of the tree registers a unary {base}_functor (REGISTER_UNARY_OP)"
    rel = sorted({s.where.file for s in regs})[0]
    text = legacy_file_text(checkout.root, rel)
    arity = functor_arity(text, f"{base}_functor")
    if arity is None:  # `DEFINE_UNARYFLOATING_FUNCTOR(erf);`: a c10/metal macro writes the struct
        arity = functor_arity(_macro_functors(checkout, text, base), f"{base}_functor")
    if arity != 1:
        return None, (), f"{rel} has no one-operand struct {base}_functor"
    types = tuple(t for t in FLOATING if any(s.args[:2] == (t, t) and s.where.file == rel for s in regs))
    if not types:
        return None, (), f"{rel} registers {base} for no floating type with the same output type"
    return rel, types, ""


def foreach_recipe(checkout: Checkout, sources: Sources, op: str):  # -> tuple[SpecRecipe | None, str | None]
    """(the spec recipe of a unary `_foreach_<name>` op launching the tree's `<name>_functor`, None)
    or (None, why not) (Note [foreach from the tree's functor])."""
    from metalport.errors import SpecError
    from metalport.port.tree.reuse import host_file_of
    from metalport.port.spec.model import load_spec
    from metalport.port.spec.recipes import SpecRecipe, spec_recipes

    if not op.startswith("_foreach_"):
        return None, f"{op} is no _foreach_ op"
    base = op.removeprefix("_foreach_")
    second = _second_operands(op)
    if second:
        return None, (f"every overload of {op} takes a second operand ({second}): the {_TEMPLATE} launch the tree's "
                      "functors are reused through runs one tensor list through a one-operand functor, with no "
                      "slot for another list, tensor or scalar")
    template = spec_recipes().get(_TEMPLATE)
    if template is None:
        return None, f"the spec recipe table has no {_TEMPLATE} to launch a functor with"
    rel, types, why = _functor_file(checkout, sources, base)
    functor, own = f"{base}_functor", ""
    if rel is None:  # Note [foreach from the recipe table]
        rel, types, own = _table_functor(checkout, base)
        if rel is None:
            return None, f"{why}, and the recipe table has no one-operand {base} functor"
        functor = f"foreach_{base}_functor"
    host, _ = host_file_of(checkout, sources, base, rel)
    host = host or f"aten/src/ATen/native/mps/operations/{Path(rel).stem}.mm"
    text = template.path.read_text(encoding="utf-8")
    body = text[text.index("op:"):]
    body = re.sub(r"(?m)^dtypes:\n(?:  - .*\n)+", "dtypes:\n" + "".join(f"  - [{t}, {t}]\n" for t in types), body)
    body = (body.replace(f"op: {_TEMPLATE}", f"op: {op}").replace(f"opinfo: {_TEMPLATE}", f"opinfo: {op}")
            .replace("foreach_tensor_exp_mps", f"foreach_tensor_{base}_mps")
            .replace("aten/src/ATen/native/mps/operations/ForeachOps.mm", host)
            .replace("aten/src/ATen/native/mps/kernels/ForeachOps.metal", rel).replace("name: foreach_exp", f"name: foreach_{base}"))
    whose = f"{base}_functor of {rel}" if not own else f"the recipe table's {base} functor (as {functor})"
    header = (f"# aten::{op}: {whose} on every tensor of a list in one launch (the per-chunk\n"
              f"# launch of the {_TEMPLATE} recipe; Note [foreach from the tree's functor]).\n")
    kernel = _kernel_source(template.kernel_source, base, types, functor, own)
    try:
        return SpecRecipe(load_spec(header + body), kernel, Path(f"<{op} from {base}_functor>")), None
    except SpecError as err:
        return None, f"the {_TEMPLATE} launch does not fit {op}: {err.message}"


def _second_operands(op: str) -> str:
    """The operands besides `self` of each overload of `op` (torch's schemas, out arguments left
    out), as `List: other, alpha; Scalar: scalar`; "" when an overload takes `self` alone."""
    import torch

    shown = []
    for schema in torch._C._jit_get_schemas_for_operator(f"aten::{op}"):
        if schema.overload_name.endswith("out") or schema.overload_name == "out":
            continue
        extra = [a.name for a in schema.arguments if a.name not in ("self", "out")]
        if not extra:
            return ""
        shown.append(f"{schema.overload_name or 'default'}: {', '.join(extra)}")
    return "; ".join(shown)


def _table_functor(checkout: Checkout, base: str) -> tuple[str | None, tuple[str, ...], str]:
    """(the kernel file, float types, functor source renamed `foreach_<base>_functor`) of the recipe
    table's unary `base` functor keeping its input type, or (None, (), "") (Note [foreach from the
    recipe table])."""
    from metalport.port.plan.functors import HostTemplate, OutDtype, recipe_table

    recipe = recipe_table().get(base)
    if recipe is None or recipe.family is not HostTemplate.UNARY or recipe.out_dtype is not OutDtype.SAME:
        return None, (), ""
    rel = f"aten/src/ATen/native/mps/kernels/{recipe.kernel_file}"
    if not (checkout.root / rel).is_file():
        return None, (), ""
    source = re.sub(rf"\bstruct {re.escape(recipe.functor)}\b", f"struct foreach_{base}_functor", recipe.source)
    return rel, FLOATING, source


def _kernel_source(template: str, base: str, types: tuple[str, ...], functor: str = "", own: str = "") -> str:
    """The template kernel calling `<base>_functor` (or `functor`, whose struct `own` the kernel
    then defines first), with an address struct of its own (two such ports in one kernel file must
    not define one struct twice) and one instantiation per type."""
    functor = functor or f"{base}_functor"
    address = "".join(w.capitalize() for w in base.split("_")) + "ForeachAddress"
    macro = f"REGISTER_FOREACH_{base.upper()}"
    text = template.replace("ForeachAddress", address).replace("REGISTER_FOREACH_EXP", macro)
    text = re.sub(r"\bforeach_exp\b", f"foreach_{base}", text)
    text = re.sub(r"\"foreach_exp_\"", f"\"foreach_{base}_\"", text)
    text = re.sub(r"\A(?://[^\n]*\n)+", f"// _foreach_{base}: {functor} on every tensor of a list in one launch; row y\n"
                  "// of the grid is chunk y ((tensor, first element) in `chunks`), thread x one element of it.\n", text)
    text = re.sub(r"out0\[tensor\]\.data\[i\] = .*;",
                  f"out0[tensor].data[i] = static_cast<T>({functor}()(self[tensor].data[i]));", text)
    text = re.sub(rf"(?m)^{macro}\((\w+)\);\n", lambda m: m.group(0) if m.group(1) in types else "", text)
    return f"{own}\n{text}" if own else text


_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)\((\w+)\)((?:.*\\\n)*.*)$", re.MULTILINE)


def _macro_functors(checkout: Checkout, text: str, base: str) -> str:
    """The structs the kernel file's macro calls of `base` write (`DEFINE_UNARYFLOATING_FUNCTOR(erf);`),
    expanded from the macro's one-parameter definition in c10/metal (the tree's headers, else the
    wheel's); "" when there is none."""
    from metalport.torch_facts import torch_include_dir

    calls = set(re.findall(rf"^\s*(\w+)\(\s*{re.escape(base)}\s*\);?\s*$", text, re.MULTILINE))
    if not calls:
        return ""
    folders = [checkout.root / "c10/metal", torch_include_dir() / "c10/metal"]
    headers = [p for folder in folders if folder.is_dir() for p in sorted(folder.glob("*.h"))]
    out = []
    for path in [*headers, None]:
        source = text if path is None else path.read_text(encoding="utf-8", errors="replace")
        for m in _DEFINE.finditer(source):
            if m.group(1) in calls:
                body = m.group(3).replace("\\\n", "\n")
                body = re.sub(rf"\b{m.group(2)}\s*##\s*", base, body)
                out.append(re.sub(rf"\b{m.group(2)}\b", base, body).strip())
                calls.discard(m.group(1))
    # functor_arity reads `struct x_functor {` at a line start
    lines = [line.rstrip() for b in out for line in b.splitlines()]
    return "\n".join(re.sub(r"^\s*struct ", "struct ", line) for line in lines) + ("\n" if lines else "")
