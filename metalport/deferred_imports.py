"""Packages whose `__init__` runs on first use of one of its names, not on import of a submodule.

Note [deferred langsmith types]: LangGraph imports langchain-core's tracers, which import
`langsmith.run_trees`, which imports one type alias from `langsmith.types.run_select_field`.
Importing any submodule runs its package's `__init__` first, and `langsmith/types/__init__.py`
(generated from LangSmith's OpenAPI spec) imports all of its ~170 modules of pydantic models:
~0.25 s CPU of every `run-migration` (a fifth of the pre-flight goal), for a REST client
metalport never calls. `defer_package_init` installs a finder that loads the named package as
usual (its `__path__`, spec and loader; submodules import and bind normally) but runs its
`__init__` only when a name the package itself defines is first asked for (`from langsmith.types
import Run`, `langsmith.types.Run`): then, once and under a lock, exactly as an import would.
Nothing else changes; a package already imported, or not installed, is left alone.
"""

from __future__ import annotations

import importlib.machinery
import sys
import threading
from types import ModuleType
from typing import Any

DEFERRED = ("langsmith.types", "langgraph_sdk")


class _DeferredInit:
    """Wraps a package's loader: the module is made as usual, its `__init__` runs on first use."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._lock = threading.RLock()

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        loader, lock, state = self._loader, self._lock, {"loading": False}

        def __getattr__(name: str) -> Any:  # PEP 562: only names not (yet) in the module
            with lock:  # another thread asking meanwhile waits here until `__init__` has run
                if not state["loading"]:  # the loading thread itself, mid-`__init__`, reads as usual
                    state["loading"] = True
                    module.__loader__ = loader
                    loader.exec_module(module)
                    if vars(module).get("__getattr__") is __getattr__:
                        del module.__getattr__
            try:
                return vars(module)[name]
            except KeyError:
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

        module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _DeferredFinder:  # a meta path finder (importlib.abc is not imported: it costs ~10 ms)
    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = frozenset(names)

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return None  # not installed, or not a package: the normal import (and its error)
        spec.loader = _DeferredInit(spec.loader)
        return spec


def defer_package_init(names: tuple[str, ...] = DEFERRED) -> None:
    """Install the finder for `names` (once per process; packages already imported stay as they are)."""
    if not any(isinstance(f, _DeferredFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _DeferredFinder(tuple(n for n in names if n not in sys.modules)))
