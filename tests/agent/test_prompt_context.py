"""The functor prompt carries the tree's own sibling functor, its registrations and the c10/metal helpers."""

from __future__ import annotations

from pathlib import Path

from metalport.agent.context import helpers_for, metal_helpers, sibling_example
from tests.agent.helpers import KERNEL, make_provider, make_toolbox, make_tree
from tests.agent.test_real_servers import ANSWER, REQUEST
from tests.llm_server import ScriptedLLM, json_reply


def test_the_sibling_example_is_a_float_functor_of_the_family_with_its_registrations(real_tree_workspace) -> None:
    text = (real_tree_workspace.root / "aten/src/ATen/native/mps/kernels/UnaryKernel.metal").read_text()
    example = sibling_example(text, "unary", exclude="neg")
    name = example.split()[1].removesuffix("_functor")
    assert example.startswith("struct ") and f"REGISTER_UNARY_OP({name}, float, float);" in example
    assert "neg_functor" not in example and sibling_example(text, "no-such-family") == ""


def test_helpers_are_the_wheels_c10_metal_functions() -> None:
    helpers = dict(metal_helpers())
    assert {"cast_to", "hypot"} <= set(helpers["c10/metal/utils.h"])
    assert {"erf", "digamma", "xlogy"} <= set(helpers["c10/metal/special_math.h"])
    assert not any(n.startswith("_") for names in helpers.values() for n in names)


def test_the_functor_prompt_shows_example_helpers_and_rules(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "wt")
    box, _ = make_toolbox(root)
    with ScriptedLLM([json_reply(ANSWER)]) as server:
        make_provider(server.base_url, tmp_path).write_functor(REQUEST, box)
    prompt = server.requests[0]["messages"][1]["content"]
    assert "struct copysign_functor {" in prompt and "REGISTER_BINARY_OP(copysign, float, float);" in prompt
    assert "c10/metal/special_math.h: erf, erfc" in prompt and "do not write them" in prompt
    assert helpers_for(root) == metal_helpers()
