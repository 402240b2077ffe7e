"""`find_cpu_kernel`: the CPU kernel a stub registers in `aten/src/ATen/native/cpu/*.cpp`, with its
scalar lambdas and the dtypes each `AT_DISPATCH` branch covers.

Note [reading a CPU kernel]: a CPU kernel file registers its kernels at the end
(`REGISTER_DISPATCH(stub, &fn)`, maybe `ALSO_REGISTER_AVX512_DISPATCH`); `fn` is a function of the
same file whose body calls `cpu_kernel(iter, lambda)` or `cpu_kernel_vec(iter, lambda, vec_lambda)`,
usually inside an `AT_DISPATCH_*` macro (or `AT_DISPATCH_V2`) naming the dtypes that branch serves;
a branch written outside any macro (`if (iter.dtype() == kBFloat16) { cpu_kernel_vec(...BFloat16 a...)`)
serves the dtypes its lambda's parameter types name. Only the scalar lambda (the first after the
iterator) says what the op computes; the vectorized one is the same math, faster, except where it
selects by a mask (Note [vector masks], port/translate/porter.py), so it is kept beside it.
Names a lambda captures are looked up in the kernel's body before the call (`const float one(1);`,
`auto beta = beta_.to<float>();`); the translator decides which are constants and which scalars.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from metalport.checkout.cpp import Unit, closing, read_unit, split_top_level

__all__ = ["CPU_DIR", "CpuKernel", "ScalarLambda", "find_cpu_kernel", "cpu_kernel_index"]

CPU_DIR = "aten/src/ATen/native/cpu"
_REGISTER = re.compile(r"\b(?:REGISTER_DISPATCH|ALSO_REGISTER_AVX512_DISPATCH|REGISTER_ARCH_DISPATCH)\s*\(\s*"
                       r"(\w+)\s*,\s*&?\s*([\w:]+)\s*\)")
_CALL = re.compile(r"\b(cpu_kernel_vec|cpu_kernel|cpu_serial_kernel|cpu_serial_kernel_vec)\s*\(")
_MULTIPLE = re.compile(r"\bcpu_kernel_multiple_outputs\s*\(")
_DISPATCH = re.compile(r"\bAT_DISPATCH_(\w+)\s*\(")
_LAMBDA = re.compile(r"\s*\[([^\]]*)\]\s*\(([^)]*)\)\s*(?:mutable\s*|__\w+__\s*)*(?:->\s*([^{]+?)\s*)?\{", re.S)

_FLOATING = ("float32", "float64")
_REDUCED = ("float16", "bfloat16")
_INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
_COMPLEX = ("complex64", "complex128")
# Dtype groups the AT_DISPATCH macro names (and AT_DISPATCH_V2's AT_EXPAND(AT_..._TYPES)) spell.
_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ALL_TYPES_AND_COMPLEX", _FLOATING + _INTEGRAL + _COMPLEX), ("FLOATING_AND_COMPLEX_TYPES", _FLOATING + _COMPLEX),
    ("REDUCED_FLOATING_TYPES", _REDUCED), ("FLOATING_TYPES", _FLOATING), ("INTEGRAL_TYPES", _INTEGRAL),
    ("COMPLEX_TYPES", _COMPLEX), ("ALL_TYPES", _FLOATING + _INTEGRAL), ("BOOLEAN_TYPES", ("bool",)),
)
# Extra scalar types named as macro arguments (`kHalf`, `at::ScalarType::BFloat16`).
_EXTRA = {"Half": "float16", "BFloat16": "bfloat16", "Bool": "bool", "ComplexHalf": "complex32",
          "Float": "float32", "Double": "float64", "Byte": "uint8", "Char": "int8", "Short": "int16",
          "Int": "int32", "Long": "int64", "ComplexFloat": "complex64", "ComplexDouble": "complex128"}
# C++ element types a lambda parameter may be spelled with outside any dispatch macro.
_PARAM_TYPES = {"BFloat16": "bfloat16", "Half": "float16", "float": "float32", "double": "float64",
                "bool": "bool", "int64_t": "int64", "int32_t": "int32", "uint8_t": "uint8"}


@dataclass(frozen=True)
class ScalarLambda:
    """One `cpu_kernel*` call's scalar lambda: where it is, what it captures, its parameters
    (type, name), its return type, its body (comments blanked) and the dtypes its branch serves."""

    file: str
    line: int
    captures: str  # the capture list as written: "=", "&", "beta, threshold"
    params: tuple[tuple[str, str], ...]
    returns: str | None
    body: str
    dtypes: frozenset[str]
    branch: str  # "AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16)" or "no dispatch macro"
    before: str  # the kernel's code from its body's start to the call (declarations of captured names)
    text: str  # the lambda as written (for the plan)
    # cpu_kernel_vec's vectorized lambda (Note [vector masks], port/translate/porter.py): its
    # parameters, body (comments blanked), line and text; None for cpu_kernel or an unreadable one
    vector: tuple[tuple[tuple[str, str], ...], str, int, str] | None = None

    @property
    def where(self) -> str:
        """`file:line` of the lambda."""
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class CpuKernel:
    """The CPU kernel a stub is registered with: its function, where, its parameters after the
    iterator (`const Scalar& beta_`), and the scalar lambdas of its `cpu_kernel*` calls in order."""

    stub: str
    function: str
    file: str
    line: int
    params: tuple[str, ...]
    lambdas: tuple[ScalarLambda, ...]
    calls_other: tuple[str, ...]  # kernels it calls that are no cpu_kernel (a helper doing the work)


def _dispatch_dtypes(name: str, args: list[str]) -> frozenset[str]:
    """The dtypes an `AT_DISPATCH_<name>(args...)` macro dispatches to."""
    found: set[str] = set()
    spelled = [name] + [a for a in args if a.startswith("AT_EXPAND")]
    for text in spelled:
        for group, dtypes in _GROUPS:
            if group in text:
                found.update(dtypes)
                break
    for arg in args:
        m = re.fullmatch(r"(?:(?:at|c10)::)?(?:ScalarType::|k)(\w+)", arg.strip())
        if m and m.group(1) in _EXTRA:
            found.add(_EXTRA[m.group(1)])
    return frozenset(found)


def _enclosing_dispatch(code: str, start: int, at: int) -> tuple[str, frozenset[str]] | None:
    """The innermost AT_DISPATCH macro of `code[start:]` whose parentheses hold offset `at`."""
    best = None
    for m in _DISPATCH.finditer(code, start, at):
        open_at = m.end() - 1
        if closing(code, open_at) > at:
            best = m
    if best is None:
        return None
    open_at = best.end() - 1
    args = split_top_level(code[open_at + 1:closing(code, open_at)], "([{", ")]}")
    extras = [a for a in args if not a.lstrip().startswith("[") and "AT_WRAP" not in a]
    shown = ", ".join(a for a in extras if re.fullmatch(r"(?:(?:at|c10)::)?(?:ScalarType::|k)\w+", a.strip())
                      or a.startswith("AT_EXPAND"))
    return f"AT_DISPATCH_{best.group(1)}" + (f"({shown})" if shown else ""), _dispatch_dtypes(best.group(1), extras)


def _param(text: str) -> tuple[str, str]:
    words = text.replace("&", " ").split()
    return (" ".join(words[:-1]), words[-1]) if len(words) > 1 else (text.strip(), "")


def _lambdas(unit: Unit, body_start: int, body_end: int) -> list[ScalarLambda]:
    """The scalar lambda of each `cpu_kernel*` call between the offsets, in order."""
    code = unit.code
    found: list[ScalarLambda] = []
    for call in _CALL.finditer(code, body_start, body_end):
        open_at = call.end() - 1
        args_end = closing(code, open_at)
        args = split_top_level(code[open_at + 1:args_end], "([{", ")]}")
        if len(args) < 2:
            continue
        arg_at = code.index(args[1], open_at)
        m = _LAMBDA.match(code, arg_at)
        if m is None:
            continue
        brace = m.end() - 1
        end = closing(code, brace)
        params = tuple(_param(p) for p in split_top_level(m.group(2)))
        branch = _enclosing_dispatch(code, body_start, call.start())
        if branch is None:
            dtypes = frozenset(_PARAM_TYPES[t.replace("const", "").strip()] for t, _ in params
                               if t.replace("const", "").strip() in _PARAM_TYPES)
            branch = ("no dispatch macro", dtypes)
        file, line = unit.origin(arg_at)
        vector = None
        if call.group(1).endswith("_vec") and len(args) >= 3:
            vec_at = code.index(args[2], end + 1)
            v = _LAMBDA.match(code, vec_at)
            if v is not None:
                v_end = closing(code, v.end() - 1)
                vector = (tuple(_param(p) for p in split_top_level(v.group(2))), code[v.end():v_end],
                          unit.origin(vec_at)[1], unit.text[vec_at:v_end + 1])
        found.append(ScalarLambda(file, line, m.group(1).strip(), params, (m.group(3) or "").strip() or None,
                                  code[brace + 1:end], branch[1], branch[0], code[body_start:call.start()],
                                  unit.text[arg_at:end + 1], vector))
    return found


def _kernel_of(unit: Unit, stub: str, function: str) -> CpuKernel | None:
    name = function.split("::")[-1]
    fn = next((f for f in unit.functions if f.name == name), None)
    if fn is None:
        return None
    head = unit.code[fn.start:fn.body_start]
    params = split_top_level(head[head.find("(") + 1:head.rfind(")")]) if "(" in head else []
    lambdas = _lambdas(unit, fn.body_start, fn.body_end)
    helpers: list[str] = []
    if not lambdas and _MULTIPLE.search(unit.code, fn.body_start, fn.body_end):
        helpers = ["cpu_kernel_multiple_outputs"]
    elif not lambdas:
        calls = re.findall(r"\b([a-z_]\w*_kernel\w*|\w+_impl)\s*(?:<[^;(]*>)?\s*\(", unit.code[fn.body_start:fn.body_end])
        helpers = sorted(set(calls) - {name})
    return CpuKernel(stub, name, fn.file, fn.line, tuple(params[1:]), tuple(lambdas), tuple(helpers))


def cpu_kernel_index(root: Path) -> dict[str, tuple[Path, str]]:
    """Every stub registered in `root`'s CPU kernel files: stub -> (file, registered function).
    Files are read preprocessed (`read_unit`), so a registration a macro of the file writes
    (`IMPLEMENT_FLOAT_KERNEL(ceil)`) counts."""
    index: dict[str, tuple[Path, str]] = {}
    folder = root / CPU_DIR
    for path in sorted(folder.glob("*.cpp")) if folder.is_dir() else ():
        for m in _REGISTER.finditer(read_unit(path, root).code):
            index.setdefault(m.group(1), (path, m.group(2)))
    return index


def find_cpu_kernel(root: Path, stub: str, index: dict[str, tuple[Path, str]] | None = None) -> CpuKernel | None:
    """The CPU kernel `stub` is registered with in `root`'s `aten/src/ATen/native/cpu/*.cpp`, or None
    when no file there registers it or the registered function is not defined beside it.
    `index`: `cpu_kernel_index(root)`, when the caller looks up many stubs."""
    index = index if index is not None else cpu_kernel_index(root)
    hit = index.get(stub)
    if hit is None:
        return None
    return _kernel_of(read_unit(hit[0], root), stub, hit[1])
