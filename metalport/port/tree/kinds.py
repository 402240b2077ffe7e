"""Port kinds: how an op would reach MPS, read from its registry rows and its dispatch stub.

`classify` is pure: it takes the op's registry record, the stub route its CPU kernel takes
(`checkout.routing`) and the stub's declaration (`checkout.sources.StubDecl`, with the parameters
of its function type) and returns a `Classification`. No file is read here.

Note [reduction or pointwise]: CPU and CUDA reach a pointwise stub through the structured op's
own iterator (`structured_inherits: TensorIteratorBase`; the stub takes a `TensorIteratorBase&`),
and a reduction stub through an iterator built for the reduction (`make_reduction` in
ReduceOps.cpp; the stub takes a `TensorIterator&`, maybe with a correction or norm scalar) or
through a stub taking tensors whose CUDA kernel builds the reduction iterator itself (`max_stub`,
`aminmax_stub`: `int64_t dim, bool keepdim`). So an iterator stub of an op that reduces (the
`reduction` tag, or a `bool keepdim` argument) makes a reduction-stub port, any other iterator stub
of an elementwise op a pointwise one. A tensor-taking stub has the very signature of one that is
no reduction (`mode_stub`'s `mode_fn` is `reduce_minmax_fn` to the letter; its kernels sort), so
there the registry's `reduction` tag decides: `max`, `aminmax` carry it, `mode` does not and is
a custom kernel wired to its stub.
A reduction whose stub the tree does not show (a wheel workspace has no ReduceOps.cpp: `std`
calls `std_var_stub`, `amax` calls `max_values_stub`) is still a reduction-stub, with no stub.

Note [not a candidate]: an op is no port candidate when MPS could never run it through a kernel
we write and check: its kernels are a vendor library's (cuDNN, MIOpen, cuBLAS, cuFFT, cuSOLVER,
MAGMA, oneDNN, MKL, FBGEMM, cuSPARSELt, FlashAttention...), it only exists for sparse,
quantized or nested tensors, it is a test op, or it has no CPU kernel to check a port against.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from metalport.checkout.cpp import closing, split_top_level
from metalport.checkout.routing import StubRoute
from metalport.checkout.sources import StubDecl
from metalport.registry.model import Entry, Op, Registry

__all__ = ["Classification", "Kind", "Porter", "PorterVerdict", "classify", "entry_comments", "porter_for",
           "schema_arguments"]


class Kind(Enum):
    """How an op's MPS port is made."""

    POINTWISE_STUB = "pointwise-stub"  # register the TensorIterator stub CPU/CUDA share
    REDUCTION_STUB = "reduction-stub"  # register the reduction stub CPU/CUDA share
    CUSTOM_KERNEL = "custom-kernel"  # `MPS: x_mps` rows (or a non-iterator stub) with a kernel of its own
    MULTI_TENSOR = "multi-tensor"  # `_foreach_*`: one launch over a tensor list
    NOT_A_CANDIDATE = "not-a-candidate"  # see Note [not a candidate]


class Porter(Enum):
    """Who can port an op."""

    RECIPE = "recipe"  # the recipe table covers it (deterministic, offline)
    TRANSLATE = "translate"  # its CPU kernel's scalar lambda translates to a functor (deterministic, offline)
    LLM = "llm"  # a model (--model openai:MODEL) could port it
    NONE = "none"  # nobody: not a candidate


@dataclass(frozen=True)
class Classification:
    """The kind of `op`'s port and why, in one line.

    `stub` is the dispatch stub the port registers (None for `MPS: x_mps` rows, multi-tensor
    ops, and reductions whose stub the tree does not show); `rows` is True when the port writes
    `MPS: x_mps` rows (CPU and CUDA have no kernel to share).
    """

    op: str
    kind: Kind
    reason: str
    stub: str | None = None
    rows: bool = False

    def __post_init__(self) -> None:
        if not self.reason or "\n" in self.reason:
            raise ValueError(f"the reason for {self.op}'s kind must be one line")

    @property
    def candidate(self) -> bool:
        """False for not-a-candidate ops."""
        return self.kind is not Kind.NOT_A_CANDIDATE


@dataclass(frozen=True)
class PorterVerdict:
    """Who can port an op, and (for `none`) why nobody can."""

    porter: Porter
    reason: str | None = None


_HOST = ("CPU", "CUDA")
_COMPOSITE = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
# name fragment -> the library it stands for (Note [not a candidate])
_LIBRARIES = {
    "cudnn": "cuDNN", "miopen": "MIOpen", "mkldnn": "oneDNN", "onednn": "oneDNN", "cublas": "cuBLAS",
    "cufft": "cuFFT", "cusolver": "cuSOLVER", "cusparse": "cuSPARSE", "magma": "MAGMA", "mkl": "MKL",
    "fbgemm": "FBGEMM", "xnnpack": "XNNPACK", "qnnpack": "QNNPACK", "triton": "Triton",
    "cutlass": "CUTLASS", "flash_attention": "FlashAttention", "efficient_attention": "xFormers attention",
    "semi_structured": "CUTLASS 2:4 sparsity",
}
_LIBRARY = re.compile(rf"(?:^|_)({'|'.join(sorted(_LIBRARIES, key=len, reverse=True))})(?:_|$)")
_SPARSE = re.compile(r"(?:^|_)(sparse|coo|csr|csc|bsr|bsc)(?:_|$)")
_QUANTIZED = re.compile(r"(?:^|_)(quantize|quantized|dequantize|qparams|q_per_channel)(?:_|$)")
_NESTED = re.compile(r"(?:^|_)nested(?:_|$)")
_LINALG_HEADER = "BatchLinearAlgebra.h"
_ITERATOR = re.compile(r"^\s*(?:const\s+)?(TensorIterator|TensorIteratorBase)\s*&")
_DIM_KEEPDIM = re.compile(r"\bint64_t\b[^,]*,\s*bool\b")
# An iterator stub taking a tensor (a gather source), a dim/stride, a flag or a generator is not a
# plain elementwise functor (take, index_copy, flip, uniform): its port is a kernel of its own.
_NOT_ELEMENTWISE = re.compile(r"\b(?:Tensor|TensorBase|int64_t|bool|Generator)\b")
_TENSOR_LIST = re.compile(r"^Tensor(?:\([a-z]!?\))?\[\]")


def entry_comments(registry: Registry) -> dict[str, str]:
    """The `#` comment lines right above each entry of the registry (full name -> their text)."""
    lines = registry.text.splitlines()
    out: dict[str, str] = {}
    for entry in registry.entries:
        i, found = entry.span.start - 2, []
        while i >= 0 and lines[i].lstrip().startswith("#"):
            found.append(lines[i].strip().lstrip("#").strip())
            i -= 1
        if found:
            out[entry.full_name] = " ".join(reversed(found))
    return out


def schema_arguments(func: str) -> list[str]:
    """The argument declarations of a `func:` schema (`Tensor self`, `Scalar alpha=1`), split at
    top-level commas; the keyword-only marker `*` is dropped."""
    start = func.index("(")
    return [a for a in split_top_level(func[start + 1:closing(func, start)], "([", ")]") if a != "*"]


def _host_kernels(op: Op) -> list[tuple[str, str]]:
    """(key, kernel) of every CPU and CUDA dispatch line of the op."""
    return [(k, d.kernel) for e in op.entries for d in e.dispatch for k in d.keys if k in _HOST]


def _has(op: Op, keys: tuple[str, ...]) -> bool:
    return any(k in keys for e in op.entries for d in e.dispatch for k in d.keys)


def _split_entry(entry: Entry) -> tuple[str, str] | None:
    """(cpu kernel, cuda kernel) when the entry names different kernels for CPU and CUDA."""
    cpu, cuda = entry.kernel_for("CPU"), entry.kernel_for("CUDA")
    if cpu is not None and cuda is not None and cpu.kernel != cuda.kernel:
        return cpu.kernel, cuda.kernel
    return None


def _is_test_op(op: Op, comments: Mapping[str, str]) -> bool:
    if op.name.startswith("_test_"):
        return True
    return any(re.search(r"\b(?:used (?:in|by|for) (?:the )?tests?|for testing|test(?:ing)? only)\b",
                         comments.get(e.full_name, ""), re.I) for e in op.entries)


def _not_a_candidate(op: Op, host: list[tuple[str, str]], stub: StubDecl | None,
                     comments: Mapping[str, str]) -> str | None:
    """Why `op` is no port candidate (Note [not a candidate]), or None.

    An op MPS already runs with a kernel of its own (`MPS: x_mps`) is never a library or CUDA-only
    op: that kernel shows MPS needs no vendor library for it.
    """
    name = op.name
    own_mps = _has(op, ("MPS",))
    if not host and not own_mps:
        return "composite: it runs through other ops (on MPS too), so there is no kernel to port"
    if _is_test_op(op, comments):
        return "a test-only op"
    if name.startswith("_cslt_"):
        return "cuSPARSELt (a CUDA library): MPS has no counterpart"
    if name.endswith("_for_cpu"):
        return "a CPU-specific variant (`*_for_cpu`)"
    found = _LIBRARY.search(name)
    if found and not own_mps:
        return f"{_LIBRARIES[found.group(1)]} op (a vendor library): no Metal kernel to write"
    libs = [_LIBRARY.search(k) for _, k in host]
    if host and all(libs) and not own_mps:
        first = next(m for m in libs if m)
        return f"its CPU/CUDA kernels are {_LIBRARIES[first.group(1)]} calls ({host[0][1]}): no Metal kernel to write"
    if stub is not None and stub.where.file.endswith(_LINALG_HEADER) and not own_mps:
        return (f"a solver: CPU runs LAPACK and CUDA cuSOLVER/MAGMA through {stub.name} "
                f"({_LINALG_HEADER}): no Metal kernel to write")
    words = [name, *(k for _, k in host)]
    if found := next((m for w in words if (m := _SPARSE.search(w))), None):
        return f"sparse-only: it works on {found.group(1)} layouts, which a strided Metal kernel does not serve"
    if not name.startswith("fake_") and not name.startswith("_fake_") and \
            (found := next((m for w in words if (m := _QUANTIZED.search(w))), None)):
        return f"quantized-only: it makes or reads quantized tensors ({found.group(1)})"
    if _NESTED.search(name):
        return "nested-tensor only: it works on nested tensors' buffers"
    if host and not any(k == "CPU" for k, _ in host) and not _has(op, _COMPOSITE) and not own_mps:
        return "CUDA-only: no CPU kernel, so a port has no reference to be checked against"
    return None


def _is_multi_tensor(op: Op) -> bool:
    """`_foreach_*`, or an op over several tensor lists that starts with one (`_fused_adam_`)."""
    if "foreach" in op.name.split("_"):
        return True
    for e in op.entries:
        args = schema_arguments(e.func)
        lists = [a for a in args if _TENSOR_LIST.match(a)]
        if args and _TENSOR_LIST.match(args[0]) and len(lists) >= 2:
            return True
    return False


def _reduces(op: Op) -> bool:
    return any("reduction" in e.tags or "bool keepdim" in e.func for e in op.entries)


def _tagged_reduction(op: Op) -> bool:
    return any("reduction" in e.tags for e in op.entries)


def _pointwise(op: Op) -> bool:
    return any("pointwise" in e.tags or e.structured_inherits == "TensorIteratorBase" for e in op.entries)


def classify(op: Op, route: StubRoute | None = None, stub: StubDecl | None = None, *,
             comments: Mapping[str, str] | None = None) -> Classification:
    """The port kind of `op` (Note [reduction or pointwise], Note [not a candidate]).

    `route` is the stub route of its CPU kernel, `stub` the declaration of `route.stub` (its
    `params` decide reduction or pointwise), `comments` the registry comment above each entry
    (full name -> text; it marks test ops).
    """
    name = op.name
    host = _host_kernels(op)
    if not host and route is not None and route.assumed and route.file is None:
        host = [(k, route.kernel) for k in _HOST]  # a ufunc kernel: codegen makes the CPU and CUDA rows
    why_not = _not_a_candidate(op, host, stub, comments or {})
    if why_not is not None:
        return Classification(name, Kind.NOT_A_CANDIDATE, why_not)
    if _is_multi_tensor(op):
        return Classification(name, Kind.MULTI_TENSOR, "a multi-tensor op: one launch over the tensor list")
    split = next((s for e in op.entries if (s := _split_entry(e)) is not None), None)
    if split is not None or not host or {k for k, _ in host} != set(_HOST):
        if split is not None:
            why = f"CPU ({split[0]}) and CUDA ({split[1]}) use different kernels"
        elif host:
            only = sorted({k for k, _ in host})[0]
            why = f"only {only} has a kernel ({host[0][1]})"
        else:
            mps = next(d.kernel for e in op.entries for d in e.dispatch if "MPS" in d.keys)
            why = f"MPS overrides a composite with {mps}"
            return Classification(name, Kind.CUSTOM_KERNEL, f"{why}: its port is a kernel of its own", rows=True)
        return Classification(name, Kind.CUSTOM_KERNEL, f"{why}: MPS gets `MPS: {name}_mps` rows", rows=True)
    kernel = host[0][1]
    stub_name = route.stub if route is not None else None
    params = stub.params if stub is not None else None
    if stub_name is not None and params is not None:
        iterator = _ITERATOR.match(params)
        if iterator and _reduces(op):
            return Classification(name, Kind.REDUCTION_STUB,
                                  f"{kernel} reaches {stub_name} through a reduction {iterator.group(1)}", stub_name)
        if iterator and (_pointwise(op) or not _NOT_ELEMENTWISE.search(params[iterator.end():])):
            return Classification(name, Kind.POINTWISE_STUB,
                                  f"{kernel} reaches {stub_name} through a pointwise {iterator.group(1)}", stub_name)
        if _tagged_reduction(op):
            how = "over dim (keepdim)" if _DIM_KEEPDIM.search(params) else "the whole tensor"
            return Classification(name, Kind.REDUCTION_STUB, f"{kernel} calls {stub_name} to reduce {how}", stub_name)
        how = ("its iterator is not element-wise (the stub takes more operands)" if iterator
               else "no TensorIterator")
        return Classification(name, Kind.CUSTOM_KERNEL,
                              f"{kernel} calls {stub_name}({params}), {how}: MPS registers it "
                              "with a kernel of its own", stub_name)
    if _reduces(op):
        return Classification(name, Kind.REDUCTION_STUB,
                              f"a reduction CPU and CUDA share ({kernel}); the tree does not show its stub")
    if _pointwise(op):
        return Classification(name, Kind.POINTWISE_STUB,
                              f"{kernel} is a pointwise TensorIterator kernel" +
                              (f" calling {stub_name}" if stub_name else "; the tree does not show its stub"),
                              stub_name)
    return Classification(name, Kind.CUSTOM_KERNEL,
                          f"CPU and CUDA share {kernel}, which calls no declared stub: MPS gets a kernel of its own",
                          rows=True)


def tensor_outputs(func: str) -> tuple[str, ...]:
    """The names of the tensors a schema returns: `(Tensor mantissa, Tensor exponent)` gives two."""
    returns = func.split("->", 1)[1].strip() if "->" in func else ""
    parts = [r.strip() for r in returns.strip("()").split(",") if r.strip()]
    return tuple((r.split()[-1] if len(r.split()) > 1 else f"result{i}") for i, r in enumerate(parts)
                 if r.startswith("Tensor") and not r.startswith("Tensor[]"))


def porter_for(kind: Classification, covered: bool, declined: str | None = None) -> PorterVerdict:
    """Who can port an op of `kind`; `covered` says the recipe table has it. For an op the table
    lacks, `declined` is None when the translate porter takes it, else why it does not (a model
    then ports it, and the verdict says why the translate porter did not)."""
    if not kind.candidate:
        return PorterVerdict(Porter.NONE, kind.reason)
    if covered:
        return PorterVerdict(Porter.RECIPE)
    asked = kind.kind is Kind.MULTI_TENSOR or (kind.kind is Kind.POINTWISE_STUB and kind.stub)
    if asked and declined is None:
        return PorterVerdict(Porter.TRANSLATE)
    return PorterVerdict(Porter.LLM, f"translate declined: {declined}" if declined else None)
