"""The spec recipe table: our own kernels for reductions and custom-kernel ops, with their launch
specs.

A recipe is two files in `metalport/port/spec/recipe_files/`: `<op>.yaml` (a LaunchSpec, see `spec.py`) and
`<op>.metal` (the kernel source with its instantiations, without includes; the port adds it to
the spec's kernel file). Adding a recipe = adding the two files. A model's launch spec and kernel
become a recipe too (`model_spec_recipe`), once checked as the untrusted data they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from metalport.checkout.layout import KERNELS_DIR, OPERATIONS_DIR
from metalport.errors import SpecError
from metalport.port.plan.functors import recipe_table
from metalport.port.spec.model import LaunchSpec, load_spec
from metalport.port.spec.schema import check_schema

SPECS_DIR = Path(__file__).resolve().parent / "recipe_files"


@dataclass(frozen=True)
class SpecRecipe:
    """One table entry: the launch spec, the kernel source, and where they were read from."""

    spec: LaunchSpec
    kernel_source: str
    path: Path  # the .yaml file

    def __post_init__(self) -> None:
        missing = [h for h in self.spec.host_names if not instantiates(self.kernel_source, self.spec.kernel_name, h)]
        if missing:
            raise SpecError(f"spec {self.spec.op}: dtypes: {self.path.with_suffix('.metal').name} has no kernel "
                            f"instantiation named {missing[0]!r}",
                            hint="register every dtypes row with [[host_name(...)]]")


def instantiates(source: str, kernel: str, host_name: str) -> bool:
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


def recipe_ops() -> frozenset[str]:
    """The ops a recipe covers: the pointwise functor table and the spec recipe table."""
    return frozenset(recipe_table()) | frozenset(spec_recipes())


_INCLUDE = re.compile(r"^\s*#\s*include\s*[<\"]([^>\"]*)[>\"]", re.MULTILINE)
_SOURCE_NAME = "<model>"


def model_spec_recipe(op: str, schemas: Mapping[str, str], spec_text: str, kernel_source: str) -> SpecRecipe:
    """A recipe from a model's launch spec (YAML) and kernel source, checked before anything uses
    them (Note [model specs]); SpecError, one line naming the field, for the first problem.

    `schemas` maps each registry entry of `op` (`_aminmax.dim`) to its `func:` schema.

    Note [model specs]: a model's spec is untrusted data. Besides `load_spec` and `check_schema`
    (against the entry the spec names), it must be about the run's op, keep its kernel and host
    files under the MPS kernels/ and operations/ folders (they join the plan's allow-list), and
    its kernel may include only c10/metal headers (the port adds metal_stdlib); every dtypes row
    must be instantiated, as for a recipe of the table, and the host writer must be able to write
    its launch (`hostgen.host_file_text`).
    """
    spec = load_spec(spec_text)
    if spec.op != op:
        raise SpecError(f"spec {spec.op}: op: this port is about {op}, not {spec.op}")
    full = f"{op}.{spec.overload}" if spec.overload else op
    if full not in schemas:
        raise SpecError(f"spec {op}: overload: native_functions.yaml has no entry {full}",
                        hint=f"entries: {', '.join(schemas)}")
    check_schema(spec, schemas[full])
    for name, path, folder, ext in (("kernel.file", spec.kernel_file, KERNELS_DIR, ".metal"),
                                    ("host.file", spec.host_file, OPERATIONS_DIR, ".mm")):
        parts = path.split("/")
        if ".." in parts or not path.startswith(folder + "/") or len(parts) != folder.count("/") + 2 \
                or not path.endswith(ext):
            raise SpecError(f"spec {op}: {name}: {path!r} must be a {ext} file directly under {folder}/")
    # Note [unset outputs] leaves NaN elements of torch's result out of the comparison: ours to
    # grant for an op whose CPU kernel leaves memory unset (a recipe, reviewed), never the model's.
    loose = next((i for i, o in enumerate(spec.outputs) if o.compare is not None), None)
    if loose is not None:
        raise SpecError(f"spec {op}: outputs[{loose}].compare: a model's spec compares every output element",
                        hint="drop `compare`; write every element the op defines")
    bad = next((m for m in _INCLUDE.finditer(kernel_source) if not m.group(1).startswith("c10/metal/")), None)
    if bad is not None:
        line = kernel_source.count("\n", 0, bad.start()) + 1
        raise SpecError(f"spec {op}: kernel_source: line {line}: #include <{bad.group(1)}> is not allowed",
                        hint="include only c10/metal headers; the port adds metal_stdlib")
    if f"kernel void {spec.kernel_name}" not in re.sub(r"\s+", " ", kernel_source):
        raise SpecError(f"spec {op}: kernel.name: kernel_source defines no `kernel void {spec.kernel_name}`")
    from metalport.port.write.hostgen import host_file_text

    host_file_text(spec, schemas[full], None)  # a launch the host writer cannot write is refused here too
    return SpecRecipe(spec, kernel_source, Path(f"{_SOURCE_NAME}/{op}.yaml"))


__all__ = ["SPECS_DIR", "SpecRecipe", "model_spec_recipe", "recipe_ops", "spec_recipes"]
