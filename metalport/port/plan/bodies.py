"""Iterator bodies: an op whose `MPS:` rows stay and whose MPSGraph bodies become TensorIterator
launches of a Metal functor.

Note [iterator bodies]: CPU and CUDA give some elementwise ops kernels of their own with no shared
stub (log_sigmoid_forward: `log_sigmoid_forward_out_cpu` fills a scratch `buffer` for the backward;
`log_sigmoid_forward_out_cuda` builds a TensorIterator and leaves it empty), so there is nothing to
register and no shared row to collapse onto. Its MPS port keeps the `MPS:` rows and rewrites the
body of the out function they name: an iterator over the tensors the MPSGraph code reads
(`Placeholder(..., self)`) writing the one output it writes, launched through the host file's
`lib.exec_unary_kernel` / `exec_binary_kernel` (the file launches its kernel file's functors
already: it includes `<Kernel>_metallib.h`). Outputs the graph never wrote (the buffer) are
returned as given, and inputs it never read (the backward's buffer) stay unread. The shape comes
from the existing MPS code and the schema, never from the op's name; an op outside it (several
written outputs, no graph body, a file with no library) gets no such plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from metalport.checkout.cpp import closing, split_top_level
from metalport.checkout.layout import KERNELS_DIR, Checkout
from metalport.checkout.sources import ImplKind
from metalport.port.write.host import skip_to_close
from metalport.port.tree.resolve import Resolution, mps_only_lines

ITERATOR_BODIES = "iterator-bodies"  # the plan kind of such a port
_LIBRARY = re.compile(r"^\s*static\s+auto\s*&\s*lib\s*=", re.MULTILINE)
_METALLIB = re.compile(r"#include <ATen/native/mps/(\w+)_metallib\.h>")
_PLACEHOLDER = re.compile(r"\bPlaceholder\s*\(\s*[^,()]+,\s*(\w+)\s*[,)]")
_RESIZE = re.compile(r"^[ \t]*(\w+)\.resize_as_\(\s*\w+\s*\);[ \t]*$", re.MULTILINE)
_LAUNCHERS = {1: ("unary", "exec_unary_kernel"), 2: ("binary", "exec_binary_kernel")}


@dataclass(frozen=True)
class IteratorBody:
    """One out function whose MPSGraph body becomes an iterator launch (Note [iterator bodies])."""

    file: str  # the host file, relative to the checkout
    function: str  # `log_sigmoid_forward_out_mps`
    host_family: str  # "unary" | "binary"
    output: str  # the one tensor the iterator writes
    inputs: tuple[str, ...]  # the tensors it reads, in the function's parameter order
    untouched: tuple[str, ...]  # outputs returned as given (the graph never wrote them)
    unread: tuple[str, ...]  # tensor inputs the graph never read
    kernel_file: str  # the `.metal` whose library the host file launches
    body: str  # the new body, braces excluded
    note: str = ""  # why the iterator has this shape, when it is not elementwise (Note [grad over halves])

    def why(self) -> str:
        """One plan line: what the body becomes and why."""
        extra = "".join(f"; {n} returned as given (the MPSGraph code never wrote it)" for n in self.untouched)
        extra += "".join(f"; {n} not read (the MPSGraph code never read it)" for n in self.unread)
        extra += f"; {self.note}" if self.note else ""
        return (f"{self.function} ({self.file}) keeps its row; its MPSGraph body becomes a {self.host_family} "
                f"TensorIterator over {', '.join(self.inputs)} writing {self.output}, launched through the "
                f"file's library ({self.kernel_file}){extra}")


def _definition(text: str, name: str) -> tuple[int, int, int] | None:
    """(start of the head, its `{`, its `}`) of function `name`'s definition in `text`, a plain
    function or `TORCH_IMPL_FUNC(name)(...)` (its head then starts at the parameters' `(`)."""
    plain = rf"^[A-Za-z_][\w:<>&*, ]*\b{re.escape(name)}\s*\("
    impl = rf"^TORCH_IMPL_FUNC\s*\(\s*{re.escape(name)}\s*\)\s*\("
    for m in re.finditer(f"{plain}|{impl}", text, re.MULTILINE):
        brace = text.find("{", m.end())
        if brace >= 0 and ";" not in text[m.end():brace]:
            close = skip_to_close(text, brace)
            return (m.start(), brace, close) if close > brace else None
    return None


def _head_params(head: str) -> list[tuple[str, str]]:
    """(declaration without its default, name) of every parameter of the function head, in order."""
    start = head.index("(")
    inner = head[start + 1:closing(head, start)]
    decls = [p.split("=")[0].strip() for p in split_top_level(inner) if p.strip()]
    return [(d, d.split()[-1].lstrip("&*")) for d in decls]


def _tensor_params(head: str) -> tuple[list[str], list[str]]:
    """(read-only tensors, writable tensors) among the head's parameters, by their C++ types."""
    tensors = [(d, n) for d, n in _head_params(head) if re.search(r"\bTensor\s*&", d)]
    return [n for d, n in tensors if d.startswith("const ")], [n for d, n in tensors if not d.startswith("const ")]


def _final_return(body: str) -> str | None:
    """The function's last statement when it is a `return ...;` (the value the new body returns)."""
    found = list(re.finditer(r"^[ \t]*(return\b[^;]*;)[ \t]*$", body, re.MULTILINE))
    return found[-1].group(1) if found and not body[found[-1].end():].strip() else None


def _new_body(old: str, output: str, inputs: tuple[str, ...], launcher: str, kernel: str) -> str:
    ret = _final_return(old) or "return;"
    resizes = [m.group(0).strip() for m in _RESIZE.finditer(old) if m.group(1) == output]
    adds = "".join(f".add_input({n})" for n in inputs)
    lines = [*resizes, f"if ({output}.numel() == 0) {{", f"  {ret}", "}",
             f"auto iter = at::TensorIteratorConfig().add_output({output}){adds}.build();",
             f'lib.{launcher}(iter, "{kernel}");', ret]
    return "\n" + "".join(f"  {line}\n" for line in lines)


def elementwise_refusal(op: str) -> str | None:
    """Why torch's CPU kernel of `op` is no elementwise map over equal shapes, or None when it is:
    called with every tensor argument of one shape (ints without a default 1, numbers 0.5), it must
    run and return that shape. glu_backward refuses (its grad_output is half of self along dim)."""
    import torch

    packet = getattr(torch.ops.aten, op, None)
    func = getattr(packet, "default", None)
    if func is None:
        return f"torch has no functional aten::{op} to call"
    shape, args = (4, 6), []
    for a in func._schema.arguments:
        kind = str(a.type)
        if kind == "Tensor":
            args.append(torch.rand(shape) - 0.5)
        elif a.has_default_value() or a.kwarg_only:
            break
        elif kind == "int":
            args.append(1)
        elif kind in ("number", "float"):
            args.append(0.5)
        else:
            return f"aten::{op} takes {kind} {a.name}, which an elementwise iterator does not"
    try:
        out = func(*args)
    except (RuntimeError, ValueError, TypeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return f"torch's CPU aten::{op} refuses tensors of one shape ({first})"
    result = out[0] if isinstance(out, tuple) else out
    if not isinstance(result, torch.Tensor) or tuple(result.shape) != shape:
        return f"torch's CPU aten::{op} does not return its inputs' shape"
    return None


def _library_kernel_file(text: str) -> str | None:
    """The `.metal` file whose library the host file `text` launches (its `static auto& lib` built
    from `<Kernel>_metallib.h`), or None when it launches none."""
    library = _METALLIB.search(text)
    if library is None or not _LIBRARY.search(text):
        return None
    return f"{KERNELS_DIR}/{library.group(1)}.metal"


def _graph_hosts(checkout: Checkout, res: Resolution):
    """(entry, MPS line, its MPSGraph host function, that function's file text) for every `MPS:` row of
    `res`'s writable-output entries that names MPSGraph code, in the entries' order."""
    for entry in res.entries:
        if "!" not in entry.func:
            continue
        for line in mps_only_lines(entry):
            fn = res.sources.function(line.kernel)
            if fn is not None and fn.kind is ImplKind.GRAPH:
                yield entry, line, fn, (checkout.root / fn.where.file).read_text(encoding="utf-8")


def iterator_body(checkout: Checkout, res: Resolution) -> IteratorBody | str | None:
    """The iterator body of `res`'s port (Note [iterator bodies]); None when the op is not of that
    shape: a writable-output entry whose `MPS:` row names MPSGraph code reading one or two tensors and
    writing one, in a host file that launches a kernel file's library; a one-line reason when it has
    that shape but its CPU kernel is no elementwise map (`elementwise_refusal`)."""
    if res.kind is None or not res.kind.rows:
        return None
    for _, line, fn, text in _graph_hosts(checkout, res):
        found, kernel_file = _definition(text, line.kernel), _library_kernel_file(text)
        if found is None or kernel_file is None:
            return None
        start, brace, close = found
        head, old = text[start:brace], text[brace + 1:close]
        reads, writes = _tensor_params(head)
        placed = set(_PLACEHOLDER.findall(old))
        written = [n for n in writes if n in placed]
        inputs = tuple(n for n in reads if n in placed)
        if len(written) != 1 or len(inputs) not in _LAUNCHERS:
            return None
        refused = elementwise_refusal(res.op)
        if refused and len(inputs) == 2 and (checkout.root / kernel_file).is_file():
            halves = _halves_body(res, head, old, written[0], inputs, fn.where.file, line.kernel, kernel_file)
            if halves is not None:
                return halves
        if refused:
            return refused
        if not (checkout.root / kernel_file).is_file():
            return None
        family, launcher = _LAUNCHERS[len(inputs)]
        return IteratorBody(fn.where.file, line.kernel, family, written[0], inputs,
                            tuple(n for n in writes if n not in placed), tuple(n for n in reads if n not in placed),
                            kernel_file, _new_body(old, written[0], inputs, launcher, res.op))
    return None


def halves_forward(checkout: Checkout, res: Resolution) -> IteratorBody | None:
    """The body of a function of the two halves of its input (Note [halves forward], port/write/halves.py),
    or None: the op's iterator runs over the two halves of its one tensor (`shape.halves_reason`), and
    its `MPS:` row names MPSGraph code in a host file that launches a kernel file's library. The
    host's names are matched to the schema's by position (`self`, `dim`, the out tensor)."""
    from metalport.port.write.halves import halves_forward_body
    from metalport.port.tree.shape import halves_reason

    why = halves_reason(res)
    if why is None:
        return None
    for entry, line, fn, text in _graph_hosts(checkout, res):
        found, kernel_file = _definition(text, line.kernel), _library_kernel_file(text)
        if found is None or kernel_file is None or not (checkout.root / kernel_file).is_file():
            return None
        start, brace, _ = found
        from torchgen.model import FunctionSchema

        args = FunctionSchema.parse(entry.func).arguments
        schema = [a.name for a in (*args.flat_positional, *args.flat_kwarg_only, *args.out)]
        names = [n for _, n in _head_params(re.sub(r"^TORCH_IMPL_FUNC\s*\(\s*\w+\s*\)", "", text[start:brace]))]
        if len(names) != len(schema) or "dim" not in schema or len(args.out) != 1:
            return None
        host = dict(zip(schema, names))
        full = host[next(a.name for a in args.flat_positional if str(a.type) == "Tensor")]
        output = host[args.out[0].name]
        note = (f"{why}; a contiguous {full} is read as rows of both halves by {res.op}_dense_<T> (one 2D "
                f"launch, the second half a fixed offset on), any other layout is a binary iterator over "
                f"the two narrowed halves, which only the out function sees, so the row stays "
                f"(Note [halves forward])")
        return IteratorBody(fn.where.file, line.kernel, "binary", output, (full,), (), (), kernel_file,
                            halves_forward_body(res.op, full=full, dim=host["dim"], output=output), note)
    return None


def _halves_body(res: Resolution, head: str, old: str, output: str, inputs: tuple[str, ...], file: str,
                 function: str, kernel_file: str) -> IteratorBody | None:
    """The body of a backward over halves (Note [grad over halves], port/write/halves.py), or None when
    torch's CPU op has no such shape; the host's names are matched to the schema's by position."""
    import torch

    from metalport.port.write.halves import HALVES_FAMILY, halves_body, halves_operands

    found = halves_operands(res.op)
    if found is None:
        return None
    schema = [a.name for a in getattr(torch.ops.aten, res.op).default._schema.arguments]
    names = [n for _, n in _head_params(head)]
    if len(names) < len(schema):
        return None
    host = dict(zip(schema, names))
    full, grad, dim = (host[n] for n in found)
    if {full, grad} != set(inputs):
        return None
    returns = _final_return(old) or "return;"
    note = (f"torch's CPU {res.op} takes {grad} of half {full}'s shape along {dim} and returns {full}'s: one "
            f"thread per element of the halved shape writes the gradients of both halves (Note [grad over halves])")
    return IteratorBody(file, function, HALVES_FAMILY, output, (full, grad), (), (), kernel_file,
                        halves_body(res.op, old, full=full, grad=grad, dim=dim, output=output, returns=returns),
                        note)


def rewrite_body(text: str, function: str, body: str, *, path: str) -> str:
    """`text` with the body of `function` replaced by `body`; unchanged when it is that body already.
    RecipeError (with location) when the file no longer defines the function."""
    from metalport.errors import RecipeError

    found = _definition(text, function)
    if found is None:
        raise RecipeError(f"no definition of {function} in the file", location=f"{path}:1",
                          hint="re-plan the op on the current tree")
    _, brace, close = found
    return f"{text[:brace + 1]}{body}{text[close:]}"


__all__ = ["ITERATOR_BODIES", "IteratorBody", "elementwise_refusal", "halves_forward", "iterator_body", "rewrite_body"]
