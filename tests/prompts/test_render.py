"""Every prompt template renders, and an undefined variable is an error."""

from __future__ import annotations

import pytest

from metalport.errors import MetalportError
from metalport.prompts import PROMPT_NAMES, render_prompt

VARIABLES = {
    "system": {},
    "plan": {"op": "heaviside", "family": "binary", "rows": ["heaviside.out: MPS: heaviside_out_mps"],
             "current_impl": "MPSGraph", "dtypes": ["float", "half"]},
    "write_functor": {"op": "heaviside", "family": "binary", "dtypes": ["float"], "plan_summary": "p",
                      "kernel_file": "BinaryKernel.metal", "functor_name": "heaviside_functor",
                      "feedback": "use half", "diagnostics": [{"file": "K.metal", "line": 3, "message": "bad"}],
                      "omitted": 0, "example": "struct copysign_functor {};\nREGISTER_BINARY_OP(copysign, float, float);",
                      "macro": "REGISTER_BINARY_OP", "helpers": [("c10/metal/utils.h", ("cast_to", "hypot"))]},
    "write_kernel": {"op": "_aminmax", "kind": "custom-kernel", "kind_reason": "no shared kernel",
                     "schemas": [("_aminmax.dim", "_aminmax.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)")],
                     "plan_summary": "p", "feedback": "", "diagnostics": [{"file": "K.metal", "line": 3, "message": "bad"}],
                     "omitted": 1},
    "fix_failure": {"op": "heaviside", "failure_stage": "check", "plan_summary": "",
                    "diagnostics": [{"file": "K.metal", "line": 3, "message": "bad"}], "allowed_paths": ["K.metal"],
                    "omitted": 2},
    "correction": {"kind": "invalid", "schema": "FunctorAnswer", "detail": "Field required at summary",
                   "fields": ["functor_source", "summary"]},
    "pr_description": {"op": "heaviside", "plan_summary": "p", "diff_stat": "2 files", "verdicts": ["ok"],
                       "usage": {"calls": 2}},
}


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_every_template_renders(name: str) -> None:
    text = render_prompt(name, **VARIABLES[name])
    assert text.strip() and "{{" not in text and "{%" not in text


@pytest.mark.parametrize("name", [n for n in PROMPT_NAMES if VARIABLES[n]])
def test_each_missing_variable_is_an_error(name: str) -> None:
    for missing in VARIABLES[name]:
        partial = {k: v for k, v in VARIABLES[name].items() if k != missing}
        with pytest.raises(MetalportError, match=f"'{missing}' is undefined"):
            render_prompt(name, **partial)


def test_system_prompt_states_the_workflow() -> None:
    text = render_prompt("system")
    for phrase in ("REGISTER_DISPATCH", "REGISTER_*_OP", "c10/metal", "every overload row", "no MPSGraph",
                   "no CPU fallback", "Xfail removal", "Legacy removal"):
        assert phrase in text


def test_diagnostics_reach_the_fix_prompt() -> None:
    text = render_prompt("fix_failure", **VARIABLES["fix_failure"])
    assert "- K.metal:3: bad\n(+2 more of the same kinds; fix these first)\n" in text


def test_unknown_prompt() -> None:
    with pytest.raises(MetalportError, match="unknown prompt 'sytem'"):
        render_prompt("sytem")


def test_structured_failures_render_with_kind_and_column() -> None:
    from metalport.failure import Failure

    failure = Failure("compile-error", "K.metal", 7, 12, "use of undeclared identifier 'x'").to_dict()
    text = render_prompt("fix_failure", **{**VARIABLES["fix_failure"], "diagnostics": [failure]})
    assert "- K.metal:7:12: compile-error: use of undeclared identifier 'x'" in text


@pytest.mark.parametrize(("variables", "text"), [
    ({"kind": "oversized", "size": 5000, "cap": 1000}, "your reply was 5000 chars, over the cap of 1000; be brief"),
    ({"kind": "no_finish"}, "call finish(summary) once check() passes; plain text does not end the attempt"),
    ({"kind": "refused", "schema": "PlanAnswer", "detail": "bad path"}, "your PlanAnswer is refused: bad path"),
])
def test_corrections_are_one_line(variables: dict, text: str) -> None:
    assert render_prompt("correction", **variables) == text


def test_unknown_correction_kind_is_an_error() -> None:
    with pytest.raises(MetalportError, match="'unknown_correction_kind' is undefined"):
        render_prompt("correction", kind="typo")
