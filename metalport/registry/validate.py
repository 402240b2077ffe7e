"""Validate a native_functions.yaml: torchgen's own parser plus the checks torchgen skips."""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import re
import shutil
import tempfile
from pathlib import Path

from metalport.atomic import write_bytes_atomic
from metalport.errors import RegistryError
from metalport.registry.index import index_dir, load_registry
from metalport.registry.model import Entry, Registry

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


def validate_registry(yaml_path: Path | str, tags_path: Path | str, *, cache_dir: Path | None = None) -> Registry:
    """Parse `yaml_path` ourselves, run our checks, then torchgen on a fresh temp copy.

    torchgen's verdict is kept per (registry, tags, torchgen) content, next to the registry index
    (Note [registry index]): the same edited file is handed to torchgen once, and any change to
    the text parses it again. A rejection is never kept.
    """
    registry = load_registry(yaml_path, cache_dir=cache_dir)
    check_registry(registry)
    tags_text = Path(tags_path).read_bytes()
    accepted = (cache_dir or index_dir()) / f"{_torchgen_key(registry.text, tags_text)}.torchgen-ok"
    if accepted.is_file():
        return registry
    import torchgen.gen

    with tempfile.TemporaryDirectory(prefix="metalport-validate-") as tmp:
        copy = Path(tmp) / "native_functions.yaml"
        tags = Path(tmp) / "tags.yaml"
        shutil.copyfile(yaml_path, copy)
        tags.write_bytes(tags_text)
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
    try:
        write_bytes_atomic(accepted, b"")
    except OSError:
        pass  # a read-only cache only costs the next torchgen parse
    return registry


def _torchgen_key(text: str, tags: bytes) -> str:
    """Hash of the registry and tags texts and the installed torchgen's parser sources."""
    h = hashlib.sha256(b"metalport-torchgen-verdict\0")
    spec = importlib.util.find_spec("torchgen")
    root = Path(spec.origin).parent if spec and spec.origin else None
    for name in ("gen.py", "model.py", "native_function_generation.py", "yaml_utils.py"):
        if root is not None and (root / name).is_file():
            h.update(hashlib.sha256((root / name).read_bytes()).digest())
    h.update(hashlib.sha256(text.encode("utf-8")).digest())
    h.update(hashlib.sha256(tags).digest())
    return h.hexdigest()


def _entry_at(registry: Registry, line: int) -> str | None:
    for entry in registry.entries:
        if entry.span.start <= line <= entry.span.end:
            return entry.full_name
    return None


def _entry_named(registry: Registry, message: str) -> Entry | None:
    by_name = {e.full_name: e for e in registry.entries}
    return next((by_name[w] for w in re.findall(r"[\w.]+", message) if w in by_name), None)
