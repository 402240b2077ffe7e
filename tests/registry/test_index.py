"""The registry index (Note [registry index]) and torchgen's kept verdict: one parse per file content."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from metalport.errors import RegistryError
from metalport.registry import load_registry, parse_registry, validate_registry
from metalport.registry.index import index_key

SMALL = """\
- func: heaviside.out(Tensor self, Tensor values, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: heaviside_out

- func: heaviside(Tensor self, Tensor values) -> Tensor
  structured_delegate: heaviside.out
"""


def _kernels(registry) -> list[str]:
    return [str(d) for e in registry.resolve("heaviside").entries for d in e.dispatch]


def test_second_load_comes_from_the_index_and_an_edit_parses_again(tmp_path: Path) -> None:
    cache, yaml_path = tmp_path / "index", tmp_path / "native_functions.yaml"
    yaml_path.write_text(SMALL, encoding="utf-8")
    first = load_registry(yaml_path, cache_dir=cache)
    assert [p.name for p in cache.glob("*.pickle")] == [f"{index_key(SMALL)}.pickle"]
    again = load_registry(yaml_path, cache_dir=cache)
    assert again.entries == first.entries == parse_registry(SMALL, yaml_path).entries
    assert _kernels(again) == ["CPU, CUDA: heaviside_out"]

    edited = SMALL.replace("CPU, CUDA: heaviside_out", "CPU, CUDA, MPS: heaviside_out")
    yaml_path.write_text(edited, encoding="utf-8")
    after = load_registry(yaml_path, cache_dir=cache)
    assert _kernels(after) == ["CPU, CUDA, MPS: heaviside_out"]  # the edit is seen, not the old parse
    assert sorted(p.name for p in cache.glob("*.pickle")) == sorted(
        f"{index_key(t)}.pickle" for t in (SMALL, edited))


def test_one_entry_serves_every_checkout_with_that_text(tmp_path: Path) -> None:
    cache = tmp_path / "index"
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(SMALL, encoding="utf-8")
    b.write_text(SMALL, encoding="utf-8")
    load_registry(a, cache_dir=cache)
    from_b = load_registry(b, cache_dir=cache)
    assert len(list(cache.glob("*.pickle"))) == 1
    assert str(from_b.entries[0].span) == f"{b}:1"  # spans name the file read, not the first one
    assert from_b.path == b and from_b.text == SMALL


def test_damaged_entry_is_parsed_again_and_rewritten(tmp_path: Path) -> None:
    cache, yaml_path = tmp_path / "index", tmp_path / "nf.yaml"
    yaml_path.write_text(SMALL, encoding="utf-8")
    load_registry(yaml_path, cache_dir=cache)
    (entry,) = cache.glob("*.pickle")
    entry.write_bytes(b"\x80\x05garbage")
    assert _kernels(load_registry(yaml_path, cache_dir=cache)) == ["CPU, CUDA: heaviside_out"]
    assert load_registry(yaml_path, cache_dir=cache).entries == parse_registry(SMALL, yaml_path).entries
    assert entry.read_bytes() != b"\x80\x05garbage"


def test_a_bad_file_raises_the_same_located_error_every_time(tmp_path: Path) -> None:
    cache, yaml_path = tmp_path / "index", tmp_path / "nf.yaml"
    yaml_path.write_text(SMALL + "- func: heaviside.out(Tensor self) -> Tensor\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(RegistryError) as err:
            load_registry(yaml_path, cache_dir=cache)
        assert str(err.value).startswith(f"{yaml_path}:8: heaviside.out is defined twice (first at line 1)")
    assert not list(cache.glob("*.pickle"))


def test_torchgen_verdict_is_kept_per_content_and_an_edit_is_checked_again(tmp_path: Path, wheel_yaml: Path,
                                                                          wheel_tags: Path) -> None:
    cache, yaml_path, tags = tmp_path / "index", tmp_path / "native_functions.yaml", tmp_path / "tags.yaml"
    shutil.copyfile(wheel_yaml, yaml_path)
    shutil.copyfile(wheel_tags, tags)
    validate_registry(yaml_path, tags, cache_dir=cache)
    assert len(list(cache.glob("*.torchgen-ok"))) == 1
    validate_registry(yaml_path, tags, cache_dir=cache)  # same text: the kept verdict
    assert len(list(cache.glob("*.torchgen-ok"))) == 1

    text = yaml_path.read_text(encoding="utf-8")
    # `structured_delegate` to an op that does not exist: our parser accepts it, torchgen does not.
    broken = text.replace("  structured_delegate: heaviside.out", "  structured_delegate: heaviside.nope", 1)
    assert broken != text
    yaml_path.write_text(broken, encoding="utf-8")
    with pytest.raises(RegistryError) as err:
        validate_registry(yaml_path, tags, cache_dir=cache)
    assert "torchgen rejects the registry" in str(err.value)
    assert len(list(cache.glob("*.torchgen-ok"))) == 1  # a rejection is never kept


def test_the_index_keeps_only_the_newest_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from metalport.registry import index

    monkeypatch.setattr(index, "KEEP", 2)
    cache, yaml_path = tmp_path / "index", tmp_path / "nf.yaml"
    texts = [SMALL.replace("heaviside_out", f"heaviside_out_v{i}") for i in range(4)]
    for i, text in enumerate(texts):
        yaml_path.write_text(text, encoding="utf-8")
        load_registry(yaml_path, cache_dir=cache)
        os.utime(cache / f"{index_key(text)}.pickle", (1_000_000 + i, 1_000_000 + i))
    assert sorted(p.name for p in cache.glob("*.pickle")) == sorted(f"{index_key(t)}.pickle" for t in texts[-2:])
