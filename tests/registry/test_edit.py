"""Surgical edits keep every other byte; an edit and its inverse give the original back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metalport.errors import RegistryError
from metalport.registry import (add_dispatch_key, add_dispatch_line, parse_registry, remove_dispatch_key,
                                remove_dispatch_line, replace_dispatch_line, validate_registry)
from tests.registry.test_model import SMALL


def _out(text: str):
    return parse_registry(text, "nf.yaml").resolve("heaviside").entry("heaviside.out")


def test_add_key_to_shared_line() -> None:
    new = add_dispatch_key(SMALL, _out(SMALL), "heaviside_out")
    assert "    CPU, CUDA, MPS: heaviside_out\n" in new
    assert [a for a, b in zip(SMALL.splitlines(), new.splitlines()) if a != b] == ["    CPU, CUDA: heaviside_out"]
    assert remove_dispatch_key(new, 7) == SMALL


def test_add_then_remove_line_is_byte_identical() -> None:
    new = add_dispatch_line(SMALL, _out(SMALL), ("MPS",), "heaviside_out_mps")
    assert new.splitlines()[7] == "    MPS: heaviside_out_mps"
    assert _out(new).kernel_for("MPS").line == 8
    assert remove_dispatch_line(new, 8) == SMALL


def test_replace_keeps_indent_and_comment() -> None:
    text = SMALL.replace("    CPU, CUDA: heaviside_out\n", "    CPU, CUDA: heaviside_out  # keep\n")
    new = replace_dispatch_line(text, 7, ("CPU", "CUDA", "MPS"), "heaviside_out")
    assert new.splitlines()[6] == "    CPU, CUDA, MPS: heaviside_out  # keep"


def test_add_line_to_entry_without_dispatch() -> None:
    entry = parse_registry(SMALL, "nf.yaml").resolve("heaviside").entry("heaviside_")
    new = add_dispatch_line(SMALL, entry, ("MPS",), "heaviside_mps_")
    assert new.endswith("  structured_delegate: heaviside.out\n  dispatch:\n    MPS: heaviside_mps_\n")


def test_bad_kernel_name_and_existing_key_are_refused() -> None:
    with pytest.raises(RegistryError, match="kernel name 'atan2 out!!' is not a C\\+\\+ identifier"):
        add_dispatch_line(SMALL, _out(SMALL), ("MPS",), "atan2 out!!")
    done = add_dispatch_key(SMALL, _out(SMALL), "heaviside_out")
    with pytest.raises(RegistryError, match="^nf.yaml:2: heaviside.out already dispatches MPS to heaviside_out"):
        add_dispatch_key(done, _out(done), "heaviside_out")


def test_wheel_edit_and_inverse_pass_torchgen(wheel_yaml: Path, wheel_tags: Path, tmp_path: Path) -> None:
    original = wheel_yaml.read_text()
    entry = parse_registry(original, wheel_yaml).resolve("heaviside").entry("heaviside.out")
    edited = add_dispatch_key(original, entry, "heaviside_out")
    path = tmp_path / "native_functions.yaml"
    shutil.copyfile(wheel_tags, tmp_path / "tags.yaml")
    path.write_text(edited)
    reg = validate_registry(path, tmp_path / "tags.yaml")
    assert reg.resolve("heaviside").entry("heaviside.out").kernel_for("MPS").kernel == "heaviside_out"
    restored = remove_dispatch_key(edited, entry.dispatch[0].line)
    assert restored == original


def test_validation_catches_what_torchgen_accepts(wheel_tags: Path, tmp_path: Path) -> None:
    path = tmp_path / "native_functions.yaml"
    path.write_text(SMALL.replace("    CPU, CUDA: heaviside_out\n", "    CPU, CUDA: heaviside_out\n    CPU: other\n"))
    with pytest.raises(RegistryError) as err:
        validate_registry(path, wheel_tags)
    assert str(err.value) == (f"{path}:8: dispatch key CPU of heaviside.out is on lines 7 and 8; "
                              "name each key on one line only")


def test_unknown_dispatch_key_suggests_the_close_one(wheel_tags: Path, tmp_path: Path) -> None:
    path = tmp_path / "native_functions.yaml"
    path.write_text(SMALL.replace("CPU, CUDA:", "CPU, CUDA, MSP:"))
    with pytest.raises(RegistryError) as err:
        validate_registry(path, wheel_tags)
    assert str(err.value) == f"{path}:7: unknown dispatch key 'MSP' for heaviside.out; did you mean 'MPS'?"


def test_torchgen_errors_carry_file_line_and_entry(wheel_tags: Path, tmp_path: Path) -> None:
    path = tmp_path / "native_functions.yaml"
    path.write_text(SMALL.replace("  structured_delegate: heaviside.out\n  tags: [core",
                                  "  structured_delegate: heaviside.outt\n  tags: [core"))
    with pytest.raises(RegistryError) as err:
        validate_registry(path, wheel_tags)
    assert str(err.value).startswith(f"{path}:10: torchgen rejects the registry in heaviside: ")
    assert "heaviside.outt" in str(err.value)
