"""The parts of a PR that follow PyTorch's conventions, whoever wrote the body: the Test Plan with
the exact test_mps.py commands, the labels, the emulation note and the new files with their reason.

Rendered from `templates/pr_conventions.md.j2` (strict: no undefined variable) and appended to the
body, so a model-written description cannot drop them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2

PR_LABELS: tuple[str, ...] = ("ciflow/mps", "release notes: mps")
_TEMPLATES = Path(__file__).parent / "templates"


def test_commands(plan: Mapping) -> list[str]:
    """`python test/test_mps.py -k ...` for the op's OpInfo consistency tests (output and grad)."""
    op = str(plan.get("op"))
    if op.endswith("_backward"):  # runs in its forward OpInfo's gradient test
        return [f"python test/test_mps.py -k test_output_grad_match_{op.removesuffix('_backward')}"]
    keys = list(plan.get("xfail_keys") or ()) or [op]
    names = [k.replace(".", "_") for k in dict.fromkeys(keys)]
    out = [f"python test/test_mps.py -k test_output_match_{n}" for n in names]
    out += [f"python test/test_mps.py -k test_output_grad_match_{n}" for n in names]
    return out


def new_file_reasons(plan: Mapping, added: Sequence[str]) -> list[tuple[str, str]]:
    """(path, why it is new) for each file the port adds."""
    family = plan.get("host_family") or plan.get("family") or "its"
    why = {plan.get("kernel_file"): f"no kernel file of the tree holds {family} functors yet",
           plan.get("host_file"): f"no host file of the tree runs {family} kernels yet"}
    return [(path, why.get(path, "added by the port")) for path in added]


def conventions_section(plan: Mapping, executors: Sequence[str], added: Sequence[str]) -> str:
    """The Test Plan, emulation note, new files and labels of the PR body, as Markdown."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(_TEMPLATES)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False)
    return env.get_template("pr_conventions.md.j2").render(
        test_commands=test_commands(plan), emulation_only="macos" not in executors,
        new_files=new_file_reasons(plan, added), labels=PR_LABELS).strip() + "\n"
