"""xfail/skip entry removal: on the wheel's real common_mps.py and on texts of our own."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
import torch

from metalport.checkout.sources import Where, XfailEntry
from metalport.port.write.xfail import find_xfails, remove_xfails
from metalport.errors import RecipeError

COMMON_MPS = Path(torch.__file__).parent / "testing" / "_internal" / "common_mps.py"

OURS = '''def modifiers():
    SUPPORTED = {"wobble": None}
    ALPHA_XFAILLIST: dict[str, list | None] = {
        # wobble is not there yet
        "wobble": None,
        "jiggle": [
            torch.float16,
        ],  # half only
        "keep": None,
    }
    BETA_SKIPLIST = ["keep", "other"]
    return SUPPORTED, ALPHA_XFAILLIST, BETA_SKIPLIST
'''


def test_real_common_mps_loses_only_heaviside_line() -> None:
    text = COMMON_MPS.read_text(encoding="utf-8")
    result = remove_xfails(text, ["heaviside"])
    assert [(e.list_name, e.op) for e in result.removed] == [("UNIMPLEMENTED_XFAILLIST", "heaviside")]
    line = result.removed[0].where.line
    diff = [d for d in difflib.ndiff(text.split("\n"), result.text.split("\n")) if d[:1] in "+-"]
    assert diff == ['-             "heaviside": None,']  # ndiff prefixes "- "
    assert text.split("\n")[line - 1] == '            "heaviside": None,'


def test_multi_line_entries_and_lists_are_removed_whole() -> None:
    result = remove_xfails(OURS, ["jiggle"])
    assert result.removed == (XfailEntry("ALPHA_XFAILLIST", "jiggle", None, Where("common_mps.py", 6), 8),)
    assert result.text == OURS.replace('        "jiggle": [\n            torch.float16,\n        ],  # half only\n', "")
    assert 'BETA_SKIPLIST = ["keep", "other"]' in result.text


def test_entry_sharing_a_line_is_a_structured_failure() -> None:
    with pytest.raises(RecipeError) as err:
        find_xfails(OURS, ["keep"], path="common_mps.py")
    assert str(err.value) == ("common_mps.py:11: entry 'keep' of BETA_SKIPLIST shares its line with "
                              "another; put the entry on its own line, then rerun")


def test_lists_not_named_like_xfail_lists_are_left_alone() -> None:
    result = remove_xfails(OURS, ["wobble"])
    assert [e.list_name for e in result.removed] == ["ALPHA_XFAILLIST"]
    assert 'SUPPORTED = {"wobble": None}' in result.text
    assert remove_xfails(OURS, ["absent"]).text == OURS
