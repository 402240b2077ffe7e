"""The OpInfo decorator index kept per text (Note [content cache]): same answers as a fresh parse,
never a stale one for an edited text, and a damaged or unwritable cache only costs a parse."""

from __future__ import annotations

import subprocess

import pytest

from metalport.content_cache import ContentCache, blob_id
from metalport.errors import RecipeError
from metalport.port.write import decorators

OPINFOS = """\
op_db = [
    BinaryUfuncInfo('heaviside',
                    decorators=(
                        DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out',
                                     device_type='mps', dtypes=(torch.float16, torch.int64)),
                        DecorateInfo(unittest.skip("slow"), 'TestGradients', device_type='cuda'),
                    ),
                    skips=(
                        DecorateInfo(unittest.skip("no MPS kernel"), device_type='mps'),
                    )),
    UnaryUfuncInfo('signbit',
                   skips=(DecorateInfo(unittest.expectedFailure, device_type='mps'), DecorateInfo(tol, device_type='mps'),)),
]
"""


@pytest.fixture(autouse=True)
def _fresh_memory():
    decorators._INDEX.forget()
    yield
    decorators._INDEX.forget()


def test_blob_id_is_gits(tmp_path):
    path = tmp_path / "f.py"
    path.write_bytes(OPINFOS.encode())
    out = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True).stdout
    assert blob_id(OPINFOS.encode()) == out.strip()


def test_cached_index_answers_as_a_fresh_parse():
    first = decorators.find_decorators(OPINFOS, ["heaviside"], path="m.py")
    assert [(d.opinfo, d.first_line, d.last_line, d.dtypes) for d in first] == [
        ("heaviside", 4, 5, ("float16", "int64")), ("heaviside", 9, 9, None)]
    decorators._INDEX.forget()  # from the user cache this time
    assert decorators.find_decorators(OPINFOS, ["heaviside"], path="m.py") == first
    # signbit's decorator shares its line: strict refuses it, every time, cached or not
    for _ in range(2):
        with pytest.raises(RecipeError, match="shares its line"):
            decorators.find_decorators(OPINFOS, ["signbit"], path="m.py")
    assert len(decorators.find_decorators(OPINFOS, None, path="m.py", strict=False)) == 3
    narrowed = decorators.narrow_decorators(OPINFOS, {(4, 5): ("int64",)}, path="m.py")
    assert "dtypes=(torch.int64,))," in narrowed and narrowed.count("\n") == OPINFOS.count("\n")


def test_an_edited_text_is_indexed_anew():
    decorators.find_decorators(OPINFOS, None, path="m.py", strict=False)
    edited = OPINFOS.replace("'heaviside'", "'hypot'")
    found = decorators.find_decorators(edited, None, path="m.py", strict=False)
    assert {d.opinfo for d in found} == {"hypot", "signbit"}


def test_a_syntax_error_is_reported_every_time_and_never_cached():
    bad = OPINFOS + "op_db.append(\n"
    for _ in range(2):
        with pytest.raises(RecipeError, match="cannot parse") as err:
            decorators.find_decorators(bad, None, path="m.py")
        assert err.value.location.startswith("m.py:")
    assert not any(p.name.startswith(blob_id(bad.encode())) for p in decorators._INDEX.folder().glob("*.pickle"))


def test_damaged_or_unwritable_cache_costs_only_a_computation(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls = []
    cache = ContentCache("test-kind", [decorators.__file__])

    def compute(text: str) -> int:
        calls.append(text)
        return len(text)

    assert cache.get("abc", compute) == 3
    (entry,) = cache.folder().glob("*.pickle")
    entry.write_bytes(b"not a pickle")
    cache.forget()
    assert cache.get("abc", compute) == 3 and len(calls) == 2  # recomputed and rewritten
    cache.forget()
    assert cache.get("abc", compute) == 3 and len(calls) == 2  # read back
    (tmp_path / "ro").write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "ro"))
    cache.forget()
    assert cache.get("abc", compute) == 3 and len(calls) == 3
