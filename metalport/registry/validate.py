"""Validate a native_functions.yaml: torchgen's own parser plus the checks torchgen skips."""

from __future__ import annotations

import difflib
import re
import shutil
import tempfile
from pathlib import Path

from metalport.errors import RegistryError
from metalport.registry.model import Entry, Registry, load_registry

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_:]*$")
_AT = re.compile(r"(?:in |)(\S*native_functions\.yaml):(\d+)")


def check_registry(registry: Registry) -> None:
    """Our checks: known dispatch keys, kernel names that are C++ identifiers, each key on one line."""
    from torchgen.model import DispatchKey

    valid = set(DispatchKey.__members__)
    for entry in registry.entries:
        seen: dict[str, int] = {}
        for d in entry.dispatch:
            where = f"{registry.path}:{d.line}"
            for key in d.keys:
                if key not in valid:
                    close = difflib.get_close_matches(key, sorted(valid), n=1)
                    raise RegistryError(f"unknown dispatch key {key!r} for {entry.full_name}", location=where,
                                        hint=f"did you mean {close[0]!r}?" if close else "see torchgen.model.DispatchKey")
            if not _IDENT.match(d.kernel):
                raise RegistryError(f"kernel name {d.kernel!r} of {entry.full_name} is not a C++ identifier",
                                    location=where, hint="use letters, digits and underscores")
            for key in d.keys:
                if key in seen:
                    raise RegistryError(f"dispatch key {key} of {entry.full_name} is on lines {seen[key]} and {d.line}",
                                        location=where, hint="name each key on one line only")
                seen[key] = d.line


def validate_registry(yaml_path: Path | str, tags_path: Path | str) -> Registry:
    """Parse `yaml_path` ourselves, run our checks, then torchgen on a fresh temp copy."""
    registry = load_registry(yaml_path)
    check_registry(registry)
    import torchgen.gen

    with tempfile.TemporaryDirectory(prefix="metalport-validate-") as tmp:
        copy = Path(tmp) / "native_functions.yaml"
        tags = Path(tmp) / "tags.yaml"
        shutil.copyfile(yaml_path, copy)
        shutil.copyfile(tags_path, tags)
        try:
            torchgen.gen.parse_native_yaml(str(copy), str(tags), skip_native_fns_gen=False)
        except (AssertionError, AttributeError, KeyError, ValueError, RuntimeError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            match = _AT.search(str(err))
            line = match.group(2) if match else None
            entry = _entry_at(registry, int(line)) if line else None
            if line is None:
                named = _entry_named(registry, first)
                line, entry = (str(named.span.start), named.full_name) if named else (None, None)
            detail = f" in {entry}" if entry else ""
            raise RegistryError(f"torchgen rejects the registry{detail}: {first[:300]}",
                                location=f"{yaml_path}:{line}" if line else str(yaml_path),
                                hint="undo the last edit or fix that entry") from None
    return registry


def _entry_at(registry: Registry, line: int) -> str | None:
    for entry in registry.entries:
        if entry.span.start <= line <= entry.span.end:
            return entry.full_name
    return None


def _entry_named(registry: Registry, message: str) -> Entry | None:
    by_name = {e.full_name: e for e in registry.entries}
    return next((by_name[w] for w in re.findall(r"[\w.]+", message) if w in by_name), None)
