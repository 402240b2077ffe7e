"""Host stubs in `.mm` files: find the stub's declaration, add a dispatch stub registration, remove
the legacy MPSGraph code.

Text in, text out. A new stub follows the file's own idiom (Note [host idiom]); removal takes out a brace-matched `TORCH_IMPL_FUNC(<name>)` block or
plain function `<name>(...) {...}` and the op's `#include <ATen/ops/<op>_native.h>`. A missing
anchor is a `RecipeError` with the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from metalport.checkout.cpp import match_bracket
from metalport.port.plan.launch import LAUNCHERS as _EXEC
from metalport.port.write.metal import ensure_includes
from metalport.errors import RecipeError

# The file-local launcher of Note [ternary alpha kernels] (clang-formatted in PyTorch's style).
TERNARY_ALPHA_HELPER = """\
// Note [ternary alpha kernels]: this library's exec_ternary_kernel takes no scalar, so ternary ops
// with one (addcmul's and addcdiv's `value`) launch their kernels here. `value` reaches the kernel
// at opmath precision (float for half and bfloat16, as CPU computes them); no operand is rescaled
// on the host. Kernels are picked by the common dtype: contiguous operands and output of that type
// run `<name>_dense_<t>_<t>_<alpha>`, anything else `<name>_strided_cast_<t>_<alpha>`, which reads
// each input at its own type and casts the result to the output's type on store.
static void exec_ternary_kernel_with_alpha(TensorIteratorBase& iter, const std::string& name, const Scalar& alpha) {
  using namespace mps;
  TORCH_CHECK(iter.common_dtype() != kDouble, "float64 is not supported on MPS");
  if (iter.numel() == 0) {
    return;
  }
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub_iter : iter.with_32bit_indexing()) {
      exec_ternary_kernel_with_alpha(sub_iter, name, alpha);
    }
    return;
  }
  // A 0-dim double or complex double operand is bound as float (mtl_setBuffer).
  auto type_of = [&](int arg) {
    const auto type = arg < 0 ? iter.common_dtype() : iter.dtype(arg);
    return type == kDouble ? kFloat : type == kComplexDouble ? kComplexFloat : type;
  };
  // Computed at the common dtype and cast to the output's on store: a wider `out=` does not widen the math.
  const auto common = type_of(-1);
  const auto out_type = type_of(0);
  const std::array<ScalarType, 3> types = {type_of(1), type_of(2), type_of(3)};
  const bool strided =
      !iter.is_contiguous() || out_type != common || types[0] != common || types[1] != common || types[2] != common;
  const auto alpha_type = toOpMathType(common);
  const auto common_name = scalarToMetalTypeString(common);
  const auto alpha_name = scalarToMetalTypeString(alpha_type);
  const auto kernel = strided ? fmt::format("{}_strided_cast_{}_{}", name, common_name, alpha_name)
                              : fmt::format("{}_dense_{}_{}_{}", name, common_name, common_name, alpha_name);
  const std::array<uint32_t, 4> ndim_types = {static_cast<uint32_t>(iter.ndim()),
                                              static_cast<uint32_t>(types[0]),
                                              static_cast<uint32_t>(types[1]),
                                              static_cast<uint32_t>(types[2])};
  auto stream = getCurrentMPSStream();
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    @autoreleasepool {
      auto encoder = stream->commandEncoder();
      auto pso = lib.getPipelineStateForFunc(kernel);
      // made inside the block: an MPSScalar owns its buffer and cannot be copied into a block
      const auto value = getMPSScalar(alpha, alpha_type);
      getMPSProfiler().beginProfileKernel(pso, kernel, {iter.input(0), iter.input(1), iter.input(2)});
      [encoder setComputePipelineState:pso];
      bind_iter_tensors(encoder, iter);
      mtl_setBytes(encoder, value, 4);
      if (strided) {
        mtl_setArgs<5>(encoder,
                       iter.shape(),
                       iter.strides(0),
                       iter.strides(1),
                       iter.strides(2),
                       iter.strides(3),
                       ndim_types,
                       static_cast<uint32_t>(out_type));
      }
      mtl_dispatch1DJob(encoder, pso, iter.numel());
      getMPSProfiler().endProfileKernel(pso);
    }
  });
}
"""
_HELPER_DEF = "static void exec_ternary_kernel_with_alpha("
_LIBRARY = "getBundledLibrary()"
_NAMESPACE_END = re.compile(r"^\} // namespace at::native[^\n]*$", re.MULTILINE)
_MACRO_DEF = re.compile(r"^#define (REGISTER_\w+)\((\w+)\)((?:[^\n]*\\\n)*[^\n]*)$", re.MULTILINE)
_STATIC_FN = re.compile(r"^static void \w+\(", re.MULTILINE)
_DISPATCH_LINE = re.compile(r"^REGISTER_DISPATCH\(\s*\w+\s*,\s*(&?)\w+\s*\)(;?)[ \t]*$", re.MULTILINE)

# Note [host idiom]: PyTorch's host files register stubs in their own way. UnaryKernel.mm defines
# `REGISTER_UNARY_TI_DISPATCH(NAME)` (a static `NAME##_kernel_mps` calling exec_unary_kernel on
# `#NAME`, registered for `NAME##_stub`) and lists one macro line per op; BinaryKernel.mm keeps its
# static functions together and its REGISTER_DISPATCH lines in one block at the end. A new stub
# uses the file's macro when it fits (same exec call, stub named after the kernel, no scalar), else
# a static function after the file's last one and its REGISTER_DISPATCH after the last one, spelled
# like it (`&` and `;` or not); a file with neither gets both before `} // namespace at::native`.


@dataclass(frozen=True)
class StubDeclaration:
    """Where a dispatch stub is declared and the named parameters of its function type."""

    header: str  # "ATen/native/BinaryOps.h"
    params: str  # "TensorIteratorBase& iter, const Scalar& alpha"


def _name_params(raw: str) -> str:
    """Give unnamed parameters names: the first is `iter`, later ones `arg<i>`."""
    named = []
    for i, param in enumerate(p.strip() for p in raw.split(",")):
        has_name = re.search(r"[&*]\s*\w+$|\w\s+\w+$", param) is not None
        named.append(param if has_name else f"{param} {'iter' if i == 0 else f'arg{i}'}")
    return ", ".join(named)


def find_stub_declaration(stub: str, include_dir: Path) -> StubDeclaration:
    """The `ATen/native/<X>.h` under `include_dir` (an `include/` root) declaring `stub`, and the
    parameters of its function-pointer type. Declarations are read as written, over several lines
    too (`DECLARE_DISPATCH(\n void (*)(TensorIteratorBase&, ...),\n nan_to_num_stub)`)."""
    from metalport.checkout.sources import header_stubs

    native = include_dir / "ATen" / "native"
    texts = {h.name: h.read_text(encoding="utf-8", errors="replace") for h in sorted(native.glob("*.h"))}
    decl = next((d for d in header_stubs(texts) if d.name == stub), None)
    if decl is None:
        raise RecipeError(f"no DECLARE_DISPATCH(..., {stub}) under {native}",
                          hint="declare the stub in an ATen/native header first")
    if decl.params is None:
        raise RecipeError(f"no 'using {decl.fn_type} = void (*)(...)' for {stub}",
                          location=str(native / decl.where.file), hint="pass the stub's parameters explicitly")
    return StubDeclaration(f"ATen/native/{decl.where.file}", _name_params(decl.params))


@dataclass(frozen=True)
class HostStub:
    """The host side of a pointwise op: kernel name, stub and the header declaring the stub."""

    op: str
    family: str  # "unary" | "binary" | "alpha" | "ternary" | "ternary_alpha"
    stub: str
    stub_header: str  # e.g. "ATen/native/BinaryOps.h"
    params: str = "TensorIteratorBase& iter"  # the stub's function-pointer parameters, named
    kernel: str | None = None  # the shader kernel's name when it is not the op's (`sub_alpha`)
    # Further stubs the op's structured kernel calls, served by the same function (`sgn_out` calls
    # sign_stub for real dtypes and sgn_stub for complex: one `sgn` kernel runs both).
    extra_stubs: tuple[str, ...] = ()
    # The dtype the kernel naturally writes when an `out=` may differ (`kBool` for logical ops):
    # exec_binary_kernel's `natural_output_dtype`, which routes other out dtypes to `_castout_`.
    natural_output: str | None = None
    # A ternary op with a scalar launched through the shared `lib.exec_ternary_kernel(iter, name,
    # alpha)` (Note [extend shared code at home], port/write/shared.py), not the file-local launcher.
    shared_launcher: bool = False
    # Note [params route] (port/plan/params.py): the scalars (`scalars`) the stub passes into the struct
    # `params_struct` (C++ type) named `params_type` for the launcher; `params_header` the
    # `ATen/native/mps/kernels/*.h` defining it, or `params_source` the struct itself when no header does.
    scalars: tuple[tuple[str, str, bool, str], ...] = ()
    params_type: str | None = None
    params_struct: str | None = None
    params_header: str | None = None
    params_source: str | None = None
    dtypes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.family not in _EXEC:
            raise ValueError(f"unknown family {self.family!r}; choose one of {sorted(_EXEC)}")

    @property
    def function(self) -> str:
        return f"{self.op}_mps_kernel"

    @property
    def register_line(self) -> str:
        """Every REGISTER_DISPATCH line of the stub, one per line."""
        return "\n".join(f"REGISTER_DISPATCH({s}, &{self.function});" for s in (self.stub, *self.extra_stubs))

    @property
    def scalar(self) -> str | None:
        """The name of the stub's Scalar parameter (alpha, value), if it has one."""
        for param in self.params.split(",")[1:]:
            if "Scalar" in param:
                return re.split(r"[\s&*]+", param.strip())[-1]
        return None

    def source(self) -> str:
        """The static stub function and its registration."""
        return f"{self.function_source()}\n{self.register_line}\n"

    def function_source(self) -> str:
        """The static stub function alone."""
        if self.params_type is not None:
            from metalport.port.plan.params import host_function_source

            struct = f"{self.params_source}\n" if self.params_source else ""
            return struct + host_function_source(self.function, self.params, self.family, self.kernel or self.op,
                                                 self.scalars, self.params_struct or self.params_type,
                                                 self.params_type, self.dtypes)
        if self.family == "ternary_alpha":
            launcher = "lib.exec_ternary_kernel" if self.shared_launcher else _EXEC[self.family]
            call = f'{launcher}(iter, "{self.kernel or self.op}", {self.scalar or "value"})'
        else:
            alpha = f", {self.scalar or 'alpha'}" if self.family == "alpha" else ""
            if self.natural_output and self.family == "binary":
                alpha = f", std::nullopt, std::nullopt, {self.natural_output}"
            call = f'lib.{_EXEC[self.family]}(iter, "{self.kernel or self.op}"{alpha})'
        return f"static void {self.function}({self.params}) {{\n  {call};\n}}\n"

    @property
    def includes(self) -> tuple[str, ...]:
        """The `#include` lines the stub's code needs."""
        extra = ("#include <ATen/OpMathType.h>",) if self.family == "ternary_alpha" and not self.shared_launcher else ()
        if self.params_header and self.params_header.endswith(".h"):
            extra = (*extra, f"#include <{self.params_header.removeprefix('aten/src/')}>")
        if any(default for *_, default in self.scalars):  # the struct is filled per dtype (AT_DISPATCH)
            extra = (*extra, "#include <ATen/Dispatch.h>")
        return (f"#include <{self.stub_header}>", *extra)

    def macro_line(self, text: str) -> str | None:
        """`MACRO(op);` when `text` defines a registration macro this stub fits (Note [host idiom])."""
        if self.scalar or self.scalars or self.extra_stubs or self.natural_output or \
                self.stub != f"{self.kernel or self.op}_stub":
            return None
        for m in _MACRO_DEF.finditer(text):
            name, arg, body = m.group(1), m.group(2), re.sub(r"\s+", "", m.group(3).replace("\\\n", ""))
            if f"{_EXEC[self.family]}(iter,#{arg})" in body and f"{arg}##_stub" in body:
                return f"{name}({self.kernel or self.op});"
        return None


def library_block(kernel_basename: str) -> str:
    """The file's shader library: bundled, or compiled from `kernel_basename` at run time."""
    return ("#ifndef PYTORCH_JIT_COMPILE_SHADERS\n"
            "static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();\n"
            "#else\n"
            f"#include <ATen/native/mps/{kernel_basename}_metallib.h>\n"
            "#endif\n")


def _helpers(stub: HostStub, text: str) -> str:
    """What `stub` needs in a file reading `text` before its own code: the launcher of Note
    [ternary alpha kernels] when the file has none ("" otherwise)."""
    if stub.family != "ternary_alpha" or stub.shared_launcher or _HELPER_DEF in text:
        return ""
    return TERNARY_ALPHA_HELPER + "\n"


def new_host_file(stub: HostStub, kernel_basename: str) -> str:
    """A new `.mm` file holding `stub`, built against the shader library `kernel_basename`."""
    includes = "".join(f"{inc}\n" for inc in sorted(stub.includes))
    return ("#define TORCH_ASSERT_ONLY_METHOD_OPERATORS\n"
            f"{includes}"
            "#include <ATen/native/mps/OperationUtils.h>\n\n"
            "namespace at::native {\n"
            f"{library_block(kernel_basename)}\n"
            f"{_helpers(stub, '')}"
            f"{stub.source()}\n"
            "} // namespace at::native\n")


def insert_stub(text: str | None, stub: HostStub, *, kernel_basename: str,
                path: str = "host.mm") -> str:
    """`text` with `stub` added before the namespace's end; a new file when `text` is None.

    A file already registering `stub.stub` is returned unchanged.
    """
    if text is None:
        return new_host_file(stub, kernel_basename)
    if re.search(rf"REGISTER_DISPATCH\(\s*{re.escape(stub.stub)}\s*,", text):
        return text
    helpers = _helpers(stub, text)
    if (helpers or "lib." in stub.function_source()) and _LIBRARY not in text:
        helpers = f"{library_block(kernel_basename)}\n{helpers}"  # the file's first use of the shader library
    macro = None if helpers else stub.macro_line(text)
    if macro is not None:
        if macro in text:
            return text
        name = macro.split("(", 1)[0]
        uses = list(re.finditer(rf"^{name}\(\w+\);[^\n]*$", text, re.MULTILINE))
        if uses:
            out = _insert_line(text, uses[-1].end(), macro)
            return ensure_includes(out, stub.includes, path=path)
    placed = None if helpers else _insert_beside(text, stub, path)
    if placed is not None:
        return ensure_includes(placed, stub.includes, path=path)
    ends = list(_NAMESPACE_END.finditer(text))
    if not ends:
        raise RecipeError("no '} // namespace at::native' to insert the stub before",
                          location=f"{path}:{text.count(chr(10)) + 1}",
                          hint="close the namespace with that exact comment, then rerun")
    at = ends[-1].start()
    gap = "" if text[:at].endswith("\n\n") or at == 0 else "\n"
    out = f"{text[:at]}{gap}{helpers}{stub.source()}\n{text[at:]}"
    return ensure_includes(out, stub.includes, path=path)


def _insert_line(text: str, at: int, line: str) -> str:
    """`text` with `line` on its own line after index `at` (the end of a line)."""
    return f"{text[:at]}\n{line}{text[at:]}"


def _insert_beside(text: str, stub: HostStub, path: str) -> str | None:
    """`text` with the stub function after the last static function and its registration after the
    last REGISTER_DISPATCH line, spelled like it; None when the file has no such anchors."""
    dispatches = list(_DISPATCH_LINE.finditer(text))
    functions = [m for m in _STATIC_FN.finditer(text) if m.start() < (dispatches[-1].start() if dispatches else 0)]
    if not (dispatches and functions):
        return None
    last = dispatches[-1]
    register = "\n".join(f"REGISTER_DISPATCH({s}, {last.group(1)}{stub.function}){last.group(2)}"
                         for s in (stub.stub, *stub.extra_stubs))
    out = _insert_line(text, last.end(), register)
    brace = out.find("{", functions[-1].start())
    close = skip_to_close(out, brace) if brace >= 0 else -1
    if close < 0:
        return None
    end = out.find("\n", close)
    end = len(out) if end < 0 else end + 1
    return f"{out[:end]}\n{stub.function_source()}{out[end:]}"


def skip_to_close(text: str, open_at: int) -> int:
    """Index of the `}` matching the `{` at `open_at`, skipping comments and literals; -1 if none."""
    return match_bracket(text, open_at, "{}", skip_literals=True)


def _remove_block(text: str, start: int, path: str, what: str) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    brace = text.find("{", start)
    close = skip_to_close(text, brace) if brace >= 0 else -1
    if close < 0:
        line = text.count("\n", 0, start) + 1
        raise RecipeError(f"unbalanced braces in {what}", location=f"{path}:{line}",
                          hint="fix the block by hand, then rerun")
    end = text.find("\n", close)
    end = len(text) if end < 0 else end + 1
    # Drop one blank line left behind, so the neighbours keep their spacing.
    if text.startswith("\n", end) and (line_start == 0 or text[line_start - 2:line_start] == "\n\n"):
        end += 1
    return text[:line_start] + text[end:]


def _legacy_definition(text: str, legacy: str) -> re.Match[str] | None:
    """Where `text` defines `legacy`: its `TORCH_IMPL_FUNC(legacy)` line, else the head of a plain
    function definition (a prototype is none); None when it has neither."""
    impl = re.search(rf"^TORCH_IMPL_FUNC\(\s*{re.escape(legacy)}\s*\)", text, re.MULTILINE)
    if impl is not None:
        return impl
    for m in re.finditer(rf"^[A-Za-z_][\w:<>&*, ]*\b{re.escape(legacy)}\s*\(", text, re.MULTILINE):
        brace = text.find("{", m.end())
        if brace >= 0 and ";" not in text[m.end():brace]:
            return m
    return None


def has_legacy(text: str, legacy: str) -> bool:
    """True when `text` still defines `legacy` (TORCH_IMPL_FUNC, plain function or macro use)."""
    return _legacy_definition(text, legacy) is not None or \
        re.search(rf"^[A-Z_][A-Z0-9_]*\(\s*{re.escape(legacy)}\s*[,)]", text, re.MULTILINE) is not None


def remove_legacy(text: str, op: str, legacy: str, *, path: str = "host.mm",
                  drop_include: bool = True) -> str:
    """`text` without the legacy `legacy` implementation of `op` and (with `drop_include`) its
    per-op native header.

    `legacy` is a `TORCH_IMPL_FUNC` name (`heaviside_out_mps`), a plain function name, or the
    first argument of a one-line macro that defines it (`CREATE_..._FUNC(acosh_out_mps, acosh)`).
    """
    found = _legacy_definition(text, legacy)
    if found is None:
        macro = re.search(rf"^[A-Z_][A-Z0-9_]*\(\s*{re.escape(legacy)}\s*[,)][^;{{}}\n]*;?[ \t]*\n",
                          text, re.MULTILINE)
        if macro is None:
            raise RecipeError(f"no TORCH_IMPL_FUNC({legacy}) or function {legacy} in the file",
                              location=f"{path}:1",
                              hint=f"check the op's MPS dispatch row names '{legacy}'")
        out = text[:macro.start()] + text[macro.end():]
    else:
        out = _remove_block(text, found.start(), path, legacy)
    if not drop_include:
        return out
    header = re.search(rf"^#include <ATen/ops/{re.escape(op)}_native\.h>[^\n]*\n", out, re.MULTILINE)
    if header:
        out = out[:header.start()] + out[header.end():]
    return out


_EMPTY_NAMESPACE = re.compile(r"(?:^//[^\n]*\n)*^namespace (\w+) \{\n(?:[ \t]*(?://[^\n]*)?\n)*\} // namespace \1[^\n]*\n\n?",
                              re.MULTILINE)


def drop_empty_namespaces(text: str) -> str:
    """`text` without `namespace x { ... } // namespace x` blocks holding nothing but blank lines and
    comments (left behind when their last function was removed), with the comment lines above them."""
    return _EMPTY_NAMESPACE.sub("", text)
