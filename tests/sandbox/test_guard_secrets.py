"""The path guard refuses an edit holding a secret's value, as it refuses a path off the allow-list."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalport.errors import SandboxError
from metalport.sandbox import PathGuard

KEY = "sk-guard-test-0123456789abcdef"


@pytest.fixture()
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DEPLOY_PASSPHRASE", "correct-horse-battery")
    (tmp_path / "k.metal").write_text("kernel void f() {}\n")
    return tmp_path


@pytest.mark.parametrize("name, value, secret_env", [
    ("OPENAI_API_KEY", KEY, ()),
    ("DEPLOY_PASSPHRASE", "correct-horse-battery", ("DEPLOY_PASSPHRASE",)),
])
def test_an_edit_holding_a_secret_is_refused_and_nothing_is_written(tree: Path, name: str, value: str,
                                                                    secret_env: tuple[str, ...]) -> None:
    guard = PathGuard(tree, {"k.metal"}, secret_env=secret_env)
    with pytest.raises(SandboxError) as err:
        guard.write_text("k.metal", f"// {value}\nkernel void f() {{}}\n")
    assert str(err.value) == (f"the edit to 'k.metal' holds the value of ${name}; a secret never goes into "
                              "code; write the code without it; nothing was written")
    assert value not in str(err.value)
    assert (tree / "k.metal").read_text() == "kernel void f() {}\n"


def test_an_unconfigured_variable_and_ordinary_text_pass(tree: Path) -> None:
    guard = PathGuard(tree, {"k.metal"})
    assert guard.write_text("k.metal", "// correct-horse-battery\nkernel void f() {}\n")
