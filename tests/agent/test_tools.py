"""ToolBox: path guard, exact edits with "did you mean", size caps, finish refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.agent.helpers import KERNEL, SECRET, make_toolbox, make_tree


def _call(box, name: str, **args: object) -> dict:
    return box.call(name, json.dumps(args))


def test_read_file_numbers_lines_and_bounds_the_range(tmp_path: Path) -> None:
    box, _ = make_toolbox(make_tree(tmp_path))
    result = _call(box, "read_file", path=KERNEL, start=4, end=5)
    assert result == {"ok": True, "path": KERNEL, "start": 4, "end": 5, "total_lines": 11,
                      "text": "4: struct copysign_functor {\n5:   template <typename T>"}


def test_paths_outside_or_via_symlink_or_dotdot_are_refused(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "wt")
    (tmp_path / "outside.txt").write_text("secret stuff\n")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    box, _ = make_toolbox(root)
    assert _call(box, "read_file", path="../outside.txt")["error"].endswith("without '..'")
    assert _call(box, "read_file", path=str(tmp_path / "outside.txt"))["ok"] is False
    assert _call(box, "read_file", path="link.txt")["error"] == "link.txt: symlinks are refused"
    assert _call(box, "read_file", path="nope.txt")["error"] == "nope.txt: no such file"
    box, _ = make_toolbox(root, allowed=(KERNEL, "link.txt", "missing.metal"))
    assert _call(box, "propose_edit", path="link.txt", search="secret", replace="x")["ok"] is False
    assert (tmp_path / "outside.txt").read_text() == "secret stuff\n"
    assert _call(box, "propose_edit", path="missing.metal", search="a", replace="b")["error"] == \
        "missing.metal: no such file"


def test_edit_off_the_allow_list_is_refused_with_the_list(tmp_path: Path) -> None:
    box, _ = make_toolbox(make_tree(tmp_path))
    result = _call(box, "propose_edit", path="README.txt", search="notes", replace="x")
    assert result == {"ok": False, "error": "README.txt: not on the plan's allow-list", "allowed": [KERNEL]}
    assert (tmp_path / "README.txt").read_text() == "notes\n"


def test_edit_miss_quotes_the_nearest_match(tmp_path: Path) -> None:
    box, _ = make_toolbox(make_tree(tmp_path))
    result = _call(box, "propose_edit", path=KERNEL, search="    return metal::copysign(a, b);",
                   replace="    return a;")
    assert result["error"] == f"{KERNEL}: search text not found"
    assert result["did_you_mean"] == "    return ::metal::copysign(a, b);"


def test_ambiguous_edit_is_refused_and_exact_edit_applies(tmp_path: Path) -> None:
    box, _ = make_toolbox(make_tree(tmp_path))
    assert "occurs 3 times" in _call(box, "propose_edit", path=KERNEL, search="copysign", replace="x")["error"]
    assert _call(box, "propose_edit", path=KERNEL, search="(a, b)", replace="(b, a)")["ok"] is True
    assert "copysign(b, a)" in (tmp_path / KERNEL).read_text()


def test_finish_needs_a_passing_check_since_the_last_edit(tmp_path: Path) -> None:
    box, _ = make_toolbox(make_tree(tmp_path))
    assert _call(box, "finish", summary="x")["error"] == "finish refused: check() has not run since the last " \
        "edit; run it first"
    assert _call(box, "check")["ok"] is False
    assert _call(box, "finish", summary="x")["error"] == (
        f"finish refused: the last check() failed ({KERNEL}:7: wrong branch); fix it and run check() again")
    _call(box, "propose_edit", path=KERNEL, search="(a, b);", replace="(a, b); // fixed")
    assert _call(box, "check")["ok"] is True
    _call(box, "propose_edit", path=KERNEL, search="// fixed", replace="// fixed again")
    assert _call(box, "finish", summary="x")["ok"] is False
    _call(box, "check")
    assert _call(box, "finish", summary="done") == {"ok": True, "note": "attempt finished"}
    assert box.finished == "done"


def test_results_are_capped_with_a_note_and_redacted(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    (root / "big.txt").write_text("\n".join(f"line {i} {SECRET}" for i in range(300)))
    box, _ = make_toolbox(root, max_result_chars=500)
    result = _call(box, "read_file", path="big.txt")
    assert result["truncated"] is True and len(result["partial"]) == 500
    assert result["note"].startswith("result cut to 500 of ")
    assert SECRET not in json.dumps(result)


def test_grep_finds_lines_and_rejects_bad_patterns(tmp_path: Path) -> None:
    box, _ = make_toolbox(make_tree(tmp_path))
    assert _call(box, "grep", pattern=r"REGISTER_\w+_OP", glob="**/*.metal")["matches"] == [
        f"{KERNEL}:11: REGISTER_BINARY_OP(copysign, float, float);"]
    assert _call(box, "grep", pattern="(")["error"].startswith("bad regular expression")


def test_tool_specs_offer_no_command_commit_or_approve(tmp_path: Path) -> None:
    box, _ = make_toolbox(make_tree(tmp_path))
    names = {spec["function"]["name"] for spec in box.specs()}
    assert names == {"read_file", "grep", "show_op", "show_examples", "propose_edit", "check",
                     "conformance", "finish"}


def test_grep_stops_after_the_file_bound(tmp_path: Path) -> None:
    from metalport.agent.tools import ToolBox

    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("needle\n")
    box = ToolBox(tmp_path, [], check=dict, conformance=dict, show_op=lambda o: {}, show_examples=lambda f: {},
                  max_grep_files=3)
    result = _call(box, "grep", pattern="needle", glob="*.txt")
    assert result["matches"] == ["f0.txt:1: needle", "f1.txt:1: needle", "f2.txt:1: needle"]
    assert result["note"] == "stopped after 3 files; use a narrower glob"


def test_check_failures_become_structured_diagnostics(tmp_path: Path) -> None:
    from metalport.agent.tools import ToolBox
    from metalport.failure import Failure

    failures = [Failure("compile-error", KERNEL, 7, 12, "use of undeclared identifier 'x'")]
    box = ToolBox(make_tree(tmp_path), [KERNEL], check=lambda: failures, conformance=dict,
                  show_op=lambda o: {}, show_examples=lambda f: {})
    assert _call(box, "check") == {"ok": False, "diagnostics": [
        {"kind": "compile-error", "file": KERNEL, "line": 7, "column": 12,
         "message": "use of undeclared identifier 'x'"}]}
    assert _call(box, "finish", summary="x")["ok"] is False
    failures.clear()
    assert _call(box, "check") == {"ok": True, "diagnostics": []}
    assert _call(box, "finish", summary="x")["ok"] is True


def test_show_kernels_is_offered_only_to_ports_that_write_their_own_kernel(tmp_path: Path) -> None:
    from metalport.agent.tools import ToolBox
    from metalport.graph.toolbox import show_kernels

    plain = ToolBox(tmp_path, [], check=dict, conformance=dict, show_op=lambda o: {}, show_examples=lambda f: {})
    assert "show_kernels" not in plain.names()
    assert _call(plain, "show_kernels", kind="custom-kernel")["error"].startswith("not offered in this step 'show_kernels'")
    box = ToolBox(tmp_path, [], check=dict, conformance=dict, show_op=lambda o: {}, show_examples=lambda f: {},
                  show_kernels=lambda kind, op: show_kernels(tmp_path, kind, op))
    assert "show_kernels" in {s["function"]["name"] for s in box.specs()}
    assert _call(box, "show_kernels", kind="reduction")["error"] == "unknown kind 'reduction'"
    assert _call(box, "show_kernels", kind="custom-kernel", op="modes")["error"] == "no spec recipe for 'modes'"
    listed = _call(box, "show_kernels", kind="custom-kernel")
    assert listed["ok"] and {"mode", "take"} <= {r["op"] for r in listed["recipes"]} and listed["kernel_files"] == []
    shown = _call(box, "show_kernels", kind="custom-kernel", op="aten::take")
    assert shown["op"] == "take" and "grid: per-output-element" in shown["spec_yaml"]
