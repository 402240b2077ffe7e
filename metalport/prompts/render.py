"""Render the prompt templates of this folder, strictly (an undefined variable is an error)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from metalport.errors import MetalportError

PROMPT_DIR = Path(__file__).parent
PROMPT_NAMES = ("system", "plan", "write_functor", "write_kernel", "fix_failure", "pr_description", "correction")


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(PROMPT_DIR)),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              autoescape=False)


def render_prompt(name: str, **variables: Any) -> str:
    """The text of prompt `name` (e.g. "write_functor"); raises MetalportError on an unknown name
    or an undefined variable."""
    if name not in PROMPT_NAMES:
        raise MetalportError(f"unknown prompt {name!r}", location=str(PROMPT_DIR),
                             hint=f"use one of {', '.join(PROMPT_NAMES)}")
    try:
        return _environment().get_template(f"{name}.j2").render(**variables)
    except jinja2.UndefinedError as err:
        raise MetalportError(f"prompt {name!r}: {err.message}", location=str(PROMPT_DIR / f"{name}.j2"),
                             hint="pass every variable the template uses") from None
