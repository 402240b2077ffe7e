"""The kernel table from preprocessed text (markers as metal_shim.h leaves them), without a compiler."""

from __future__ import annotations

from metalport.emulate.kernels import build_specs
from metalport.emulate.preprocess import strip_host_names

TEXT = """\
namespace ops {
template <typename T>
__mK__ void scale(__mD__ T* out [[buffer(1)]], __mshC__ T& by [[buffer(0)]],
                  uint2 pos [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  out[pos.x] *= by;
}
template [[host_name("scale_" "float")]] __mK__ void scale<float>(__mD__ float* out, __mshC__ float& by,
                                                           uint2 pos, uint lane);
__mK__ void fill(__mD__ int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1; }
__mK__ void guarded(__mD__ int* out [[buffer(0)]], __mshC__ uint& n [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) { if (i >= n) return; out[i] = 1; }
[[__mK__]] void attr_form(__mD__ int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 2; }
namespace {
[[host_name("zero_all")]] __mK__ void zero(__mD__ int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {}
}
}
template [[host_name("orphan")]] __mK__ void ::nowhere::missing<int>(__mD__ int* out);
"""


def test_bindings_come_from_the_definition_attributes() -> None:
    text, hosts = strip_host_names(TEXT)
    assert [h.name for h in hosts] == ["scale_float", "orphan"]
    assert "template [[" not in text and text.count("\n") == TEXT.count("\n")
    specs, problems = build_specs(text, hosts)
    by_name = {s.info.host_name: s for s in specs}
    assert sorted(by_name) == ["attr_form", "fill", "guarded", "scale_float", "zero_all"]
    assert by_name["fill"].info.grid_indexed == (0,)  # out[i]: one element per thread
    assert by_name["guarded"].info.grid_indexed == ()  # bounds-checked: the grid may be larger
    scale = by_name["scale_float"]
    assert scale.callee == "::ops::scale<float>"
    assert [(a.name, a.c_type, a.address_space, a.is_pointer, a.attribute, a.index) for a in scale.info.args] == [
        ("out", "float", "device", True, "buffer", 1),
        ("by", "float", "constant", False, "buffer", 0),
        ("pos", "uint2", "thread", False, "thread_position_in_grid", None),
        ("lane", "uint", "thread", False, "thread_index_in_simdgroup", None)]
    assert [a.name for a in scale.info.buffers] == ["by", "out"]
    assert scale.info.uses_threadgroup  # a simdgroup attribute needs the threadgroup executor
    assert by_name["fill"].callee == "::ops::fill" and not by_name["fill"].info.uses_threadgroup
    assert by_name["zero_all"].callee == "::ops::zero"
    assert problems == ["host_name 'orphan': no kernel definition of 'missing' with 1 parameters"]


def test_whole_file_threadgroup_flag_marks_every_kernel() -> None:
    text, hosts = strip_host_names(TEXT)
    specs, _ = build_specs(text, hosts, tu_threadgroup=True)
    assert all(s.info.uses_threadgroup for s in specs)
