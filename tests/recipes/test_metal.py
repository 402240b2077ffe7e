"""Functor insertion into kernel-file texts of our own."""

from __future__ import annotations

import pytest

from metalport.port.write.metal import KERNEL_INCLUDES, functor_arity, insert_functor
from metalport.errors import RecipeError

KERNEL = """#include <c10/metal/indexing.h>
#include <c10/metal/utils.h>
using namespace c10::metal;

struct twice_functor {
  template <typename T>
  inline T operator()(const T x) {
    if (x > 0) {
      return x + x;
    }
    return x * 2;
  }
};

REGISTER_UNARY_OP(twice, float, float);
REGISTER_UNARY_OP(twice, half, half);

// trailing note kept as is
"""

HALVE = """struct halve_functor {
  template <typename T>
  inline T operator()(const T x) {
    return x / 2;
  }
};
"""
REGS = ("REGISTER_UNARY_OP(halve, float, float);", "REGISTER_UNARY_OP(halve, half, half);")


def test_inserts_after_the_last_functor_block_with_its_registrations_beside_it() -> None:
    out = insert_functor(KERNEL, "halve_functor", HALVE, REGS)
    expected = KERNEL.replace(
        "REGISTER_UNARY_OP(twice, half, half);\n",
        "REGISTER_UNARY_OP(twice, half, half);\n\n" + HALVE + "\n" + "\n".join(REGS) + "\n",
    )
    assert out == expected


def test_never_lands_between_a_functor_and_its_typedef_and_registrations() -> None:
    text = KERNEL.replace("REGISTER_UNARY_OP(twice, float, float);",
                          "typedef float twice_t;\nREGISTER_UNARY_OP(twice, float, float);")
    text += "\ntemplate <typename T>\nkernel void other(device T* out) {}\n"
    out = insert_functor(text, "halve_functor", HALVE, REGS)
    block = out[out.index("struct twice_functor"):out.index("struct halve_functor")]
    assert block.rstrip().endswith("REGISTER_UNARY_OP(twice, half, half);")
    assert "typedef float twice_t;" in block
    assert out.index("REGISTER_UNARY_OP(halve, half, half);") < out.index("// trailing note")


def test_new_code_follows_the_files_namespace_style() -> None:
    source = ("struct halve_functor {\n  template <typename T>\n"
              "  inline ::metal::enable_if_t<::metal::is_floating_point_v<T>, T> operator()(const T x) {\n"
              "    return ::metal::max(::c10::metal::log1p(x), ::metal::precise::exp(x));\n  }\n};\n")
    styled = insert_functor("#include <metal_stdlib>\nusing namespace metal;\n", "halve_functor", source, REGS)
    assert "::metal::" not in styled.replace("c10::metal::", "")
    assert "enable_if_t<is_floating_point_v<T>, T>" in styled
    assert "metal::max(c10::metal::log1p(x), precise::exp(x))" in styled
    plain = insert_functor("#include <metal_stdlib>\n", "halve_functor", source, REGS)
    assert "::metal::enable_if_t<::metal::is_floating_point_v<T>, T>" in plain


def test_functor_arity_counts_call_operands() -> None:
    assert functor_arity(KERNEL, "twice_functor") == 1
    assert functor_arity(KERNEL, "halve_functor") is None


def test_insert_is_idempotent() -> None:
    once = insert_functor(KERNEL, "halve_functor", HALVE, REGS)
    assert insert_functor(once, "halve_functor", HALVE, REGS) == once


def test_only_missing_registrations_are_added() -> None:
    once = insert_functor(KERNEL, "halve_functor", HALVE, REGS[:1])
    twice = insert_functor(once, "halve_functor", HALVE, REGS)
    assert twice.count(REGS[0]) == 1
    assert twice.count(REGS[1]) == 1
    assert twice.count("struct halve_functor {") == 1


def test_file_without_functors_anchors_on_includes() -> None:
    text = "#include <c10/metal/indexing.h>\n\n// nothing yet\n"
    out = insert_functor(text, "halve_functor", HALVE, REGS)
    assert out == ("#include <c10/metal/indexing.h>\n\n" + HALVE + "\n" + "\n".join(REGS)
                   + "\n\n// nothing yet\n")


def test_absent_file_is_created_with_includes() -> None:
    out = insert_functor(None, "halve_functor", HALVE, REGS)
    assert out.startswith("\n".join(KERNEL_INCLUDES) + "\nusing namespace metal;\n\n" + HALVE)
    assert out.endswith("\n".join(REGS) + "\n")


def test_no_anchor_is_a_structured_failure() -> None:
    with pytest.raises(RecipeError) as err:
        insert_functor("// empty shader\n", "halve_functor", HALVE, REGS, path="Empty.metal")
    assert str(err.value) == ("Empty.metal:1: no functor or #include to anchor halve_functor on; "
                              "add '#include <c10/metal/indexing.h>' at the top of the file")


def test_an_include_goes_after_the_last_unconditional_one() -> None:
    from metalport.port.write.metal import ensure_includes

    text = ("#include <a.h>\n#include <b.h>\n\n#ifndef JIT\nstatic int lib;\n#else\n#include <lib_metallib.h>\n"
            "#endif\n")
    assert ensure_includes(text, ["#include <c.h>"]) == text.replace("#include <b.h>\n", "#include <b.h>\n#include <c.h>\n")
