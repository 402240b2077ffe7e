"""Host stubs in `.mm` files: add a dispatch stub registration, remove the legacy MPSGraph code.

Text in, text out. The new stub function and its `REGISTER_DISPATCH` go just before the closing
`} // namespace at::native`; removal takes out a brace-matched `TORCH_IMPL_FUNC(<name>)` block or
plain function `<name>(...) {...}` and the op's `#include <ATen/ops/<op>_native.h>`. A missing
anchor is a `RecipeError` with the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from metalport.port.metal import ensure_includes
from metalport.errors import RecipeError

_EXEC = {"unary": "exec_unary_kernel", "binary": "exec_binary_kernel",
         "alpha": "exec_binary_kernel", "ternary": "exec_ternary_kernel"}
_NAMESPACE_END = re.compile(r"^\} // namespace at::native[^\n]*$", re.MULTILINE)


@dataclass(frozen=True)
class HostStub:
    """The host side of a pointwise op: kernel name, stub and the header declaring the stub."""

    op: str
    family: str  # "unary" | "binary" | "alpha" | "ternary"
    stub: str
    stub_header: str  # e.g. "ATen/native/BinaryOps.h"
    params: str = "TensorIteratorBase& iter"  # the stub's function-pointer parameters, named

    def __post_init__(self) -> None:
        if self.family not in _EXEC:
            raise ValueError(f"unknown family {self.family!r}; choose one of {sorted(_EXEC)}")

    @property
    def function(self) -> str:
        return f"{self.op}_mps_kernel"

    @property
    def register_line(self) -> str:
        return f"REGISTER_DISPATCH({self.stub}, &{self.function});"

    @property
    def scalar(self) -> str | None:
        """The name of the stub's Scalar parameter (alpha, value), if it has one."""
        for param in self.params.split(",")[1:]:
            if "Scalar" in param:
                return re.split(r"[\s&*]+", param.strip())[-1]
        return None

    def source(self) -> str:
        """The static stub function and its registration."""
        if self.family == "ternary" and self.scalar:
            return self._folding_source(self.scalar)
        alpha = f", {self.scalar or 'alpha'}" if self.family == "alpha" else ""
        return (f"static void {self.function}({self.params}) {{\n"
                f'  lib.{_EXEC[self.family]}(iter, "{self.op}"{alpha});\n'
                f"}}\n\n{self.register_line}\n")

    def _folding_source(self, scalar: str) -> str:
        # Note [ternary scalar]: the library's exec_ternary_kernel takes no scalar, so a stub
        # like addcmul's (iter, value) multiplies `value` into the second operand on the device
        # and runs the three-operand functor on a rebuilt iterator: CPU's (value * t1) * t2 order.
        kernel = f'"{self.op}"'
        return (f"static void {self.function}({self.params}) {{\n"
                f"  if ({scalar}.equal(1)) {{\n"
                f"    lib.exec_ternary_kernel(iter, {kernel});\n"
                f"    return;\n"
                f"  }}\n"
                f"  auto folded = TensorIteratorConfig()\n"
                f"                    .add_output(iter.output(0))\n"
                f"                    .add_const_input(iter.input(0))\n"
                f"                    .add_const_input(iter.input(1).mul({scalar}))\n"
                f"                    .add_const_input(iter.input(2))\n"
                f"                    .promote_inputs_to_common_dtype(true)\n"
                f"                    .enforce_safe_casting_to_output(false)\n"
                f"                    .build();\n"
                f"  lib.exec_ternary_kernel(folded, {kernel});\n"
                f"}}\n\n{self.register_line}\n")


def new_host_file(stub: HostStub, kernel_basename: str) -> str:
    """A new `.mm` file holding `stub`, built against the shader library `kernel_basename`."""
    return ("#define TORCH_ASSERT_ONLY_METHOD_OPERATORS\n"
            f"#include <{stub.stub_header}>\n"
            + ("#include <ATen/TensorIterator.h>\n" if stub.family == "ternary" and stub.scalar else "")
            + "#include <ATen/native/mps/OperationUtils.h>\n\n"
            "namespace at::native {\n"
            "#ifndef PYTORCH_JIT_COMPILE_SHADERS\n"
            "static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();\n"
            "#else\n"
            f"#include <ATen/native/mps/{kernel_basename}_metallib.h>\n"
            "#endif\n\n"
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
    ends = list(_NAMESPACE_END.finditer(text))
    if not ends:
        raise RecipeError("no '} // namespace at::native' to insert the stub before",
                          location=f"{path}:{text.count(chr(10)) + 1}",
                          hint="close the namespace with that exact comment, then rerun")
    at = ends[-1].start()
    gap = "" if text[:at].endswith("\n\n") or at == 0 else "\n"
    out = f"{text[:at]}{gap}{stub.source()}\n{text[at:]}"
    return ensure_includes(out, [f"#include <{stub.stub_header}>"], path=path)


def _skip_to_close(text: str, open_at: int) -> int:
    """Index of the `}` matching the `{` at `open_at`, skipping comments and literals; -1 if none."""
    depth, i, n = 0, open_at, len(text)
    while i < n:
        two = text[i:i + 2]
        if two == "//":
            i = text.find("\n", i)
            if i < 0:
                return -1
        elif two == "/*":
            i = text.find("*/", i + 2)
            if i < 0:
                return -1
            i += 1
        elif text[i] in "\"'":
            quote, i = text[i], i + 1
            while i < n and text[i] != quote:
                i += 2 if text[i] == "\\" else 1
        elif text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _remove_block(text: str, start: int, path: str, what: str) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    brace = text.find("{", start)
    close = _skip_to_close(text, brace) if brace >= 0 else -1
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


def has_legacy(text: str, legacy: str) -> bool:
    """True when `text` still defines `legacy` (TORCH_IMPL_FUNC, plain function or macro use)."""
    if re.search(rf"^TORCH_IMPL_FUNC\(\s*{re.escape(legacy)}\s*\)", text, re.MULTILINE):
        return True
    if re.search(rf"^[A-Z_][A-Z0-9_]*\(\s*{re.escape(legacy)}\s*[,)]", text, re.MULTILINE):
        return True
    for m in re.finditer(rf"^[A-Za-z_][\w:<>&* ]*\b{re.escape(legacy)}\s*\(", text, re.MULTILINE):
        brace = text.find("{", m.end())
        if brace >= 0 and ";" not in text[m.end():brace]:
            return True
    return False


def remove_legacy(text: str, op: str, legacy: str, *, path: str = "host.mm",
                  drop_include: bool = True) -> str:
    """`text` without the legacy `legacy` implementation of `op` and (with `drop_include`) its
    per-op native header.

    `legacy` is a `TORCH_IMPL_FUNC` name (`heaviside_out_mps`), a plain function name, or the
    first argument of a one-line macro that defines it (`CREATE_..._FUNC(acosh_out_mps, acosh)`).
    """
    impl = re.search(rf"^TORCH_IMPL_FUNC\(\s*{re.escape(legacy)}\s*\)", text, re.MULTILINE)
    plain = None
    for m in re.finditer(rf"^[A-Za-z_][\w:<>&* ]*\b{re.escape(legacy)}\s*\(", text, re.MULTILINE):
        brace = text.find("{", m.end())
        if brace >= 0 and ";" not in text[m.end():brace]:  # a definition, not a prototype
            plain = m
            break
    found = impl or plain
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
