"""Shared infrastructure a port extends in its home file instead of copying it into the op's files.

Note [extend shared code at home]: when a port needs a variant of a shared launcher or kernel
template that the tree lacks, PyTorch's maintainers add it where its siblings live:
`MetalShaderLibrary::exec_*_kernel` are declared in `MetalShaderLibrary.h` and defined in
`OperationUtils.mm`, the kernel templates and `REGISTER_*_OP` macros live in
`c10/metal/indexing.h`. A ternary op with a scalar (addcmul's and addcdiv's `value`) needs
`exec_ternary_kernel` with a scalar and ternary kernels taking one (Note [ternary alpha kernels]
in port/plan/functor_sources.py). Three cases:

- the tree has both (a declaration of `exec_ternary_kernel(iter, name, alpha)` and
  `REGISTER_TERNARY_ALPHA_OP`): the port launches them (`reuse`);
- the tree has the three home files and their anchors: the port adds the overload's declaration
  beside `exec_ternary_kernel`'s, its definition after that function's in `OperationUtils.mm`,
  and the kernels and macro at the end of `c10/metal/indexing.h`'s namespace (`extend`); a second
  port of the family then finds them (`reuse`);
- a home file or anchor is missing (a wheel workspace has no `OperationUtils.mm`): the file-local
  launcher and kernels stay in the op's files, and the plan names what was missing.
Each edit is idempotent: applied twice, or over a tree that has it, it changes nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

from metalport.errors import RecipeError
from metalport.port.plan.functor_sources import TERNARY_ALPHA_KERNELS, TERNARY_ALPHA_MACRO
from metalport.port.write.host import TERNARY_ALPHA_HELPER, skip_to_close
from metalport.port.write.cformat import format_inserted
from metalport.port.write.metal import ensure_includes

KERNEL_HOME = "c10/metal/indexing.h"
LAUNCHER_DECL = "aten/src/ATen/native/mps/MetalShaderLibrary.h"
LAUNCHER_HOME = "aten/src/ATen/native/mps/OperationUtils.mm"
HOMES = (KERNEL_HOME, LAUNCHER_DECL, LAUNCHER_HOME)

_DECL = re.compile(r"^([ \t]*)void exec_ternary_kernel\(\s*TensorIteratorBase&\s*\w+,\s*const std::string&\s*\w+\s*\);"
                   r"[^\n]*\n", re.MULTILINE)
_ALPHA_DECL = re.compile(r"void exec_ternary_kernel\(\s*TensorIteratorBase&\s*\w+,\s*const std::string&\s*\w+,\s*"
                         r"const (?:c10::)?Scalar&")
_DEF = re.compile(r"^void MetalShaderLibrary::exec_ternary_kernel\(\s*TensorIteratorBase&\s*\w+,\s*"
                  r"const std::string&\s*\w+\s*\)\s*\{", re.MULTILINE)
_ALPHA_DEF = re.compile(r"^void MetalShaderLibrary::exec_ternary_kernel\([^)]*Scalar&", re.MULTILINE)
_NAMESPACE_END = re.compile(r"^\} // namespace metal[^\n]*\n", re.MULTILINE)
_MACRO_DEF = f"#define {TERNARY_ALPHA_MACRO}("

DECLARATION = ("  // A ternary kernel with a scalar argument (addcmul's and addcdiv's `value`), passed at opmath\n"
               "  // precision; kernels picked by the common dtype, cast to the output's dtype on store.\n"
               "  void exec_ternary_kernel(TensorIteratorBase& iter, const std::string& name, const c10::Scalar& alpha);\n")


def _text(root: Path, rel: str) -> str | None:
    path = root / rel
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def ternary_alpha_support(root: Path) -> tuple[str | None, str]:
    """("reuse" | "extend" | None, the plan line saying what the port does and why)."""
    kernels, decl, home = (_text(root, rel) for rel in HOMES)
    if decl and kernels and _ALPHA_DECL.search(decl) and _MACRO_DEF in kernels:
        return "reuse", (f"reuses MetalShaderLibrary::exec_ternary_kernel with a scalar ({LAUNCHER_DECL}) and "
                         f"{TERNARY_ALPHA_MACRO} ({KERNEL_HOME})")
    lacking = [what for what, ok in (
        (f"{KERNEL_HOME} (or its `}} // namespace metal`)", kernels and _NAMESPACE_END.search(kernels)),
        (f"{LAUNCHER_DECL}'s exec_ternary_kernel declaration", decl and _DECL.search(decl)),
        (f"{LAUNCHER_HOME}'s MetalShaderLibrary::exec_ternary_kernel definition", home and _DEF.search(home)),
    ) if not ok]
    if lacking:
        return None, ("adds a file-local exec_ternary_kernel_with_alpha launcher and kernels: the tree's "
                      "MetalShaderLibrary::exec_ternary_kernel takes no scalar (Note [ternary alpha kernels]) and "
                      f"the home to extend it in is missing: {'; '.join(lacking)}")
    return "extend", (f"extends MetalShaderLibrary::exec_ternary_kernel with a scalar overload in its home "
                      f"(declared in {LAUNCHER_DECL}, defined in {LAUNCHER_HOME}) and adds {TERNARY_ALPHA_MACRO} "
                      f"with its kernels to {KERNEL_HOME}, instead of private copies in the op's files")


def _member_launcher() -> str:
    """The file-local launcher of host.py as the `MetalShaderLibrary` member it becomes at home."""
    text = TERNARY_ALPHA_HELPER
    start = text.index("static void exec_ternary_kernel_with_alpha(")
    body = text[start:]
    body = body.replace("static void exec_ternary_kernel_with_alpha(TensorIteratorBase& iter, const std::string& name, "
                        "const Scalar& alpha) {",
                        "void MetalShaderLibrary::exec_ternary_kernel(TensorIteratorBase& iter,\n"
                        "                                             const std::string& name,\n"
                        "                                             const Scalar& alpha) {")
    body = body.replace("  using namespace mps;\n", "")
    body = body.replace("exec_ternary_kernel_with_alpha(sub_iter, name, alpha)", "exec_ternary_kernel(sub_iter, name, alpha)")
    body = body.replace("lib.getPipelineStateForFunc(kernel)", "getPipelineStateForFunc(kernel)")
    comment = ("// exec_ternary_kernel with a scalar (addcmul's and addcdiv's `value`): the scalar reaches the kernel\n"
               "// at opmath precision after the operands. Kernels are picked by the common dtype: contiguous operands\n"
               "// and output of that type run `<name>_dense_<t>_<t>_<alpha>`, anything else\n"
               "// `<name>_strided_cast_<t>_<alpha>`, which reads each input at its own type and casts the result to\n"
               "// the output's type on store (REGISTER_TERNARY_ALPHA_OP in c10/metal/indexing.h).\n")
    return comment + body


def _qualified_kernels() -> str:
    """The ternary alpha kernels and macro as `c10/metal/indexing.h` holds them: the templates in
    namespace c10::metal, the macro naming them fully (it expands in kernel files' global scope)."""
    text = TERNARY_ALPHA_KERNELS
    for name in ("ternary_alpha_dense", "ternary_alpha_strided_cast"):
        text = re.sub(rf"(?<![\w:])({name}<)", r"::c10::metal::\1", text)
    return text.replace("// operands at opmath precision. c10/metal's ternary kernels take no scalar.\n",
                        "// operands at opmath precision (exec_ternary_kernel with a scalar).\n")


def extend_texts(texts: dict[str, str | None], root: Path) -> dict[str, str]:
    """The home files (`HOMES` -> text) with the ternary alpha launcher and kernels added where
    each lacks them, the added lines formatted with the tree's `.clang-format`; RecipeError naming
    the file when an anchor is gone."""
    out: dict[str, str] = {}
    kernels = texts.get(KERNEL_HOME)
    if kernels is None or not (ends := list(_NAMESPACE_END.finditer(kernels))):
        raise RecipeError("no `} // namespace metal` to add the ternary alpha kernels before", location=KERNEL_HOME,
                          hint="re-plan the op on the current tree")
    if _MACRO_DEF not in kernels:
        at = ends[-1].start()
        kernels = f"{kernels[:at]}{_qualified_kernels()}\n{kernels[at:]}"
    out[KERNEL_HOME] = kernels
    decl = texts.get(LAUNCHER_DECL) or ""
    if not _ALPHA_DECL.search(decl):
        found = _DECL.search(decl)
        if found is None:
            raise RecipeError("no exec_ternary_kernel declaration to add the scalar overload beside",
                              location=LAUNCHER_DECL, hint="re-plan the op on the current tree")
        decl = decl[:found.end()] + DECLARATION + decl[found.end():]
    out[LAUNCHER_DECL] = decl
    home = texts.get(LAUNCHER_HOME) or ""
    if not _ALPHA_DEF.search(home):
        found = _DEF.search(home)
        close = skip_to_close(home, found.end() - 1) if found else -1
        if close < 0:
            raise RecipeError("no MetalShaderLibrary::exec_ternary_kernel definition to add the overload after",
                              location=LAUNCHER_HOME, hint="re-plan the op on the current tree")
        end = home.find("\n", close) + 1 or len(home)
        home = f"{home[:end]}\n{_member_launcher()}{home[end:]}"
        home = ensure_includes(home, ("#include <ATen/OpMathType.h>", "#include <fmt/format.h>"), path=LAUNCHER_HOME)
    out[LAUNCHER_HOME] = home
    return {rel: format_inserted(texts.get(rel) or "", text, root, rel) for rel, text in out.items()}
