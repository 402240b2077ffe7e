"""`translated_recipe`: a translation as a recipe-table entry, so the planner ports it exactly as a
recipe (same functor fit, registrations, host stub, contract, conformance and oracle)."""

from __future__ import annotations

from dataclasses import replace

from metalport.checkout.layout import Checkout
from metalport.errors import RecipeError
from metalport.port.plan.functors import HostTemplate, FunctorRecipe, OutDtype
from metalport.port.plan.params import params_type_name, scalar_params
from metalport.port.tree.resolve import Resolution
from metalport.port.translate.porter import Translation, translate_stub

__all__ = ["translated_recipe"]


def translated_recipe(checkout: Checkout, res: Resolution, stub: str) -> tuple[Translation, FunctorRecipe | None]:
    """(the translation of `stub`'s CPU kernel for `res.op`, the recipe made of it or None when the
    porter declined or no OpInfo goes by the op's names to register and check its dtypes by)."""
    from metalport.port.tree.obsolete import opinfo_names
    from metalport.torch_facts import opinfo_facts

    # A stub of another name (special_xlog1py_out calls xlog1py_stub) names the functor and kernel,
    # as the tree names its kernels after the stubs they serve.
    name = stub.removesuffix("_stub") if stub.endswith("_stub") and stub != f"{res.op}_stub" else res.op
    fields, why = _stub_fields(checkout, res, stub)
    found = translate_stub(checkout.root, stub, name, fields=fields, struct=params_type_name(res.op))
    if not found.ok or found.source is None:
        return found, None
    if found.params_struct is not None and fields is None:  # the kernel takes scalars its stub does not carry
        return replace(found, source=None, declined=why), None
    from metalport.port.tree.shape import operand_mismatch

    why = operand_mismatch(res, found.arity)
    if why is not None:
        return replace(found, source=None, declined=why), None
    facts = opinfo_facts()
    names = opinfo_names(res.op, res)
    if res.op.endswith("_backward"):  # a backward kernel is checked through its forward op's OpInfo
        names += opinfo_names(res.op.removesuffix("_backward"), res)
    opinfo = next((n for n in names if n in facts), None)
    if opinfo is None:
        return replace(found, source=None, declined=f"no OpInfo goes by {res.op}'s names to register and check "
                                                    "the translated functor's dtypes by"), None
    family = HostTemplate.UNARY if found.arity == 1 else HostTemplate.BINARY
    floating_only = not any(d.startswith(("int", "uint")) for d in found.dtypes)
    recipe = FunctorRecipe(name, family, OutDtype.BOOL if found.out_bool else OutDtype.SAME, opinfo, found.source,
                           floating_only=floating_only, covers=found.dtypes)
    return found, recipe


def _stub_fields(checkout: Checkout, res: Resolution, stub: str) -> tuple[tuple[str, ...] | None, str]:
    """(the params fields of the scalars `stub` passes after the iterator, named as the op's schema
    names them (Note [params route]), or None; why None)."""
    from metalport.port.write.host import find_stub_declaration
    from metalport.port.tree.shape import stub_entry_func
    from metalport.torch_facts import torch_include_dir

    try:
        decl = find_stub_declaration(stub, checkout.root / "aten/src")
    except RecipeError:
        try:
            decl = find_stub_declaration(stub, torch_include_dir())
        except RecipeError as err:
            return None, f"the CPU kernel takes scalars and {stub} has no declaration to carry them by: {err.message}"
    func = stub_entry_func(res)
    found = scalar_params(decl.params, func) if func else None
    if found is None:
        return None, (f"the CPU kernel takes scalars, and {stub} ({decl.params}) passes ones no params struct "
                      f"carries or the schema of aten::{res.op} does not name")
    return tuple(n for n, *_ in found), ""
