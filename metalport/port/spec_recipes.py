"""The spec recipe table: our own kernels for reductions and custom-kernel ops, with their launch
specs.

A recipe is two files in `metalport/port/specs/`: `<op>.yaml` (a LaunchSpec, see `spec.py`) and
`<op>.metal` (the kernel source with its instantiations, without includes; the port adds it to
the spec's kernel file). Adding a recipe = adding the two files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from metalport.errors import SpecError
from metalport.port.functors import recipe_table
from metalport.port.spec import LaunchSpec, load_spec

SPECS_DIR = Path(__file__).resolve().parent / "specs"


@dataclass(frozen=True)
class SpecRecipe:
    """One table entry: the launch spec, the kernel source, and where they were read from."""

    spec: LaunchSpec
    kernel_source: str
    path: Path  # the .yaml file

    def __post_init__(self) -> None:
        missing = [h for h in self.spec.host_names if not _instantiates(self.kernel_source, self.spec.kernel_name, h)]
        if missing:
            raise SpecError(f"spec {self.spec.op}: dtypes: {self.path.with_suffix('.metal').name} has no kernel "
                            f"instantiation named {missing[0]!r}",
                            hint="register every dtypes row with [[host_name(...)]]")


def _instantiates(source: str, kernel: str, host_name: str) -> bool:
    """Whether `source` instantiates `host_name`: literally, or through a `REGISTER_*(T, ...)` macro
    whose host name is built as `"<kernel>_" #T ...` from the invocation's arguments."""
    if f'"{host_name}"' in source:
        return True
    for macro in re.finditer(r"#define\s+(\w+)\(([^)]*)\)((?:.*\\\n)*.*)", source):
        name, params, body = macro.group(1), [p.strip() for p in macro.group(2).split(",")], macro.group(3)
        found = re.search(r'host_name\(((?:\s*"[^"]*"|\s*#\w+)+)\s*\)', body)
        if not found:
            continue
        for call in re.finditer(rf"^\s*{name}\(([^)]*)\)", source, re.MULTILINE):
            values = dict(zip(params, (a.strip() for a in call.group(1).split(","))))
            built = "".join(values.get(t[1:], "") if t.startswith("#") else t.strip('"')
                            for t in re.findall(r'"[^"]*"|#\w+', found.group(1)))
            if built == host_name:
                return True
    return False


def spec_recipes(directory: Path = SPECS_DIR) -> dict[str, SpecRecipe]:
    """Every recipe in `directory`, by op name; SpecError for a malformed one (naming its file)."""
    out: dict[str, SpecRecipe] = {}
    for path in sorted(directory.glob("*.yaml")):
        kernel = path.with_suffix(".metal")
        if not kernel.is_file():
            raise SpecError(f"spec {path.stem}: {kernel.name} is missing", location=str(path),
                            hint="a recipe is <op>.yaml plus <op>.metal")
        try:
            spec = load_spec(path.read_text(encoding="utf-8"))
        except SpecError as err:
            raise SpecError(err.message, location=str(path), hint=err.hint) from None
        out[spec.op] = SpecRecipe(spec, kernel.read_text(encoding="utf-8"), path)
    return out


__all__ = ["SPECS_DIR", "SpecRecipe", "spec_recipes"]


def recipe_ops() -> frozenset[str]:
    """The ops a recipe covers: the pointwise functor table and the spec recipe table."""
    return frozenset(recipe_table()) | frozenset(spec_recipes())
