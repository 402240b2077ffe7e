"""The params route: an op's scalar arguments carried into its kernel as one params struct.

Note [params route]: a pointwise op whose dispatch stub takes scalars after the iterator
(`softplus_stub(iter, beta, threshold)`, `nan_to_num_stub(iter, nan, posinf, neginf)`) is launched
through the tree's `exec_unary_kernel_with_params` / `exec_binary_kernel_with_params`
(MetalShaderLibrary.h), as `elu` and `clamp` are: the host fills a struct with the scalars and
passes it with its type's name; the kernel's host name ends in that name
(`softplus_dense_float_float_SoftplusParams`), registered by `REGISTER_UNARY_ALPHA_OP(softplus,
float, SoftplusParams, float)` (or the binary macro) and read by a functor whose `operator()` takes
the values and then the struct. Fields are opmath `float` (what CPU and CUDA compute half and
bfloat16 in), so one non-templated struct serves every dtype. An op whose kernel the tree has
already (nan_to_num's `NanToNumParams<float>`, `typedef`ed `NanToNumParams_float`) launches it
with that struct.

The representation is plain data on the plan (`PortPlan.params`), one tuple per scalar in the
stub's order: (name, C++ type of the stub parameter, opmath, default). `opmath` True means the
field is `float` (the opmath type of float, half and bfloat16); `default` is the C++ value, over
the dtype's real type `real_t`, an unset `std::optional` stands for ("" for a required scalar).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metalport.checkout.cpp import split_top_level
from metalport.errors import PipelineError
from metalport.metal_types import COMPLEX
from metalport.port.tree.shape import stub_entry_func

if TYPE_CHECKING:
    from metalport.checkout.layout import Checkout
    from metalport.port.tree.resolve import Resolution

# One scalar of the params route: (name, stub C++ type, opmath field, default C++ expression or "").
ScalarParam = tuple[str, str, bool, str]

# Scalar C++ types a stub passes after the iterator that a params struct field can carry.
_SCALAR_TYPES = re.compile(r"^(?:const\s+)?(?:c10::)?(?:Scalar|double|float|int64_t|bool)\s*&?$|"
                           r"^(?:const\s+)?std::optional<double>\s*&?$")
# Note [unset optionals]: the schema says only that a `float?` scalar defaults to None; what None
# means is the CPU kernel's (`nan.value_or(0.)`, `pos_inf.has_value() ? ... : max()`). It is read
# from torch's CPU op itself, never from the argument's name: called on values of every kind
# (NaN, +-inf, finite), once with the scalar unset and once set to a probe value, the elements the
# probe moves are the ones it governs, and the unset call's value there is its default, either one
# constant at every dtype or the dtype's largest finite / lowest value.
_PROBE_VALUES = (float("nan"), float("inf"), float("-inf"), 0.0, 1.5, -2.5, 3.0e4)
_PROBES = (7.25, -3.5)
_LIMITS = {"max": "std::numeric_limits<real_t>::max()", "lowest": "std::numeric_limits<real_t>::lowest()"}


def _split_top(text: str) -> list[str]:
    """`text` split at commas outside `<>` and `()`."""
    return split_top_level(text, "<(", ">)")


def _type_of(param: str) -> str:
    """The C++ type of one parameter, its name (if any) left out."""
    param = re.sub(r"\s+", " ", param.strip())
    named = re.match(r"^(.*?[&*>]|.*\S)\s+(\w+)$", param)
    if named and not re.fullmatch(r"(?:const )?(?:c10::)?\w+", param):
        return named.group(1).strip()
    return param


def _schema_scalars(func: str) -> list[tuple[str, str]]:
    """(name, schema type) of the non-tensor, non-out arguments of `func`, in order."""
    from torchgen.model import FunctionSchema

    schema = FunctionSchema.parse(func)
    args = [*schema.arguments.flat_positional, *schema.arguments.flat_kwarg_only]
    return [(a.name, str(a.type)) for a in args if "Tensor" not in str(a.type)]


def _unset_meaning(func: str, name: str) -> str | None:
    """The C++ value over `real_t` an unset optional scalar `name` of `func` stands for (Note [unset
    optionals]), or None when torch's CPU op does not show one."""
    import torch
    from torchgen.model import FunctionSchema

    schema = FunctionSchema.parse(func)
    overload = schema.name.overload_name
    if schema.is_out_fn():
        overload = ""  # the functional overload tells the same meaning
    packet = getattr(torch.ops.aten, str(schema.name.name), None)
    op = getattr(packet, overload or "default", None) if packet is not None else None
    if op is None:
        return None
    seen: list[str] = []
    for dtype in (torch.float32, torch.float16):
        x = torch.tensor(_PROBE_VALUES, dtype=dtype)
        try:
            unset = op(x)
            moved = torch.zeros(x.shape, dtype=torch.bool)
            for probe in _PROBES:
                probed = op(x, **{name: probe})
                moved |= (probed != unset) & ~(probed.isnan() & unset.isnan())
        except (RuntimeError, TypeError, ValueError):
            return None
        values = {float(v) for v in unset[moved].tolist()}
        if len(values) != 1:
            return None
        value = values.pop()
        info = torch.finfo(dtype)
        seen.append(_LIMITS["max"] if value == info.max else _LIMITS["lowest"] if value == info.min else
                    f"real_t({int(value) if value.is_integer() else value!r})" if value == value and abs(value) != float("inf") else "?")
    return seen[0] if len(set(seen)) == 1 and seen[0] != "?" else None


def scalar_params(stub_params: str | None, func: str) -> tuple[ScalarParam, ...] | None:
    """The stub's scalars after the iterator as params-route fields, named as the schema `func`
    names them; () when the stub takes none, None when one is not a scalar a struct carries (an
    enum, a tensor), the schema's scalars do not line up with the stub's, or an optional one's unset
    meaning cannot be read from torch's CPU op (Note [unset optionals])."""
    if not stub_params:
        return ()
    params = _split_top(stub_params)[1:]
    if not params:
        return ()
    types = [_type_of(p) for p in params]
    if not all(_SCALAR_TYPES.match(t) for t in types):
        return None
    named = _schema_scalars(func)
    if len(named) != len(types):
        return None
    out = []
    for (name, schema_type), cpp in zip(named, types):
        optional = cpp.replace("const ", "").startswith("std::optional")
        default = _unset_meaning(func, name) if optional and schema_type.endswith("?") else ""
        if optional and not default:
            return None
        out.append((name, cpp, True, default or ""))
    return tuple(out)


def params_type_name(op: str) -> str:
    """The struct a port's params go in: `softplus` and `softplus_backward` share `SoftplusParams`
    (one upstream struct for a family whose members take the same scalars)."""
    return "".join(w.capitalize() for w in op.removesuffix("_backward").split("_") if w) + "Params"


def struct_source(name: str, params: tuple[ScalarParam, ...]) -> str:
    """The params struct, valid Metal and C++ (the kernel header both sides include)."""
    fields = "".join(f"  {'float' if opmath else 'T'} {n};\n" for n, _, opmath, _ in params)
    return (f"// {', '.join(n for n, *_ in params)} at opmath precision (float), as CPU and CUDA compute them\n"
            f"struct {name} {{\n{fields}}};\n")


def struct_fields(text: str, name: str) -> tuple[str, ...] | None:
    """The field names of `struct name` in `text` (templated or not); None when it has none."""
    found = re.search(rf"^(?:template\s*<[^>]*>\s*)?struct {re.escape(name)}\s*\{{(.*?)\n\}};", text,
                      re.MULTILINE | re.DOTALL)
    if found is None:
        return None
    return tuple(re.findall(r"^\s*[\w:<>]+\s+(\w+);", found.group(1), re.MULTILINE))


# Note [model params structs]: the model is told the params struct exists, yet may declare one in its
# answer. One whose fields are the op's scalars, in the schema's order and at opmath `float`, is the
# planned struct under another name or the same: its declaration is dropped and its name in the
# functor becomes the planned struct's (which the header defines and the host fills). Any other
# (missing, extra or reordered scalars, other field types, a templated struct) is refused with one
# line naming both field lists.
_MODEL_STRUCT = re.compile(r"^[ \t]*(template\s*<[^>]*>\s*)?struct\s+(\w+)\s*\{(.*?)\n?[ \t]*\}\s*;[ \t]*\n?",
                           re.MULTILINE | re.DOTALL)


def model_params_struct(code: str, functor: str, params: tuple[ScalarParam, ...], planned: str) -> str:
    """The model's functor `code` with a params struct it declares itself folded into the planned
    struct `planned` (Note [model params structs]); RecipeError (one line) when that struct does not
    carry the op's scalars as the planned one does. `code` unchanged when it declares no struct but
    the functor, or the op has no params."""
    from metalport.errors import RecipeError

    if not params:
        return code
    wanted = tuple(n for n, *_ in params)
    for m in list(_MODEL_STRUCT.finditer(code)):
        name = m.group(2)
        if name == functor:
            continue
        fields = re.findall(r"^\s*([\w:<>]+(?:\s*<[^;]*>)?)\s+(\w+)\s*;", m.group(3), re.MULTILINE)
        names = tuple(n for _, n in fields)
        used = re.search(rf"\b{re.escape(name)}\b", code[:m.start()] + code[m.end():])
        if used is None and names != wanted:
            continue  # a helper struct of the model's own, not its params
        types = {t.replace(" ", "") for t, _ in fields}
        if m.group(1) or names != wanted or types - {"float"}:
            have = ", ".join(f"{t} {n}" for t, n in fields) or "none"
            raise RecipeError(f"the functor source declares its own params struct {name} ({have}); the op's "
                              f"scalars reach the kernel as {planned} (float {', float '.join(wanted)}), which the "
                              f"kernel file already sees",
                              hint=f"drop struct {name} and take `const {planned} params`")
        code = code[:m.start()] + code[m.end():]
        if name != planned:
            code = re.sub(rf"\b{re.escape(name)}\b", planned, code)
    return code


def host_params_source(params: tuple[ScalarParam, ...], struct_cpp: str, dtypes: tuple[str, ...]) -> str:
    """C++ lines filling `struct_cpp params{...}` from the stub's scalars: a Scalar at opmath
    float, an unset optional at its documented default over the dtype's real type (so the host
    dispatches on the dtype when one does)."""
    if not any(d for *_, d in params):
        values = ", ".join(f"{n}.to<float>()" if "Scalar" in cpp else f"static_cast<float>({n})"
                           for n, cpp, _, _ in params)
        return f"  const {struct_cpp} params{{{values}}};\n"
    values = ",\n".join(
        f"        static_cast<float>({n}.has_value() ? static_cast<real_t>(*{n}) : {d})" if d else
        f"        {n}.to<float>()" if "Scalar" in cpp else f"        static_cast<float>({n})"
        for n, cpp, _, d in params)
    complex_ = any(t in COMPLEX for t in dtypes)
    macro = ("AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES_AND3(kHalf, kBFloat16, kComplexHalf, " if complex_
             else "AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16, ")
    return (f"  {macro}iter.common_dtype(), \"{{name}}_mps\", [&]() {{\n"
            f"    using real_t = c10::scalar_value_type<scalar_t>::type;\n"
            f"    const {struct_cpp} params{{\n{values}}};\n"
            f"    {{launch}}\n"
            f"  }});\n")


def host_function_source(function: str, stub_params: str, family: str, kernel: str,
                         params: tuple[ScalarParam, ...], struct_cpp: str, type_name: str,
                         dtypes: tuple[str, ...]) -> str:
    """The static host stub of a params-route port: the struct filled from every scalar (none is
    dropped), launched through the tree's `exec_<family>_kernel_with_params`."""
    launcher = "exec_binary_kernel_with_params" if family in ("binary", "alpha") else "exec_unary_kernel_with_params"
    launch = f'lib.{launcher}(iter, "{kernel}", params, "{type_name}");'
    fill = host_params_source(params, struct_cpp, dtypes)
    if "{launch}" in fill:
        body = fill.replace("{name}", kernel).replace("{launch}", launch)
    else:
        body = f"{fill}  {launch}\n"
    return f"static void {function}({named_params(stub_params, params)}) {{\n{body}}}\n"


def named_params(stub_params: str, params: tuple[ScalarParam, ...]) -> str:
    """The stub's parameter list with the iterator named `iter` and each scalar by its schema name."""
    parts = _split_top(stub_params)
    first = _type_of(parts[0])
    return ", ".join([f"{first} iter", *(f"{cpp} {n}" for n, cpp, _, _ in params)])


def registration(macro: str, op: str, dtype: str, type_name: str) -> str:
    """`REGISTER_UNARY_ALPHA_OP(op, float, SoftplusParams, float);` for one dtype row."""
    return f"{macro}({op}, {dtype}, {type_name}, {dtype});"


# The planning side: `with_params` and `placed_params` take and return the planner's launch part
# (port.plan.model.LaunchPart), replacing its params fields.


def with_params(res: Resolution, parts: Any, stub_params: str) -> Any:
    """`parts` on the params route (Note [params route], port/plan/params.py) when the stub takes scalars
    after the iterator: registrations through the family's `_ALPHA_OP` macro with the params struct
    as the alpha type. Raises PipelineError when a scalar is of a type no struct field carries."""
    func = stub_entry_func(res)
    found = scalar_params(stub_params, func) if func else ()
    if found == ():
        return parts
    if found is None or parts.host_family not in ("unary", "binary"):
        raise PipelineError(f"{res.stub} takes ({stub_params}): scalars after the iterator that a params struct "
                            f"does not carry for a {parts.host_family} kernel",
                            location=parts.stub_header, hint="port it by hand")
    macro = "REGISTER_UNARY_ALPHA_OP" if parts.host_family == "unary" else "REGISTER_BINARY_ALPHA_OP"
    name = params_type_name(res.op)
    return replace(parts, macro=macro, params=found, params_type=name, params_struct=name,
                   registrations=tuple(registration(macro, res.op, t, name) for t in parts.dtypes))


_KERNEL_HEADER = re.compile(r"^#include <(ATen/native/mps/kernels/\w+\.h)>", re.MULTILINE)
_TYPEDEF = re.compile(r"^typedef\s+([\w:<>, ]+?)\s+(\w+);", re.MULTILINE)


def placed_params(checkout: Checkout, res: Resolution, parts: Any, existing: Any) -> tuple[Any, str]:
    """(`parts` with its params struct placed, one line on where it is) (Note [params route]): a
    reused kernel keeps the struct its registrations name (its `typedef` gives the C++ type, its
    dtypes are the ones it registers); a new functor's struct goes into the kernel header the kernel
    file includes (the host includes it too), or the tree's struct of that name is reused when its
    fields are the op's scalars."""
    text = (checkout.root / parts.kernel_file).read_text(encoding="utf-8") \
        if parts.kernel_file and (checkout.root / parts.kernel_file).is_file() else ""
    header = _KERNEL_HEADER.search(text)
    header_rel = f"aten/src/{header.group(1)}" if header else None
    header_text = (checkout.root / header_rel).read_text(encoding="utf-8") \
        if header_rel and (checkout.root / header_rel).is_file() else ""
    if existing is not None:
        regs = [s for s in res.sources.shader_ops if s.name == existing.name and len(s.args) == 3]
        type_name = regs[0].args[1] if regs else parts.params_type
        typedefs = {m.group(2): re.sub(r"\s+", "", m.group(1)) for m in _TYPEDEF.finditer(text)}
        dtypes = tuple(dict.fromkeys(s.args[0] for s in regs))
        return (replace(parts, params_type=type_name, params_struct=typedefs.get(type_name, type_name),
                        params_header=header_rel, dtypes=dtypes or parts.dtypes),
                f"params struct {typedefs.get(type_name, type_name)}: the tree's, which {existing.name}'s "
                f"registrations name ({type_name})")
    wanted = tuple(n for n, *_ in parts.params)
    name = parts.params_type or params_type_name(res.op)
    have = struct_fields(header_text, name) or struct_fields(text, name)
    if have is not None and have != wanted:  # a struct of that name carries other scalars
        name = "".join(w.capitalize() for w in res.op.split("_")) + "Params"
        have = struct_fields(header_text, name) or struct_fields(text, name)
    regs = tuple(registration(parts.macro or "", res.op, t, name) for t in parts.dtypes)
    where = header_rel or parts.kernel_file
    parts = replace(parts, params_type=name, params_struct=name, params_header=where, registrations=regs,
                    params_source=None if have == wanted else struct_source(name, parts.params))
    if have == wanted:
        return parts, f"params struct {name}: the tree's ({where}), whose fields are {', '.join(wanted)}"
    return parts, (f"params struct {name} ({', '.join(wanted)} at opmath float) added to {where}"
                   + (f", the header {Path(parts.kernel_file or '').name} and its host include"
                      if header_rel else ""))


__all__ = ["ScalarParam", "host_function_source", "model_params_struct", "params_type_name", "placed_params",
           "registration",
           "scalar_params", "struct_fields", "struct_source", "with_params"]
