"""What a small model needs in the prompt instead of finding it with tools: the tree's own sibling
functor with its registration lines as a worked example, and the exact `c10/metal` helpers there are.

Both are read from the checkout (its `c10/metal` headers when it has them, else the installed torch
wheel's), so the prompt shows this tree's style and this tree's helper names, never a guess.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path

MACROS = {"unary": "REGISTER_UNARY_OP", "binary": "REGISTER_BINARY_OP", "alpha": "REGISTER_BINARY_ALPHA_OP",
          "ternary": "REGISTER_TERNARY_OP", "halves": "REGISTER_HALVES_BACKWARD_OP"}
HELPER_HEADERS = ("utils.h", "special_math.h")
_DECL = re.compile(r"^(?:(?:inline|static|constexpr|constant)\s+)*[A-Za-z_][\w:<>, ]*?[\s*&]([a-z]\w*)\s*\(", re.M)
_NOT_NAMES = frozenset({"if", "for", "while", "return", "sizeof", "static_assert", "operator"})


def sibling_example(kernel_text: str, family: str, exclude: str = "", max_lines: int = 30) -> str:
    """A functor of `kernel_text` registered with the family's macro, with its registration lines:
    preferring one registered float -> float, then the most dtypes, then the shortest (at most
    `max_lines` lines); "" when none."""
    macro = MACROS.get(family)
    if macro is None:
        return ""
    best: tuple[bool, int, int, str] | None = None
    for name in dict.fromkeys(re.findall(rf"^{macro}\((\w+)\s*,", kernel_text, re.M)):
        if name == exclude:
            continue
        body = re.search(rf"^struct {name}_functor\b.*?^}};", kernel_text, re.S | re.M)
        regs = re.findall(rf"^{macro}\({name}\s*,.*?\);", kernel_text, re.M)
        if body is None or body.group(0).count("\n") >= max_lines:
            continue
        same_float = any(re.search(r",\s*float\s*,\s*float\s*\)", r) for r in regs)
        key = (not same_float, -min(len(regs), 6), body.group(0).count("\n"), body.group(0) + "\n" + "\n".join(regs))
        if best is None or key[:3] < best[:3]:
            best = key
    return best[3] if best else ""


def _wheel_metal_dir() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return None
    folder = Path(spec.origin).parent / "include" / "c10" / "metal"
    return folder if folder.is_dir() else None


@lru_cache(maxsize=8)
def metal_helpers(folder: Path | None = None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(header, function names) of the `c10/metal` helper headers in `folder` (default: the installed
    torch's), names in the order they are declared; internal `_names` left out."""
    folder = folder or _wheel_metal_dir()
    out = []
    for header in HELPER_HEADERS:
        path = folder / header if folder else None
        if path is None or not path.is_file():
            continue
        names = [n for n in _DECL.findall(path.read_text(encoding="utf-8", errors="replace")) if n not in _NOT_NAMES]
        out.append((f"c10/metal/{header}", tuple(dict.fromkeys(names))))
    return tuple(out)


def helpers_for(root: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The helpers of the checkout at `root` (its own `c10/metal`), else those of the torch wheel."""
    own = root / "c10" / "metal"
    return metal_helpers(own if (own / "utils.h").is_file() else None)
