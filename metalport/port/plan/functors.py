"""The recipe table: our own functor math for real pointwise ops that MPS lacks or runs via MPSGraph.

Each `FunctorRecipe` says which family the op is in, which `REGISTER_*_OP` macro registers it, how
the output dtype follows the input, and which files it lands in. The dtypes to register come from
the op's OpInfo (CPU dtypes) at run time, minus what MPS cannot hold (`dtypes_for`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from metalport import metal_types
from metalport.port.plan.functor_sources import SOURCES, TERNARY_ALPHA_MACRO
from metalport.errors import RecipeError


class HostTemplate(enum.Enum):
    """The host template a recipe's functor is launched through (the `exec_*_kernel` of its arity)."""

    UNARY = "unary"
    BINARY = "binary"
    ALPHA = "alpha"
    TERNARY_ALPHA = "ternary_alpha"  # a scalar (`value`) passed to the kernel (Note [ternary alpha kernels])


class OutDtype(enum.Enum):
    """How the output element type follows the input's."""

    SAME = "same"
    BOOL = "bool"
    FLOAT_FOR_INTEGRAL = "float_for_integral"


_MACRO = {
    HostTemplate.UNARY: "REGISTER_UNARY_OP",
    HostTemplate.BINARY: "REGISTER_BINARY_OP",
    HostTemplate.ALPHA: "REGISTER_BINARY_ALPHA_OP",
    HostTemplate.TERNARY_ALPHA: TERNARY_ALPHA_MACRO,
}
CASTOUT_MACRO = "REGISTER_BINARY_CASTOUT_OP"
_KERNEL_FILE = {
    HostTemplate.UNARY: "UnaryKernel.metal",
    HostTemplate.BINARY: "BinaryKernel.metal",
    HostTemplate.ALPHA: "BinaryKernel.metal",
    HostTemplate.TERNARY_ALPHA: "PointwiseOps.metal",  # upstream's file for addcmul and addcdiv
}
_HOST_FILE = {
    HostTemplate.UNARY: "UnaryKernel.mm",
    HostTemplate.BINARY: "BinaryKernel.mm",
    HostTemplate.ALPHA: "BinaryKernel.mm",
    HostTemplate.TERNARY_ALPHA: "PointwiseOps.mm",
}

# torch dtype name -> Metal element type a functor recipe registers; float64 and complex128 have no
# Metal type (MPS has neither), and the barebones uint16/32/64 are left out (few kernels take them).
METAL_TYPES: dict[str, str] = {t.torch_name: t.name for t in metal_types.METAL_TYPES if not t.barebones}
COMPLEX_TYPES = metal_types.COMPLEX
_FLOATING = metal_types.FLOATING
# The Metal type of at::toOpMathType: the precision a scalar argument reaches the kernel at.
OPMATH_TYPES: dict[str, str] = {t.name: t.opmath for t in metal_types.METAL_TYPES if t.opmath != t.name}


@dataclass(frozen=True)
class FunctorRecipe:
    """One table entry: an op, its math and where it is registered."""

    op: str
    family: HostTemplate
    out_dtype: OutDtype
    opinfo: str  # OpInfo name whose CPU dtypes are registered
    source: str
    floating_only: bool = False  # the functor has no integral branch
    complex: bool = False  # the functor has a float2/half2 branch (c10::metal::is_complex_v)
    covers: tuple[str, ...] = ()  # torch dtype names the functor serves; () = every OpInfo CPU dtype

    def __post_init__(self) -> None:
        if f"struct {self.functor} " not in self.source:
            raise ValueError(f"recipe source for {self.op} does not define {self.functor}")

    @property
    def functor(self) -> str:
        return f"{self.op}_functor"

    @property
    def macro(self) -> str:
        return _MACRO[self.family]

    @property
    def stub(self) -> str:
        return f"{self.op}_stub"

    @property
    def kernel_file(self) -> str:
        return _KERNEL_FILE[self.family]

    @property
    def host_file(self) -> str:
        return _HOST_FILE[self.family]

    def output_type(self, metal_type: str) -> str:
        """The Metal output element type for input `metal_type`."""
        if self.out_dtype is OutDtype.BOOL:
            return "bool"
        if self.out_dtype is OutDtype.FLOAT_FOR_INTEGRAL and metal_type not in _FLOATING + COMPLEX_TYPES:
            return "float"
        return metal_type

    def registrations(self, metal_types: Iterable[str]) -> tuple[str, ...]:
        """One `REGISTER_*_OP(...)` line per input type, in the given order."""
        lines = []
        for t in metal_types:
            out = self.output_type(t)
            if self.family is HostTemplate.ALPHA:
                lines.append(f"{self.macro}({self.op}, {t}, {t}, {out});")
            elif self.family is HostTemplate.TERNARY_ALPHA:
                lines.append(f"{self.macro}({self.op}, {t}, {OPMATH_TYPES.get(t, t)}, {out});")
            else:
                lines.append(f"{self.macro}({self.op}, {t}, {out});")
                if self.castout:
                    lines.append(f"{CASTOUT_MACRO}({self.op}, {t}, {out});")
        return tuple(lines)

    @property
    def castout(self) -> bool:
        """True when the kernel's natural result (bool) can differ from an `out=` tensor's dtype:
        each registration gets its `_strided_castout_` variant (c10/metal/indexing.h), so
        `torch.logical_and(a, b, out=float_tensor)` has a kernel on the Metal path."""
        return self.family is HostTemplate.BINARY and self.out_dtype is OutDtype.BOOL


def _entry(op: str, family: HostTemplate, out: OutDtype, opinfo: str | None = None, *,
           floating_only: bool = False, complex: bool = False) -> FunctorRecipe:
    return FunctorRecipe(op, family, out, opinfo or op, SOURCES[op], floating_only, complex)


_U, _B, _A, _TA = HostTemplate.UNARY, HostTemplate.BINARY, HostTemplate.ALPHA, HostTemplate.TERNARY_ALPHA
_SAME, _BOOL, _FLT = OutDtype.SAME, OutDtype.BOOL, OutDtype.FLOAT_FOR_INTEGRAL


def recipe_table() -> dict[str, FunctorRecipe]:
    """Every op with a deterministic recipe, keyed by op name (built fresh on each call)."""
    entries = (
        _entry("acosh", _U, _FLT, complex=True), _entry("asinh", _U, _FLT, complex=True),
        _entry("atanh", _U, _FLT, complex=True),
        _entry("special_ndtri", _U, _FLT, "special.ndtri"),
        _entry("special_log_ndtr", _U, _FLT, "special.log_ndtr"),
        _entry("sign", _U, _SAME), _entry("sgn", _U, _SAME, complex=True), _entry("frac", _U, _SAME, floating_only=True),
        _entry("mish", _U, _SAME, "nn.functional.mish", floating_only=True),
        _entry("conj_physical", _U, _SAME, complex=True), _entry("signbit", _U, _BOOL),
        _entry("logical_not", _U, _BOOL, complex=True),
        _entry("heaviside", _B, _SAME), _entry("logical_and", _B, _BOOL, complex=True),
        _entry("logical_or", _B, _BOOL, complex=True), _entry("logical_xor", _B, _BOOL, complex=True),
        _entry("sigmoid_backward", _B, _SAME, "sigmoid", floating_only=True, complex=True),
        _entry("tanh_backward", _B, _SAME, "tanh", floating_only=True, complex=True),
        _entry("mish_backward", _B, _SAME, "nn.functional.mish", floating_only=True),
        _entry("sub", _A, _SAME, complex=True),
        _entry("addcmul", _TA, _SAME, complex=True),
        _entry("addcdiv", _TA, _SAME, floating_only=True, complex=True),
    )
    return {e.op: e for e in entries}


def metal_types_for(torch_dtype_names: Iterable[str], *, complex: bool = False) -> tuple[str, ...]:
    """Metal element types for torch dtype names (`"float32"`, ...), MPS-unsupported dropped,
    in a fixed order. With `complex`, complex64 brings both `float2` and `half2` (MPS tests
    complex32 with complex64); without it complex types are left out."""
    wanted = set(torch_dtype_names)
    if complex and "complex64" in wanted:
        wanted.add("complex32")
    return tuple(m for name, m in METAL_TYPES.items()
                 if name in wanted and (complex or m not in COMPLEX_TYPES))


def dtypes_for(recipe: FunctorRecipe) -> tuple[str, ...]:
    """The Metal types to register for `recipe`: its OpInfo's CPU dtypes that MPS supports."""
    from metalport.torch_facts import opinfo_facts

    info = opinfo_facts().get(recipe.opinfo)
    if info is None:
        raise RecipeError(f"no OpInfo named {recipe.opinfo!r} for {recipe.op}",
                          hint="fix the opinfo name in the recipe table")
    cpu = [d for d in info.cpu_dtypes if not recipe.covers or d in recipe.covers]
    types = metal_types_for(cpu, complex=recipe.complex)
    if recipe.floating_only:
        types = tuple(t for t in types if t in _FLOATING or t in COMPLEX_TYPES)
    return types
