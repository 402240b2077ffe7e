"""Parsing native_functions.yaml: records, spans, grouping and the messages users see."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.errors import RegistryError, UnknownOpError
from metalport.registry import load_registry, parse_registry

SMALL = """\
# a comment
- func: heaviside.out(Tensor self, Tensor values, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  device_check: NoCheck   # TensorIterator
  dispatch:
    CPU, CUDA: heaviside_out
  tags: pointwise

- func: heaviside(Tensor self, Tensor values) -> Tensor
  variants: function, method
  structured_delegate: heaviside.out
  tags: [core, pointwise]

- func: heaviside_(Tensor(a!) self, Tensor values) -> Tensor(a!)
  variants: method
  structured_delegate: heaviside.out
"""


def test_records_know_their_lines_and_fields() -> None:
    reg = parse_registry(SMALL, "nf.yaml")
    op = reg.resolve("aten::heaviside")
    assert [e.full_name for e in op.entries] == ["heaviside.out", "heaviside", "heaviside_"]
    out = op.entries[0]
    assert (out.name, out.overload, out.structured, out.structured_inherits) == (
        "heaviside", "out", True, "TensorIteratorBase")
    assert (out.span.start, out.span.end, str(out.span)) == (2, 8, "nf.yaml:2")
    assert out.device_check == "NoCheck"
    (line,) = out.dispatch
    assert (line.keys, line.kernel, line.line, line.text) == (
        ("CPU", "CUDA"), "heaviside_out", 7, "    CPU, CUDA: heaviside_out")
    assert op.entries[1].variants == ("function", "method")
    assert op.entries[1].tags == ("core", "pointwise")
    assert op.entries[1].structured_delegate == "heaviside.out"
    assert op.entries[2].span.end == 17


@pytest.mark.parametrize("name", ["aten::heaviside", "heaviside", "heaviside.out", "heaviside_"])
def test_resolve_accepts_every_spelling(name: str) -> None:
    assert parse_registry(SMALL, "nf.yaml").resolve(name).name == "heaviside"


def test_unknown_op_suggests_close_names() -> None:
    with pytest.raises(UnknownOpError) as err:
        parse_registry(SMALL, "nf.yaml").resolve("heavisde")
    assert str(err.value) == "nf.yaml: unknown op 'heavisde'; did you mean 'heaviside'?"
    assert err.value.exit_code == 2


@pytest.mark.parametrize(("text", "message"), [
    ("- func: a(Tensor x) -> Tensor\n  dispatch:\n    CPU: a\n  variants: function\n  dispatch:\n    CPU: b\n",
     "nf.yaml:5: duplicate key 'dispatch'; keep one of them"),
    ("- func: a(Tensor x) -> Tensor\n  dispach:\n    CPU: a\n",
     "nf.yaml:2: unknown key 'dispach'; did you mean 'dispatch'?"),
    ("- func: a(Tensor x) -> Tensor\n  dispatch:\n    CPU: a\n    CPU: b\n",
     "nf.yaml:4: duplicate dispatch line 'CPU' in a; keep one of them"),
    ("- func: a(Tensor x) -> Tensor\n  dispatch:\n    CPU: [a\n",
     "nf.yaml:4: malformed YAML: did not find expected ',' or ']' (while parsing a flow sequence started at line 3); fix the indentation or quoting there"),
    ("- func: a(Tensor x) -> Tensor\n\n- func: a(Tensor x) -> Tensor\n",
     "nf.yaml:3: a is defined twice (first at line 1); remove one of the entries"),
])
def test_bad_input_names_file_and_line(text: str, message: str) -> None:
    with pytest.raises(RegistryError) as err:
        parse_registry(text, "nf.yaml")
    assert str(err.value) == message


def test_malformed_indentation_gives_its_line(tmp_path: Path) -> None:
    path = tmp_path / "native_functions.yaml"
    path.write_text("- func: a(Tensor x) -> Tensor\n  dispatch:\n    CPU: a\n   bad: indent\n")
    with pytest.raises(RegistryError, match=rf"^{path}:4: malformed YAML"):
        load_registry(path)


def test_wheel_registry_parses(wheel_yaml: Path) -> None:
    reg = load_registry(wheel_yaml)
    assert len(reg.entries) > 2000
    atan2 = reg.resolve("atan2").entry("atan2.out")
    assert atan2 is not None and atan2.kernel_for("MPS").kernel == "atan2_out"
