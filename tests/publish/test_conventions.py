"""PR conventions of issue 20: Fixes #N, family and reuse lines, the benchmark table and script,
and the Agent details disclosure."""

from __future__ import annotations

from metalport.publish.pr import BENCH_METHOD, benchmark_script, conventions_section

PLAN = {"op": "logical_and", "dtypes": ["float", "half", "bool", "int"], "host_family": "binary",
        "reuse": ["reuses c10::metal::cast_to<bool> (c10/metal/utils.h)"],
        "missing": ["legacy `logical_and_out_mps` not found in any scanned .mm file: remove it by hand"]}


def test_body_names_the_issue_the_family_what_is_reused_and_lacking_and_discloses_the_agent() -> None:
    other = {**PLAN, "op": "logical_or", "reuse": PLAN["reuse"], "missing": []}
    body = conventions_section(PLAN, ["emulated"], [], members=[PLAN, other], family=["together because X"],
                               model="openai:gpt-oss-20b", issue=4242)
    assert body.startswith("Fixes #4242\n")
    assert "- together because X" in body
    assert body.count("reuses c10::metal::cast_to<bool>") == 1  # once for the family
    assert "remove it by hand" in body
    assert "python test/test_mps.py -k test_output_match_logical_or" in body
    assert "| logical_or | bool | 4096x4096 | | | |" in body and BENCH_METHOD in body
    agent = body[body.index("## Agent details"):]
    assert "AI_POLICY.md" in agent and "openai:gpt-oss-20b" in agent and "Human review" in agent
    assert "Fixes #" not in conventions_section(PLAN, ["macos"], [])


def test_benchmark_script_runs_each_op_and_dtype_with_the_stated_method() -> None:
    script = benchmark_script([PLAN, {"op": "addcmul", "dtypes": ["float"], "host_family": "ternary_alpha"}])
    compile(script, "bench_mps_port.py", "exec")
    assert "('logical_and', ['float32', 'float16', 'int32', 'bool'], 2)" in script
    assert "('addcmul', ['float32'], 3)" in script
    assert "torch.mps.synchronize()" in script and "statistics.median" in script and "warmup=10" in script
