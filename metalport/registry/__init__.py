"""The model of native_functions.yaml: frozen records, surgical text edits and validation."""

from metalport.registry.edit import (add_dispatch_key, add_dispatch_line, remove_dispatch_key,
                                     remove_dispatch_line, replace_dispatch_line)
from metalport.registry.index import load_registry, registry_from_text
from metalport.registry.model import DispatchLine, Entry, Op, Registry, Span, parse_registry
from metalport.registry.validate import check_registry, validate_registry

__all__ = [
    "DispatchLine", "Entry", "Op", "Registry", "Span", "load_registry", "parse_registry", "registry_from_text",
    "add_dispatch_key", "add_dispatch_line", "remove_dispatch_key", "remove_dispatch_line",
    "replace_dispatch_line", "check_registry", "validate_registry",
]
