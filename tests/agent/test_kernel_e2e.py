"""End to end with `--model openai:scripted-model` for ops whose port writes its own kernel and that no
spec recipe covers: the reduction `argmin` (a reduction-stub whose MPS row names an MPS-only
kernel the wheel does not ship: the port registers argmin_stub, MPS joins the CPU/CUDA row and that
MPS-only row goes), the custom kernel `channel_shuffle` (missing) and the tensor-list op
`_foreach_sqrt` (missing), on a wheel workspace of the installed registry. The scripted model reads
the tree's kernels of the same kind, answers first with a launch spec that must be refused (one
line naming the field, one more call on the budget), then with a kernel and spec
(tests/agent/kernel_answers.py); the same contract, emulated build and spec conformance judge it (a
wrong channel_shuffle kernel is repaired through the repair loop, a wrong spec through
`respecify`), and the run waits at the gate."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from metalport.agent.openai_provider import KERNEL_TOOLS
from metalport.checkout import init_workspace
from metalport.cli import main
from metalport.graph.runs import RunOptions, run_dir, start_run
from tests.agent.kernel_answers import (ARGMIN_BAD_SPEC, ARGMIN_BAD_STUB, ARGMIN_KERNEL, ARGMIN_SPEC, SHUFFLE_BAD_SPEC,
                                        SHUFFLE_FIX, SHUFFLE_KERNEL, SHUFFLE_SPEC, SHUFFLE_STRIDES_SPEC, SQRT_KERNEL,
                                        SQRT_SPEC)
from tests.llm_server import ScriptedLLM, json_reply, tool_reply

SECRETS = {"OPENAI_API_KEY": "sk-kernel-e2e-key-0123456789", "VAULT_PASS": "vault-kernel-e2e-13579"}
NATIVE = "aten/src/ATen/native/native_functions.yaml"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return init_workspace(tmp_path / "workspace").root


def _options(tmp_path: Path, server: ScriptedLLM) -> RunOptions:
    config = tmp_path / "metalport.yaml"
    config.write_text(f"provider:\n  model: ignored\n  base_url: {server.base_url}\n  timeout_s: 30\n"
                      "secret_env: [VAULT_PASS]\n")
    return RunOptions(model="openai:scripted-model", executor="emulated", config_path=str(config))


def _answer(spec: str, kernel: str) -> dict:
    return json_reply({"spec_yaml": spec, "kernel_source": kernel, "summary": "one launch from the spec"})


def _tool_results(request: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def _run(workspace: Path, tmp_path: Path, op: str, script: list[dict]) -> tuple:
    with ScriptedLLM(script) as server:
        record = start_run(workspace, f"aten::{op}", _options(tmp_path, server))
    return record, server


def _assert_at_the_gate(record, server: ScriptedLLM, workspace: Path, *refusals: str, attempts: int = 1,
                        calls: int = 4) -> None:
    assert (record.status, record.attempts) == ("awaiting-review", attempts), record.reason
    assert record.verdicts["check"]["ok"] and record.verdicts["build"]["ok"] and record.verdicts["test"]["ok"], \
        record.verdicts
    # Each bad spec went back as one line naming the field, and cost one more call on the budget.
    writes = 3 + len(refusals)
    for n, refusal in enumerate(refusals, start=3):
        assert server.requests[n]["messages"][-1] == {"role": "user", "content": refusal}
    assert record.usage["calls"] == len(server.requests) == calls
    # Writing a kernel only reads: nothing offered edits, runs a command, commits or approves.
    assert all({t["function"]["name"] for t in r["tools"]} == KERNEL_TOOLS for r in server.requests[:writes])
    sent = server.prompt_text()
    for value in SECRETS.values():
        assert value not in sent
        assert value not in (run_dir(workspace, record.run_id) / "transcript.jsonl").read_text()
    head = subprocess.run(["git", "rev-parse", "HEAD", record.branch], cwd=workspace, capture_output=True,
                          text=True, check=True).stdout.split()
    assert head[0] == head[1]  # nothing committed before approval


def test_a_reduction_outside_the_table_gets_its_kernel_and_spec_from_the_model(
        workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = [tool_reply(("show_op", {"op": "aten::argmin"}), ("show_kernels", {"kind": "reduction-stub"})),
              tool_reply(("show_kernels", {"kind": "reduction-stub", "op": "linalg__powsum"})),
              _answer(ARGMIN_BAD_SPEC, ARGMIN_KERNEL),
              _answer(ARGMIN_BAD_STUB, ARGMIN_KERNEL),  # the stub's parameters are not the header's
              _answer(ARGMIN_SPEC, ARGMIN_KERNEL)]
    record, server = _run(workspace, tmp_path, "argmin", script)
    _assert_at_the_gate(record, server, workspace, "your KernelAnswer is refused: spec argmin: "
                        "geometry.threadgroup: 2048 threads is over the limit of 1024; Apple GPUs run at most "
                        "1024 threads per threadgroup",
                        "your KernelAnswer is refused: spec argmin: stub.params: argmin_stub takes (TensorIterator &); "
                        "the spec gives (TensorIterator&, const Scalar& ord)",
                        calls=5)
    listed = _tool_results(server.requests[1])[-1]
    assert "linalg__powsum" in {r["op"] for r in listed["recipes"]}
    shown = _tool_results(server.requests[2])[-1]
    assert "stub: {name: powsum_stub, header: ATen/native/ReduceOps.h" in shown["spec_yaml"]
    assert "kernel void powsum" in shown["kernel_source"]
    tree = Path(record.worktree)
    registry = (tree / NATIVE).read_text()
    assert "    CPU, CUDA, MPS: argmin_out\n" in registry and "MPS: argmin_out_mps" not in registry
    assert 'host_name("argmin_" #T "_long")' in (tree / "aten/src/ATen/native/mps/kernels/ArgMin.metal").read_text()
    host = (tree / "aten/src/ATen/native/mps/operations/ArgMin.mm").read_text()
    assert "static void argmin_kernel_mps(TensorIterator& iter) {" in host
    assert "REGISTER_DISPATCH(argmin_stub, &argmin_kernel_mps)" in host
    # The reviewer reads the model's launch spec at the gate, as for a recipe.
    assert main(["review", "show", record.run_id, "--repo", str(workspace)]) == 0
    shown = capsys.readouterr().out
    assert "launch spec:" in shown and "grid: per-output-element" in shown and "check: passed" in shown


def test_a_custom_kernel_outside_the_table_gets_its_kernel_and_spec_from_the_model_and_repairs_it(
        workspace: Path, tmp_path: Path) -> None:
    kernel_file = "aten/src/ATen/native/mps/kernels/ChannelShuffle.metal"
    broken = SHUFFLE_KERNEL.replace(SHUFFLE_FIX, "const long c_in = c_out;")
    script = [tool_reply(("show_kernels", {"kind": "custom-kernel"})),
              tool_reply(("show_kernels", {"kind": "custom-kernel", "op": "take"})),
              _answer(SHUFFLE_BAD_SPEC, broken), _answer(SHUFFLE_SPEC, broken),
              # conformance fails; the repair loop hands the failure back with the kernel file editable
              tool_reply(("propose_edit", {"path": kernel_file, "search": "const long c_in = c_out;",
                                           "replace": SHUFFLE_FIX})),
              tool_reply(("check", {})), tool_reply(("finish", {"summary": "gather from the shuffled channel"}))]
    record, server = _run(workspace, tmp_path, "channel_shuffle", script)
    _assert_at_the_gate(record, server, workspace, "your KernelAnswer is refused: spec channel_shuffle: "
                        "params[0].from: 'group' is neither an argument of channel_shuffle nor one of "
                        "reduce_size, num_slices, numel, output_numel, ndim, sizes, strides", attempts=2, calls=7)
    assert "failed at the test stage" in server.requests[4]["messages"][1]["content"]
    assert kernel_file in server.requests[4]["messages"][1]["content"]  # the allow-list names the kernel
    assert _tool_results(server.requests[5])[-1]["ok"] and _tool_results(server.requests[6])[-1]["ok"]
    tree = Path(record.worktree)
    assert SHUFFLE_FIX in (tree / kernel_file).read_text()
    assert "MPS: channel_shuffle_mps" in (tree / NATIVE).read_text()
    assert "channel_shuffle_mps(" in (tree / "aten/src/ATen/native/mps/operations/ChannelShuffle.mm").read_text()


def test_a_wrong_model_spec_is_repaired_by_respecifying_it(workspace: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    host_file = "aten/src/ATen/native/mps/operations/ChannelShuffle.mm"
    script = [tool_reply(("show_kernels", {"kind": "custom-kernel"})),
              tool_reply(("show_kernels", {"kind": "custom-kernel", "op": "take"})),
              _answer(SHUFFLE_STRIDES_SPEC, SHUFFLE_KERNEL),
              # conformance fails; the repair replaces the spec (a kernel edit cannot fix it)
              tool_reply(("respecify", {"spec_yaml": SHUFFLE_STRIDES_SPEC.replace("type: long}\ngeometry", "type: longer}\ngeometry"),
                                        "kernel_source": SHUFFLE_KERNEL})),
              tool_reply(("respecify", {"spec_yaml": SHUFFLE_SPEC, "kernel_source": SHUFFLE_KERNEL})),
              tool_reply(("check", {})), tool_reply(("finish", {"summary": "sizes, not strides"}))]
    record, server = _run(workspace, tmp_path, "channel_shuffle", script)
    _assert_at_the_gate(record, server, workspace, attempts=2, calls=7)
    assert "failed at the test stage" in server.requests[3]["messages"][1]["content"]
    assert "respecify" in {t["function"]["name"] for t in server.requests[3]["tools"]}
    refused, accepted = _tool_results(server.requests[4])[-1], _tool_results(server.requests[5])[-1]
    assert refused == {"ok": False, "error": "spec channel_shuffle: params[2].type: 'longer' is not one of "
                                             "float, int, uint, long, ulong, bool"}
    assert accepted["ok"] and "re-applied" in accepted["note"]
    # The run goes on with the repaired spec: the reviewer reads it, and the host code follows it.
    assert main(["review", "show", record.run_id, "--repo", str(workspace)]) == 0
    shown = capsys.readouterr().out
    assert "{from: sizes, name: sizes, type: long}" in shown and "from: strides" not in shown
    host = (Path(record.worktree) / host_file).read_text()
    assert ".size(d)" in host and ".stride(d)" not in host


def test_a_tensor_list_op_outside_the_table_gets_one_launch_over_the_list_from_the_model(
        workspace: Path, tmp_path: Path) -> None:
    script = [tool_reply(("show_kernels", {"kind": "multi-tensor"})),
              tool_reply(("show_kernels", {"kind": "multi-tensor", "op": "_foreach_exp"})),
              _answer(SQRT_SPEC.replace("threadgroup: 128", "threadgroup: 4096"), SQRT_KERNEL),
              _answer(SQRT_SPEC, SQRT_KERNEL)]
    record, server = _run(workspace, tmp_path, "_foreach_sqrt", script)
    _assert_at_the_gate(record, server, workspace, "your KernelAnswer is refused: spec _foreach_sqrt: "
                        "geometry.threadgroup: 4096 threads is over the limit of 1024; Apple GPUs run at most "
                        "1024 threads per threadgroup")
    report = record.verdicts["test"]["report"]
    assert (report["status"], report["skipped"]) == ("pass", 0)
    assert [d["dtype"] for d in report["dtypes"]] == ["float32", "float16"]
    assert all(d[kind]["samples"] > 0 for d in report["dtypes"] for kind in ("opinfo", "random", "held_out"))
    tree = Path(record.worktree)
    registry = (tree / NATIVE).read_text()
    assert "MPS: foreach_tensor_sqrt_mps\n" in registry and "MPS: foreach_tensor_sqrt_mps_\n" in registry
    host = (tree / "aten/src/ATen/native/mps/operations/ForeachSqrt.mm").read_text()
    assert "return at::native::foreach_tensor_sqrt_slow(self);" in host  # mixed lists keep the slow path
    assert "dispatchThreads:MTLSizeMake(128, chunks.size() / 2, 1)" in host
