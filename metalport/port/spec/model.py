"""`LaunchSpec`: how the MPS host launches a custom Metal kernel, as data.

One spec is the single source of truth for a reduction or custom-kernel port: `hostgen` writes the
`.mm` host function from it, and the emulated host (`metalport.checks.host.spec`) runs the kernel
from the same spec, so conformance checks the kernel and its launch geometry together.

A spec is plain data (`load_spec` takes a dict or YAML text, `LaunchSpec.to_dict` gives it back),
so a model can write one. `load_spec` checks its shape; `spec_schema.check_schema` checks it against the op's
`func:` schema in native_functions.yaml. Every error is one-line `SpecError` naming the field:

    spec mode: geometry.threadgroup: 2048 threads is over the limit of 1024

Kernel ABI (Note [spec buffers]): the kernel's `[[buffer(n)]]` parameters are, in order, every
input, every output, then every `params` entry (a scalar, an array or a struct, each in its own
constant buffer). Host names are `<kernel.name>_<type>_<type>...`, one Metal type per input then
per output, as listed in `dtypes`.
"""

from __future__ import annotations

import ast
import enum
import functools
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import yaml

from metalport.errors import SpecError
from metalport.metal_types import METAL_TYPES
from metalport.port.spec.expr import (CHECK_TENSOR_METHODS, LIST_FUNCTIONS, check_expression, check_holds,
                                      check_message, dims_exprs, eval_threads, host_value, is_expression, message_parts)
from metalport.port.spec.expr import spec_error as _fail
from metalport import python_ast

MAX_THREADGROUP = 1024  # maxTotalThreadsPerThreadgroup on Apple GPUs

# Metal element types a spec may instantiate, with the torch dtype each stands for.
METAL_DTYPES: dict[str, str] = {t.name: t.torch_name for t in METAL_TYPES}
PARAM_TYPES = ("float", "int", "uint", "long", "ulong", "bool")
# Values the host derives from the call (usable in params `from:` and geometry `threads:`).
DERIVED = ("reduce_size", "num_slices", "numel", "output_numel", "ndim")
DERIVED_ARRAYS = ("sizes", "strides")  # of the first input, innermost first (uint/long arrays)
# Of tensor lists (per-chunk grid): (tensor, first element) per chunk, and each tensor's numel.
LIST_ARRAYS = ("chunks", "numels")


class Layout(enum.Enum):
    """How the host hands an input tensor to the kernel."""

    CONTIGUOUS = "contiguous"  # a contiguous copy (`self.contiguous()`)
    REDUCE_LAST = "reduce-last"  # reduced dims moved last, then contiguous: slice s is [s*R, (s+1)*R)
    STRIDED = "strided"  # as is; the kernel takes `sizes`/`strides` params


class Grid(enum.Enum):
    """Grid geometry: how many threads, and what one thread (or threadgroup) does."""

    PER_OUTPUT_ELEMENT = "per-output-element"  # one thread per output element (1-D)
    PER_SLICE = "per-slice"  # one threadgroup per reduced slice, reducing in threadgroup memory
    PER_WINDOW = "per-window"  # one threadgroup per output element, its window reduced cooperatively
    PER_INPUT_ELEMENT = "per-input-element"  # one thread per element of the first input
    PER_CHUNK = "per-chunk"  # tensor lists: 2-D, x = element in a chunk of `threadgroup`, y = chunk


class OutShape(enum.Enum):
    """An output's shape rule; LIKE, SIZES and LENGTH name a schema argument (`OutputSpec.shape_arg`)."""

    SAME = "same"  # the first input's shape
    REDUCED = "reduced"  # the first input's shape without the reduced dims (kept as 1 with keepdim)
    LIKE = "like"  # `like:<tensor arg>`: that tensor's shape (take: the index's)
    SIZES = "sizes"  # `sizes:<int[] arg>`: the first input's shape with its last len(arg) dims replaced
    LENGTH = "length"  # `length:<int arg>`: 1-D of that many elements (logspace's steps)
    DIMS = "dims"  # `dims:[<expr>, ...]`: one host expression per dim (Note [spec checks]), ctc's (B, T, S)


_TOP = {"op", "overload", "kind", "opinfo", "host", "kernel", "inputs", "outputs", "reduce", "params",
        "geometry", "dtypes", "cases", "checks", "stub", "grad_xfail"}


@dataclass(frozen=True)
class InputSpec:
    """One tensor argument the kernel reads."""

    arg: str  # schema argument name ("self")
    layout: Layout = Layout.CONTIGUOUS


@dataclass(frozen=True)
class OutputSpec:
    """One tensor the kernel writes: its shape and dtype rule."""

    name: str  # the schema's return name, or out0, out1...
    shape: OutShape = OutShape.REDUCED
    # "same" (first input's), "index" (int64), a Metal type name ("ulong"), or
    # "arg:<ScalarType? argument>[:<default Metal type>]" (default: the first input's dtype)
    dtype: str = "same"
    shape_arg: str | None = None  # the argument of a like:/sizes:/length: shape, the list of a dims: shape
    fill: str | None = None  # "zero": the host zero-fills the output before the launch
    # "cpu-set": only the elements torch's CPU kernel sets are compared (Note [unset outputs] in
    # checks/judge/outputs.py); None: every element
    compare: str | None = None

    @property
    def shape_text(self) -> str:
        """The shape rule as written (`reduced`, `like:index`)."""
        return self.shape.value + (f":{self.shape_arg}" if self.shape_arg else "")


@dataclass(frozen=True)
class ParamField:
    """One scalar value: where it comes from and its Metal type."""

    name: str
    source: str  # a schema argument, a DERIVED value, a DERIVED_ARRAYS name, or a host expression
    type: str  # one of PARAM_TYPES
    length: int | None = None  # a fixed-size array field (`long sizes[5]`), padded with zeros


@dataclass(frozen=True)
class ParamSpec:
    """One constant buffer: a scalar (one field, no `struct`), an array (`sizes`/`strides`), or a
    struct of several fields (`struct` names its C++ type)."""

    name: str
    fields: tuple[ParamField, ...]
    struct: str | None = None


@dataclass(frozen=True)
class ReduceSpec:
    """Which schema arguments give the reduced dims and keepdim."""

    dim: str | None = None  # an int, int[] or int[1]? argument; None: every dim
    keepdim: str | None = None  # a bool argument; None: never kept


@dataclass(frozen=True)
class CheckSpec:
    """An argument check the host makes before anything else (Note [spec checks]): `require` is a
    condition over scalar schema arguments (`mode == 0`), `message` the error text when it fails,
    `{arg}` standing for an argument's value (`Unknown hash_tensor mode: {mode}`)."""

    require: str
    message: str

    @property
    def expressions(self) -> tuple[str, ...]:
        """The condition, then the `{...}` expressions of the message, in order."""
        return (self.require, *(name for _, name in message_parts(self.message) if name))


@dataclass(frozen=True)
class StubSpec:
    """Note [stub reductions]: a reduction-stub port registers the stub CPU and CUDA reach through
    a reduction iterator (`REGISTER_DISPATCH(powsum_stub, &<host.function>)`) and the routed row
    becomes `CPU, CUDA, MPS: <their function>`. `params` are the stub's parameters after the
    iterator, each `<C++ type> <name>` as the DECLARE_DISPATCH's function type gives the types
    (`const Scalar& ord`); a params `from:` names them."""

    name: str
    header: str  # the ATen header declaring it, as included (`ATen/native/ReduceOps.h`)
    params: tuple[str, ...] = ()

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(re.findall(r"(\w+)\s*$", p)[0] for p in self.params)


@dataclass(frozen=True)
class GeometrySpec:
    """The grid rule, the threadgroup size, and an optional explicit thread count."""

    grid: Grid
    threadgroup: int | None = None
    threads: str | None = None  # an expression over DERIVED names, e.g. "num_slices * 2"


@dataclass(frozen=True)
class LaunchSpec:
    """A whole launch: see the module docstring; build it with `load_spec`."""

    op: str
    overload: str
    kind: str
    host_function: str
    host_file: str
    kernel_file: str
    kernel_name: str
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    params: tuple[ParamSpec, ...]
    geometry: GeometrySpec
    dtypes: tuple[tuple[str, ...], ...]
    reduce: ReduceSpec = field(default_factory=ReduceSpec)
    opinfo: str | None = None
    cases: Mapping[str, Any] = field(default_factory=dict)  # extra case knobs for conformance
    # The host functions of the op's `.out` and in-place entries, when the port routes those too
    # (hostgen_elementwise writes them around the same launch).
    host_out_function: str | None = None
    host_inplace_function: str | None = None
    checks: tuple[CheckSpec, ...] = ()
    # Entries whose CPU/CUDA function is device-generic (it calls the op): MPS joins their row
    # (`CPU, CUDA, MPS: f`), e.g. `_ctc_loss.Tensor`, which copies its lengths and calls `_ctc_loss`.
    host_shared: tuple[str, ...] = ()
    stub: StubSpec | None = None
    # Why the op's backward stays off MPS (its OpInfo's gradient checks get an XFAILLIST_GRAD entry).
    grad_xfail: str | None = None

    @property
    def host_names(self) -> tuple[str, ...]:
        """Every kernel host name the instantiations make (`mode_float_float_long`)."""
        return tuple(self.host_name(types) for types in self.dtypes)

    def host_name(self, types: tuple[str, ...]) -> str:
        """The host name of one instantiation."""
        return "_".join((self.kernel_name, *types))

    def instantiation_for(self, input_dtypes: str | tuple[str, ...],
                          output_dtypes: tuple[str, ...] | None = None) -> tuple[str, ...] | None:
        """The instantiation whose inputs are `input_dtypes` (torch dtype names; one name: the first
        input's) and, if given, whose outputs are `output_dtypes`; None when the spec registers none."""
        wanted = (input_dtypes,) if isinstance(input_dtypes, str) else tuple(input_dtypes)
        for types in self.dtypes:
            if tuple(METAL_DTYPES[t] for t in types[:len(wanted)]) != wanted:
                continue
            outs = types[len(self.inputs):]
            if output_dtypes is None or tuple(METAL_DTYPES[t] for t in outs) == tuple(output_dtypes):
                return types
        return None

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain data (`load_spec(spec.to_dict()) == spec`)."""
        out: dict[str, Any] = {
            "op": self.op, "overload": self.overload, "kind": self.kind,
            "host": {"function": self.host_function, "file": self.host_file,
                     **({"out_function": self.host_out_function} if self.host_out_function else {}),
                     **({"inplace_function": self.host_inplace_function} if self.host_inplace_function else {}),
                     **({"shared": list(self.host_shared)} if self.host_shared else {})},
            "kernel": {"file": self.kernel_file, "name": self.kernel_name},
            "inputs": [{"arg": i.arg, "layout": i.layout.value} for i in self.inputs],
            "outputs": [{"name": o.name, "shape": o.shape_text, "dtype": o.dtype,
                         **({"fill": o.fill} if o.fill else {}),
                         **({"compare": o.compare} if o.compare else {})} for o in self.outputs],
            "params": [_param_dict(p) for p in self.params],
            "geometry": {k: v for k, v in (("grid", self.geometry.grid.value),
                                           ("threadgroup", self.geometry.threadgroup),
                                           ("threads", self.geometry.threads)) if v is not None},
            "dtypes": [list(t) for t in self.dtypes],
        }
        if self.reduce != ReduceSpec():
            out["reduce"] = {k: v for k, v in (("dim", self.reduce.dim), ("keepdim", self.reduce.keepdim))
                             if v is not None}
        if self.opinfo is not None:
            out["opinfo"] = self.opinfo
        if self.cases:
            out["cases"] = dict(self.cases)
        if self.checks:
            out["checks"] = [{"require": c.require, "message": c.message} for c in self.checks]
        if self.stub is not None:
            out["stub"] = {"name": self.stub.name, "header": self.stub.header, "params": list(self.stub.params)}
        if self.grad_xfail is not None:
            out["grad_xfail"] = self.grad_xfail
        return out


def _field_dict(f: ParamField) -> dict[str, Any]:
    return {"name": f.name, "from": f.source, "type": f.type, **({"length": f.length} if f.length else {})}


def _param_dict(p: ParamSpec) -> dict[str, Any]:
    if p.struct is None:
        return _field_dict(p.fields[0])
    return {"name": p.name, "struct": p.struct, "fields": [_field_dict(f) for f in p.fields]}


# ---------------------------------------------------------------------------------------------
# Loading: shape checks, each error naming its field.


def _take(data: Any, where: str, op: str, known: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise _fail(op, where, f"expected a mapping, got {type(data).__name__}")
    extra = sorted(set(data) - known)
    if extra:
        raise _fail(op, f"{where}.{extra[0]}" if where else extra[0], "unknown field",
                    hint=f"known fields: {', '.join(sorted(known))}")
    missing = sorted(required - set(data))
    if missing:
        raise _fail(op, f"{where}.{missing[0]}" if where else missing[0], "missing")
    return dict(data)


def _str(value: Any, where: str, op: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(op, where, f"expected a non-empty string, got {value!r}")
    return value


def _enum(cls: type[enum.Enum], value: Any, where: str, op: str) -> Any:
    try:
        return cls(value)
    except ValueError:
        choices = ", ".join(m.value for m in cls)  # type: ignore[attr-defined]
        raise _fail(op, where, f"{value!r} is not one of {choices}") from None


def _list(value: Any, where: str, op: str, *, empty: bool = False) -> list[Any]:
    if not isinstance(value, list) or (not value and not empty):
        raise _fail(op, where, f"expected a {'' if empty else 'non-empty '}list, got {value!r}")
    return value


_T = TypeVar("_T")


def _each(value: Any, where: str, op: str, read: Callable[[Any, str, str], _T], *, empty: bool = False
          ) -> tuple[_T, ...]:
    """`read(item, "<where>[i]", op)` of each item of the list `value`, in order."""
    return tuple(read(item, f"{where}[{i}]", op) for i, item in enumerate(_list(value, where, op, empty=empty)))


def _field(data: Any, where: str, op: str) -> ParamField:
    d = _take(data, where, op, {"name", "from", "type", "length"}, {"name", "from", "type"})
    kind = d["type"]
    if kind not in PARAM_TYPES:
        raise _fail(op, f"{where}.type", f"{kind!r} is not one of {', '.join(PARAM_TYPES)}")
    length = d.get("length")
    if length is not None and (not isinstance(length, int) or isinstance(length, bool) or length < 1):
        raise _fail(op, f"{where}.length", f"{length!r} is not a positive int")
    source = _str(d["from"], f"{where}.from", op)
    if is_expression(source):
        check_expression(source, f"{where}.from", op)
    return ParamField(_str(d["name"], f"{where}.name", op), source, kind, length)


def _param(data: Any, where: str, op: str) -> ParamSpec:
    if isinstance(data, Mapping) and "struct" in data:
        d = _take(data, where, op, {"name", "struct", "fields"}, {"name", "struct", "fields"})
        fields_ = _each(d["fields"], f"{where}.fields", op, _field)
        return ParamSpec(_str(d["name"], f"{where}.name", op), fields_, _str(d["struct"], f"{where}.struct", op))
    f = _field(data, where, op)
    return ParamSpec(f.name, (f,))


def _threads_expr(text: Any, where: str, op: str) -> str:
    """Check that `text` is an integer expression over DERIVED names (+ - * // max min, ints)."""
    text = _str(text, where, op)
    try:
        tree = python_ast.parse(text, mode="eval")
    except SyntaxError:
        raise _fail(op, where, f"{text!r} is not an expression") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in DERIVED and node.id not in ("max", "min"):
            raise _fail(op, where, f"unknown name {node.id!r}", hint=f"use {', '.join(DERIVED)}")
        if not isinstance(node, (ast.Expression, ast.BinOp, ast.Name, ast.Load, ast.Constant, ast.Call,
                                 ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            raise _fail(op, where, f"{text!r} uses {type(node).__name__}; only + - * // max min and ints")
    return text


def _check(data: Any, where: str, op: str) -> CheckSpec:
    d = _take(data, where, op, {"require", "message"}, {"require", "message"})
    require, message = _str(d["require"], f"{where}.require", op), _str(d["message"], f"{where}.message", op)
    check_expression(require, f"{where}.require", op)
    try:
        parts = list(string.Formatter().parse(message))
    except ValueError as err:
        raise _fail(op, f"{where}.message", f"{message!r}: {err}") from None
    for _, name, spec_, conv in parts:
        if name is not None and (spec_ or conv or not name.strip()):
            raise _fail(op, f"{where}.message", f"{{{name}}} is not a plain {{expression}}")
        if name:
            check_expression(name, f"{where}.message", op)
    return CheckSpec(require, message)


def _stub(data: Any, op: str, kind: str, inputs: tuple[InputSpec, ...], outputs: tuple[OutputSpec, ...]) -> StubSpec:
    """The `stub:` section (Note [stub reductions]): a reduction of one reduce-last input to one output."""
    s = _take(data, "stub", op, {"name", "header", "params"}, {"name", "header"})
    name = _str(s["name"], "stub.name", op)
    if not name.isidentifier():
        raise _fail(op, "stub.name", f"{name!r} is not a C++ name")
    header = _str(s["header"], "stub.header", op)
    if not re.fullmatch(r"ATen/native/[\w/]+\.h", header) or ".." in header:
        raise _fail(op, "stub.header", f"{header!r} is not an ATen/native/*.h header")
    params = []
    for i, p in enumerate(_list(s.get("params", []), "stub.params", op, empty=True)):
        text = _str(p, f"stub.params[{i}]", op)
        if not re.fullmatch(r"[\w:<>,\s&*]+?[\s&*]\w+", text.strip()):
            raise _fail(op, f"stub.params[{i}]", f"{text!r} is not '<C++ type> <name>'")
        params.append(text.strip())
    if kind != "reduction-stub":
        raise _fail(op, "stub", f"a {kind} port registers no stub", hint="kind: reduction-stub")
    if len(inputs) != 1 or inputs[0].layout is not Layout.REDUCE_LAST or len(outputs) != 1 \
            or outputs[0].shape is not OutShape.REDUCED:
        raise _fail(op, "stub", "a stub port reduces one reduce-last input to one reduced output "
                    "(what a reduction iterator carries)")
    return StubSpec(name, header, tuple(params))


def load_spec(data: Mapping[str, Any] | str) -> LaunchSpec:
    """A LaunchSpec from a dict or YAML text; SpecError naming the first bad field.

    This checks the spec's own consistency (field types, threadgroup limit, dtype arity); use
    `check_schema` for its consistency with the op's schema.
    """
    if isinstance(data, str):
        return _spec_from_text(data)
    return _spec_from(data)


@functools.lru_cache(maxsize=64)
def _spec_from_text(text: str) -> LaunchSpec:
    """`load_spec` of a YAML text, once per text per process (the recipe table is read by resolve,
    plan and edit); libyaml parses it when installed, the pure-Python parser words a YAML error."""
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise SpecError(f"spec: not YAML: {str(err).splitlines()[0]}") from None
    return _spec_from(data)


def _spec_from(data: Any) -> LaunchSpec:
    """`load_spec` of parsed data: each part read and checked in file order, so the first bad field
    is the one named."""
    op = str(data.get("op", "?")) if isinstance(data, Mapping) else "?"
    d = _take(data, "", op, _TOP, {"op", "kind", "host", "kernel", "inputs", "outputs", "geometry", "dtypes"})
    op = _str(d["op"], "op", op)
    host = _take(d["host"], "host", op, {"function", "file", "out_function", "inplace_function", "shared"},
                 {"function", "file"})
    shared = _each(host.get("shared", []), "host.shared", op, _str, empty=True)
    kernel = _take(d["kernel"], "kernel", op, {"file", "name"}, {"file", "name"})
    inputs = _each(d["inputs"], "inputs", op, _input, empty=True)
    outputs = _each(d["outputs"], "outputs", op, functools.partial(_output, has_inputs=bool(inputs)))
    params = _each(d.get("params", []), "params", op, _param, empty=True)
    geometry = _geometry(d["geometry"], op)
    types = _dtype_rows(d["dtypes"], op, inputs, outputs)
    red = d.get("reduce", {})
    r = _take(red, "reduce", op, {"dim", "keepdim"}, set())
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise _fail(op, "params", f"duplicate name {next(n for n in names if names.count(n) > 1)!r}")
    cases = d.get("cases", {})
    if not isinstance(cases, Mapping):
        raise _fail(op, "cases", "expected a mapping")
    checks = _each(d.get("checks", []), "checks", op, _check, empty=True)
    _check_kind(d["kind"], op)
    stub = _stub(d["stub"], op, d["kind"], inputs, outputs) if "stub" in d else None
    grad_xfail = _str(d["grad_xfail"], "grad_xfail", op) if "grad_xfail" in d else None
    if grad_xfail is not None and (not re.fullmatch(r"[\w .,:;`'()/<>=+-]+", grad_xfail) or "opinfo" not in d):
        raise _fail(op, "grad_xfail", "one line of plain text (it becomes a comment), with an `opinfo` to key it")
    return LaunchSpec(
        op=op, overload=str(d.get("overload", "") or ""), kind=_str(d["kind"], "kind", op),
        host_function=_str(host["function"], "host.function", op), host_file=_str(host["file"], "host.file", op),
        host_out_function=_str(host["out_function"], "host.out_function", op) if "out_function" in host else None,
        host_inplace_function=_str(host["inplace_function"], "host.inplace_function", op)
        if "inplace_function" in host else None,
        kernel_file=_str(kernel["file"], "kernel.file", op), kernel_name=_str(kernel["name"], "kernel.name", op),
        inputs=inputs, outputs=outputs, params=params, geometry=geometry, dtypes=tuple(types),
        reduce=ReduceSpec(r.get("dim"), r.get("keepdim")),
        opinfo=d.get("opinfo"), cases=dict(cases), checks=checks, host_shared=shared, stub=stub,
        grad_xfail=grad_xfail)


def _input(raw: Any, where: str, op: str) -> InputSpec:
    """One `inputs:` item: the schema argument and its layout."""
    x = _take(raw, where, op, {"arg", "layout"}, {"arg"})
    return InputSpec(_str(x["arg"], f"{where}.arg", op),
                     _enum(Layout, x.get("layout", "contiguous"), f"{where}.layout", op))


def _output(raw: Any, where: str, op: str, has_inputs: bool) -> OutputSpec:
    """One `outputs:` item: its name, shape rule (and the rule's argument), dtype, fill and compare."""
    x = _take(raw, where, op, {"name", "shape", "dtype", "fill", "compare"}, {"name"})
    if x.get("compare") not in (None, "cpu-set"):
        raise _fail(op, f"{where}.compare", f"{x['compare']!r} is not 'cpu-set'")
    dtype = x.get("dtype", "same")
    fixed = dtype in METAL_DTYPES
    by_arg = isinstance(dtype, str) and dtype.startswith("arg:") and dtype.count(":") <= 2 and \
        (dtype.count(":") == 1 or dtype.rsplit(":", 1)[1] in METAL_DTYPES)
    if dtype not in ("same", "index") and not fixed and not by_arg:
        raise _fail(op, f"{where}.dtype", f"{dtype!r} is not same, index, a Metal type or "
                    f"arg:<argument>[:<default Metal type>]")
    shape_text = str(x.get("shape", "reduced"))
    rule, _, shape_arg = shape_text.partition(":")
    shape = _enum(OutShape, rule, f"{where}.shape", op)
    if bool(shape_arg) != (shape in (OutShape.LIKE, OutShape.SIZES, OutShape.LENGTH, OutShape.DIMS)):
        raise _fail(op, f"{where}.shape", f"{shape_text!r}: like, sizes and length take ':<argument>', "
                    f"dims ':[<expression>, ...]', same and reduced take none")
    if shape is OutShape.DIMS:
        shape_arg = shape_arg.strip()
        try:
            listed = python_ast.parse(shape_arg, mode="eval").body
        except SyntaxError:
            listed = None
        if not isinstance(listed, ast.List):
            raise _fail(op, f"{where}.shape", f"{shape_text!r}: dims takes a list, dims:[<expression>, ...]")
        for e in dims_exprs(shape_arg):
            check_expression(e, f"{where}.shape", op)
    if x.get("fill") not in (None, "zero"):
        raise _fail(op, f"{where}.fill", f"{x['fill']!r} is not 'zero'")
    if shape in (OutShape.SAME, OutShape.REDUCED, OutShape.SIZES) and not has_inputs:
        raise _fail(op, f"{where}.shape", f"{shape.value} needs an input to take the shape from")
    return OutputSpec(_str(x["name"], f"{where}.name", op), shape, dtype, shape_arg or None, x.get("fill"),
                      x.get("compare"))


def _geometry(raw: Any, op: str) -> GeometrySpec:
    """`geometry:`: the grid, the threadgroup size (needed by per-slice and per-window grids, at
    most MAX_THREADGROUP) and the optional thread count expression."""
    g = _take(raw, "geometry", op, {"grid", "threadgroup", "threads"}, {"grid"})
    grid = _enum(Grid, g["grid"], "geometry.grid", op)
    group = g.get("threadgroup")
    if group is not None and (not isinstance(group, int) or isinstance(group, bool) or group < 1):
        raise _fail(op, "geometry.threadgroup", f"{group!r} is not a positive int")
    if group is not None and group > MAX_THREADGROUP:
        raise _fail(op, "geometry.threadgroup", f"{group} threads is over the limit of {MAX_THREADGROUP}",
                    hint="Apple GPUs run at most 1024 threads per threadgroup")
    if grid in (Grid.PER_SLICE, Grid.PER_WINDOW) and group is None:
        raise _fail(op, "geometry.threadgroup", f"a {grid.value} grid needs a threadgroup size")
    threads = _threads_expr(g["threads"], "geometry.threads", op) if "threads" in g else None
    return GeometrySpec(grid, group, threads)


def _dtype_rows(raw: Any, op: str, inputs: tuple[InputSpec, ...], outputs: tuple[OutputSpec, ...]
                ) -> list[tuple[str, ...]]:
    """`dtypes:`: one Metal type per input then per output in each row, agreeing with each output's
    dtype rule, no row twice."""
    types: list[tuple[str, ...]] = []
    for i, raw_row in enumerate(_list(raw, "dtypes", op)):
        row = tuple(_list(raw_row, f"dtypes[{i}]", op))
        if len(row) != len(inputs) + len(outputs):
            raise _fail(op, f"dtypes[{i}]", f"{len(row)} types for {len(inputs)} input(s) and "
                        f"{len(outputs)} output(s)", hint="one Metal type per input, then per output")
        for t in row:
            if t not in METAL_DTYPES:
                raise _fail(op, f"dtypes[{i}]", f"unknown Metal type {t!r}",
                            hint=f"use {', '.join(METAL_DTYPES)}")
        for o, t in zip(outputs, row[len(inputs):]):
            if o.dtype == "index" and t != "long":
                raise _fail(op, f"dtypes[{i}]", f"index output {o.name!r} must be long, not {t!r}")
            if o.dtype in METAL_DTYPES and t != o.dtype:
                raise _fail(op, f"dtypes[{i}]", f"output {o.name!r} has dtype {o.dtype!r}, not {t!r}")
            if o.dtype == "same" and inputs and t != row[0]:
                raise _fail(op, f"dtypes[{i}]", f"output {o.name!r} has dtype 'same' but {t!r} is not "
                            f"the input's {row[0]!r}")
        if row in types:
            raise _fail(op, f"dtypes[{i}]", f"{list(row)} is listed twice")
        types.append(row)
    return types


def _check_kind(kind: Any, op: str) -> None:
    """SpecError unless `kind` is a port kind a launch spec can describe."""
    from metalport.port.tree.kinds import Kind

    kinds = [k.value for k in Kind if k not in (Kind.POINTWISE_STUB, Kind.NOT_A_CANDIDATE)]
    if kind not in kinds:
        raise _fail(op, "kind", f"{kind!r} is not one of {', '.join(kinds)}")


__all__ = ["CHECK_TENSOR_METHODS", "DERIVED", "DERIVED_ARRAYS", "LIST_ARRAYS", "LIST_FUNCTIONS", "MAX_THREADGROUP",
           "METAL_DTYPES", "CheckSpec", "GeometrySpec", "Grid", "InputSpec", "LaunchSpec", "Layout", "OutShape",
           "OutputSpec", "ParamField", "ParamSpec", "ReduceSpec", "StubSpec", "check_holds", "check_message",
           "dims_exprs", "eval_threads", "host_value", "is_expression", "load_spec"]
