"""`check_schema`: a launch spec's consistency with its op's `func:` schema (native_functions.yaml);
`check_stub`: with the tree's declaration of the stub it registers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from metalport.checkout.sources import Sources
from metalport.errors import SpecError
from metalport.port.spec.model import DERIVED, DERIVED_ARRAYS, LIST_ARRAYS, Grid, LaunchSpec, OutShape
from metalport.port.spec.expr import dims_exprs, is_expression, uses_in
from metalport.port.spec.expr import spec_error as _fail


def _schema_args(func: str) -> tuple[dict[str, str], list[str], list[str | None]]:
    """(argument name -> type text, return types, return names) of a `func:` schema string."""
    from torchgen.model import FunctionSchema

    schema = FunctionSchema.parse(func)
    args = {a.name: str(a.type) for a in schema.arguments.flat_all}
    return args, [str(r.type) for r in schema.returns], [r.name for r in schema.returns]


def _plain(kind: str) -> str:
    """A schema type without its `?` and array length (`int[1]?` -> `int[]`)."""
    return re.sub(r"\[\d+\]", "[]", kind.rstrip("?"))


# how a host expression uses an argument -> the plain schema types that allow it
_USES = {"tensor": ("Tensor",), "list": ("int[]", "SymInt[]"), "scalar": ("int", "SymInt", "bool", "float")}
# plain schema type of an argument -> the param field types that can hold it
_HOLDS = {"Scalar": ("float", "int", "long"), "float": ("float",), "bool": ("bool",), "ScalarType": ("int",),
          **dict.fromkeys(("int", "SymInt", "int[]", "SymInt[]"), ("int", "uint", "long"))}


def _check_names(op: str, where: str, texts: Iterable[str], args: Mapping[str, str], name: str) -> None:
    """SpecError when a host expression names something the schema cannot give it: a Tensor is
    only queried (`t.size(d)`), an int[] only summarised (`len/max/min/sum`), other names are
    int, bool or float arguments."""
    for arg, use in uses_in(texts):
        if _plain(args.get(arg, "")) not in _USES[use]:
            raise _fail(op, where, f"{arg!r} is {args.get(arg) or 'no argument'} of {name}; an expression reads "
                        f"int, bool and float arguments, len/max/min/sum of an int[], and a Tensor's dim(), "
                        f"numel(), size(d)")


def _check_outputs(spec: LaunchSpec, args: dict[str, str], returns: list[str], return_names: list[str | None],
                   name: str) -> None:
    """SpecError unless the spec's outputs are the schema's returns: as many, named alike, shaped
    from arguments of the right kind, typed from a ScalarType argument."""
    op = spec.op
    tensors = [r for r in returns if r.startswith("Tensor")]
    if len(tensors) != len(spec.outputs) or len(tensors) != len(returns):
        raise _fail(op, "outputs", f"{len(spec.outputs)} output(s), but {name} returns {len(returns)} "
                    f"({', '.join(returns)})")
    for i, (o, rname) in enumerate(zip(spec.outputs, return_names)):
        if rname is not None and o.name != rname:
            raise _fail(op, f"outputs[{i}].name", f"{o.name!r}, but {name} calls its return {rname!r}")
        if o.shape_arg is not None and o.shape is not OutShape.DIMS:
            want = {OutShape.LIKE: ("Tensor",), OutShape.LENGTH: ("int", "SymInt"),
                    OutShape.SIZES: ("int[]", "SymInt[]")}[o.shape]
            kind = args.get(o.shape_arg, "")
            if not any(kind.rstrip("?") == w or kind.rstrip("?").startswith(w.rstrip("]")) for w in want):
                raise _fail(op, f"outputs[{i}].shape", f"{o.shape_arg!r} is {kind or 'no argument'} of {name}, "
                            f"a {o.shape.value} shape needs {' or '.join(want)}")
        if o.dtype.startswith("arg:"):
            arg = o.dtype[4:].split(":")[0]
            if args.get(arg, "").rstrip("?") != "ScalarType":
                raise _fail(op, f"outputs[{i}].dtype", f"{name} has no ScalarType argument {arg!r}")


def _check_params(spec: LaunchSpec, args: dict[str, str], name: str) -> None:
    """SpecError unless every param field reads a derived size, an expression over the schema's
    arguments, or an argument (a stub port's: a stub parameter) its buffer type can hold."""
    op = spec.op
    for i, p in enumerate(spec.params):
        for j, f in enumerate(p.fields):
            where = f"params[{i}]" + (f".fields[{j}]" if p.struct else "") + ".from"
            if f.source in DERIVED or f.source in DERIVED_ARRAYS or f.source in LIST_ARRAYS:
                continue
            if is_expression(f.source):
                _check_names(op, where, [f.source], args, name)
                continue
            if spec.stub is not None and f.source not in spec.stub.param_names:
                raise _fail(op, where, f"{f.source!r} is no parameter of the stub {spec.stub.name} "
                            f"({', '.join(spec.stub.params) or 'it takes only the iterator'})")
            kind = args.get(f.source)
            if kind is None:
                raise _fail(op, where, f"{f.source!r} is neither an argument of {name} nor one of "
                            f"{', '.join(DERIVED + DERIVED_ARRAYS)}")
            if f.type not in _HOLDS.get(_plain(kind), ()):
                raise _fail(op, where, f"{f.source!r} is {kind}; a {f.type} buffer cannot hold it")


def check_schema(spec: LaunchSpec, func: str) -> None:
    """Raise SpecError (naming the field) when `spec` does not fit the op's schema `func`
    (the `func:` text of its native_functions.yaml entry, e.g. `mode(Tensor self, int dim=-1, ...)`)."""
    op = spec.op
    name = func.split("(", 1)[0]
    base, _, overload = name.partition(".")
    if base != spec.op or overload != spec.overload:
        raise _fail(op, "overload" if base == spec.op else "op",
                    f"the spec is for {spec.op}{'.' + spec.overload if spec.overload else ''}, the schema is {name}")
    args, returns, return_names = _schema_args(func)
    for i, x in enumerate(spec.inputs):
        kind = args.get(x.arg)
        if kind is None:
            raise _fail(op, f"inputs[{i}].arg", f"{name} has no argument {x.arg!r}",
                        hint=f"arguments: {', '.join(args)}")
        if kind.rstrip("?") not in ("Tensor", "Tensor[]"):
            raise _fail(op, f"inputs[{i}].arg", f"{x.arg!r} is {kind}, not a Tensor")
    _check_outputs(spec, args, returns, return_names, name)
    if spec.reduce.dim is not None:
        kind = args.get(spec.reduce.dim)
        if kind is None or kind.rstrip("?").split("[")[0] not in ("int", "SymInt"):
            raise _fail(op, "reduce.dim", f"{spec.reduce.dim!r} is {kind or 'no argument'} of {name}, not an "
                        f"int or int[]")
    if spec.reduce.keepdim is not None and args.get(spec.reduce.keepdim) != "bool":
        raise _fail(op, "reduce.keepdim", f"{spec.reduce.keepdim!r} is {args.get(spec.reduce.keepdim) or 'no argument'}"
                    f" of {name}, not a bool")
    _check_params(spec, args, name)
    for i, c in enumerate(spec.checks):
        _check_names(op, f"checks[{i}]", c.expressions, args, name)
        unknown = [a for a, _ in uses_in(c.expressions) if spec.stub is not None and a not in spec.stub.param_names]
        if unknown:
            raise _fail(op, f"checks[{i}]", f"{unknown[0]!r} is no parameter of the stub {spec.stub.name}: its host "
                        f"sees only the iterator and those")
    for i, o in enumerate(spec.outputs):
        if o.shape is OutShape.DIMS and o.shape_arg:
            for e in dims_exprs(o.shape_arg):
                _check_names(op, f"outputs[{i}].shape", [e], args, name)
    if any(o.shape is OutShape.REDUCED for o in spec.outputs) and spec.geometry.grid is Grid.PER_INPUT_ELEMENT:
        raise _fail(op, "geometry.grid", "a per-input-element grid is larger than a reduced output",
                    hint="use per-output-element or per-slice")


def _normal_type(text: str) -> str:
    return re.sub(r"\s+", "", re.sub(r"\b(?:c10|at)::", "", text))


def check_stub(sources: Sources, spec: LaunchSpec) -> None:
    """SpecError unless the tree declares the spec's stub in its header with the spec's parameters
    after a TensorIterator (Note [stub reductions])."""
    assert spec.stub is not None
    decl = sources.stub(spec.stub.name)
    if decl is None:
        raise SpecError(f"spec {spec.op}: stub.name: no DECLARE_DISPATCH of {spec.stub.name} in the tree's "
                        f"ATen/native headers")
    if not decl.where.file.endswith("/" + spec.stub.header):
        raise SpecError(f"spec {spec.op}: stub.header: {spec.stub.name} is declared in {decl.where.file}, "
                        f"not {spec.stub.header}")
    params = [p.strip() for p in (decl.params or "").split(",")] if decl.params else []
    if not params or _normal_type(params[0]) not in ("TensorIterator&", "TensorIteratorBase&"):
        raise SpecError(f"spec {spec.op}: stub.name: {spec.stub.name} takes ({decl.params or '?'}), not a "
                        f"reduction iterator first", location=str(decl.where))
    want = [_normal_type(re.sub(r"\s*\w+$", "", p)) for p in spec.stub.params]
    have = [_normal_type(re.sub(r"(?<=[\w&*>])\s+\w+$", "", p)) for p in params[1:]]
    if want != have:
        raise SpecError(f"spec {spec.op}: stub.params: {spec.stub.name} takes ({decl.params}); the spec gives "
                        f"(TensorIterator&{''.join(', ' + p for p in spec.stub.params)})", location=str(decl.where))


__all__ = ["check_schema", "check_stub"]
