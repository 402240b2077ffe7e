"""The pipeline side of the host check, without compiling: which `.mm` a port touches, the one
line a base file that does not type-check gets, and host errors reaching the repair request."""

from __future__ import annotations

from pathlib import Path

from metalport.emulate.diagnostics import Diagnostic
from metalport.hostcheck import HostCheck
from metalport.hostcheck.port import PortHostCheck, gap_line, touched_files

OPS = "aten/src/ATen/native/mps/operations"
REG = "aten/src/ATen/native/native_functions.yaml"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_touched_files_are_the_changed_added_and_those_defining_a_dropped_kernel(tmp_path: Path) -> None:
    common = {f"{OPS}/Same.mm": "x", f"{OPS}/Old.mm": "TORCH_IMPL_FUNC(foo_out_mps) {}", f"{OPS}/Edit.mm": "a"}
    base = _tree(tmp_path / "b", {**common, REG: "  dispatch:\n    MPS: foo_out_mps\n"})
    work = _tree(tmp_path / "w", {**common, f"{OPS}/Edit.mm": "b", f"{OPS}/New.mm": "n",
                                  REG: "  dispatch:\n    CPU, CUDA, MPS: foo_out\n"})
    assert touched_files(base, work) == [f"{OPS}/Edit.mm", f"{OPS}/New.mm", f"{OPS}/Old.mm"]


def test_a_base_that_does_not_type_check_gets_one_line_naming_what_is_missing() -> None:
    def line(message: str) -> str:
        return gap_line(HostCheck("x.mm", False, (Diagnostic("x.mm", 7, 3, "error", message),)))

    gap = line("instance method '-fooWithTensor:name:' not found (return type defaults to 'id')")
    assert gap.startswith("shim gap:") and "-fooWithTensor:name:" in gap and "x.mm:7" in gap
    assert line("unknown type name 'MPSGraphFancyDescriptor'").startswith("shim gap:")
    mismatch = line("no member named 'MACOS_15_0' in 'at::mps::MacOSVersion'")
    assert mismatch.startswith("base mismatch:") and "MACOS_15_0" in mismatch
    assert all("\n" not in text for text in (gap, mismatch))


def test_host_errors_reach_the_repair_request_and_the_evidence() -> None:
    from metalport.graph.nodes.edit import _fix_request
    from metalport.port.plan.planner import PortPlan

    failing = HostCheck("k.mm", False, (Diagnostic("k.mm", 12, 5, "error", "no matching function for call to 'f'"),
                                        Diagnostic("k.h", 3, 1, "note", "candidate function not viable")))
    result = PortHostCheck(checked=(failing,), failures=tuple(failing.failures()), files=("k.mm",))
    verdict = result.verdict()
    assert verdict["ok"] is False and verdict["first"].startswith("k.mm:12:5: host-compile-error")
    assert "candidate function not viable" in result.failures[0].message  # the note travels with its error
    state = {"op": "aten::x", "failures": [f.to_dict() for f in result.failures], "failure_stage": "hostcheck",
             "options": {}}
    port = PortPlan.from_dict({"op": "x", "status": "mps-graph", "family": "unary", "rows": [], "kernel_file": None,
                               "functor": "x_functor", "functor_source": "struct x_functor {};", "dtypes": [], "registrations": [],
                               "host_file": "k.mm", "register_dispatch": None, "kernel_name": None, "legacy": None,
                               "legacy_include": None, "xfail_keys": [], "allowed_paths": ["k.mm"],
                               "needs_llm": False, "migrate": True, "launch_kind": "elementwise"})
    request = _fix_request(state, port, rejected=False)
    assert request.failure_stage == "hostcheck"
    assert request.diagnostics[0]["kind"] == "host-compile-error" and request.diagnostics[0]["line"] == 12


def test_hostcheck_command_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from metalport.cli import main

    assert main(["hostcheck", str(tmp_path / "missing.mm")]) == 2
    lone = tmp_path / "lone.mm"
    lone.write_text("int x;\n")
    assert main(["hostcheck", str(lone)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no such file" in err[0] and "no PyTorch checkout above this file" in err[1]
