"""Prompt templates (`*.j2`) and their one renderer."""

from metalport.prompts.render import PROMPT_NAMES, render_prompt

__all__ = ["PROMPT_NAMES", "render_prompt"]
