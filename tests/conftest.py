"""Shared fixtures: the installed wheel's registry files and a read-only wheel workspace."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the commands the tests start, as it does from a terminal.

    Note [ignored SIGINT]: a test runner started as a background job of a non-interactive shell (as
    CI may start it) inherits SIGINT ignored; every child would inherit the ignore (a shell's
    `trap` cannot undo one it was started with), so a Ctrl-C test would wait forever for an
    interrupt that cannot arrive. A handler, unlike an ignore, is reset to the default on exec.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _wheel_native_dir() -> Path:
    import torchgen

    return Path(torchgen.__file__).parent / "packaged" / "ATen" / "native"


@pytest.fixture(scope="session")
def wheel_yaml() -> Path:
    """The wheel's native_functions.yaml (read-only)."""
    return _wheel_native_dir() / "native_functions.yaml"


@pytest.fixture(scope="session")
def wheel_tags() -> Path:
    """The wheel's tags.yaml (read-only)."""
    return _wheel_native_dir() / "tags.yaml"


@pytest.fixture(scope="session")
def wheel_workspace(tmp_path_factory: pytest.TempPathFactory):
    """A wheel workspace made once per session by `init_workspace`; read-only by convention."""
    from metalport.checkout import init_workspace

    return init_workspace(tmp_path_factory.mktemp("wheel") / "workspace")


@pytest.fixture(scope="session", autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory):
    """The registry index and OpInfo facts of the whole session go to a temp folder, not ~/.cache
    (subprocesses inherit it); shared by the session so the OpInfo database is read once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))
        yield


@pytest.fixture(scope="session")
def real_tree_workspace(tmp_path_factory: pytest.TempPathFactory):
    """The real tree of METALPORT_REAL_TREE as a checkout (see `overlay_real_tree`); read-only by
    convention: to edit, take a copy (`tests.real_tree.overlay_real_tree(tmp_path, writable=True)`)."""
    from tests.real_tree import overlay_real_tree

    return overlay_real_tree(tmp_path_factory.mktemp("real") / "workspace")


_REAL_TREE_WORDS = ("overlay_real_tree", "METALPORT_REAL_TREE", "real_tree_workspace")


def _needs_real_tree(item: pytest.Item) -> bool:
    """Whether a test (or a fixture it uses) reads METALPORT_REAL_TREE: such tests skip without it."""
    import inspect

    if any("METALPORT_REAL_TREE" in str(m.kwargs.get("reason", "")) for m in item.iter_markers("skipif")):
        return True
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        for name in info.names_closure:
            funcs += [d.func for d in info.name2fixturedefs.get(name, ()) if name != "request"]
    for func in funcs:
        try:
            source = inspect.getsource(func)
        except (OSError, TypeError):
            continue
        if any(word in source for word in _REAL_TREE_WORDS):
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `real_tree` the tests that need METALPORT_REAL_TREE (`pytest --collect-only -q -m real_tree`
    counts them; the README's Tests section gives the numbers)."""
    for item in items:
        if _needs_real_tree(item):
            item.add_marker(pytest.mark.real_tree)
