"""Family ports and stacked runs, end to end (issue 20).

On the real corpus ($METALPORT_REAL_TREE over a wheel workspace): `run-migration aten::logical_and
aten::logical_or aten::logical_xor` is one plan, one worktree, one branch and one patch that reuses
`c10::metal::cast_to<bool>`, registers castout kernels, removes the legacy macro with its last
user and passes conformance for every member; `addcmul` + `addcdiv` (found by `--family`) are one
change that `git am`s on the base. On a wheel workspace, a second run on the same files stacks on
the first and both patches apply in order.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from metalport.errors import PipelineError
from metalport.graph import Approve, RunOptions, resume_run, run_dir, start_run
from metalport.checks.contract.family import check_family
from metalport.port.plan.family import apply_family, family_of, plan_family
from tests.graph.conftest import branches, commits_on, git
from tests.real_tree import overlay_real_tree

KERNEL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
HOST = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
LEGACY = "aten/src/ATen/native/mps/operations/BinaryOps.mm"
LOGICAL = ("logical_and", "logical_or", "logical_xor")


def _identity(root: Path) -> Path:
    git(root, "config", "user.name", "Reviewer")
    git(root, "config", "user.email", "reviewer@localhost")
    return root


def _am(base: Path, patches: list[Path], target: Path) -> None:
    git(target.parent, "clone", "-q", str(base), str(target))
    _identity(target)
    git(target, "am", "-q", *[str(p) for p in patches])


def test_logical_family_is_one_run_one_branch_one_patch_reusing_cast_to_and_castout(
        tmp_path: Path, no_github_token: None) -> None:
    root = _identity(overlay_real_tree(tmp_path / "real", writable=True).root)
    options = RunOptions(executor="emulated", family_ops=["aten::logical_or", "aten::logical_xor"], issue=12345)
    record = start_run(root, "aten::logical_and", options, run_id="logical-1")
    assert record.status == "awaiting-review", record.reason
    assert all(record.verdicts[n]["ok"] for n in ("check", "build", "test"))
    assert record.verdicts["test"]["members"] == {op: "pass" for op in LOGICAL}
    family = json.loads((run_dir(root, "logical-1") / "family.json").read_text())
    assert family["ops"] == list(LOGICAL)
    assert any("CREATE_MPS_BINARY_COMPARISON_OP_FUNC" in r for r in family["reasons"]) or \
        any("is edited by logical_and, logical_or, logical_xor" in r for r in family["reasons"])
    assert [b for b in branches(root) if b.startswith("metalport/")] == ["metalport/logical_and"]
    with pytest.raises(PipelineError, match="run logical-1 ports aten::logical_or in its family change"):
        start_run(root, "aten::logical_or", RunOptions(executor="emulated"), run_id="alone")

    published = resume_run(root, "logical-1", Approve())
    assert published.status == "published", published.reason
    assert commits_on(root, "metalport/logical_and", "HEAD") == [
        "[MPS] Migrate logical_and, logical_or, logical_xor to native Metal"]
    bundle = Path(published.bundle_path)
    patches = sorted((bundle / "patches").glob("*.patch"))
    assert len(patches) == 1
    patch = patches[0].read_text()
    added = "\n".join(line[1:] for line in patch.splitlines() if line.startswith("+"))
    removed = "\n".join(line[1:] for line in patch.splitlines() if line.startswith("-"))
    for op in LOGICAL:
        assert f"struct {op}_functor" in added
        assert f"REGISTER_BINARY_CASTOUT_OP({op}, float, bool);" in added
        assert f"REGISTER_BINARY_CASTOUT_OP({op}, half2, bool);" in added
        assert f'lib.exec_binary_kernel(iter, "{op}", std::nullopt, std::nullopt, kBool);' in added
        assert f"REGISTER_DISPATCH({op}_stub, &{op}_mps_kernel)" in added
    assert added.count("cast_to<bool>(") == 6 and "x != 0" not in added and ".x != 0" not in added
    assert "#define CREATE_MPS_BINARY_COMPARISON_OP_FUNC" in removed  # its last user went with the family
    body = (bundle / "PR.md").read_text()
    assert "Fixes #12345" in body and "## Agent details" in body and "Human review" in body
    assert "reuses c10::metal::cast_to<bool>" in body and "REGISTER_BINARY_CASTOUT_OP" in body
    assert "torch.mps.synchronize" in (bundle / "bench_mps_port.py").read_text()
    assert "| logical_xor | bool | 4096x4096 |" in body and "median" in body
    compile((bundle / "bench_mps_port.py").read_text(), "bench_mps_port.py", "exec")
    # The one patch applies on the base alone.
    base = tmp_path / "base"
    git(tmp_path, "clone", "-q", str(root), str(base))
    git(base, "checkout", "-q", git(root, "rev-parse", "HEAD").strip())
    _am(base, patches, tmp_path / "am")
    text = (tmp_path / "am" / LEGACY).read_text()
    assert "CREATE_MPS_BINARY_COMPARISON_OP_FUNC" not in text and "logical_and_out_mps" not in text


def test_family_of_finds_shared_legacy_code_and_addcmul_addcdiv_are_one_change(tmp_path: Path) -> None:
    checkout = overlay_real_tree(tmp_path / "real", writable=True)
    ops, reasons = family_of(checkout, "logical_xor")
    assert set(ops) == set(LOGICAL) and ops[0] == "logical_xor"
    assert any("CREATE_MPS_BINARY_COMPARISON_OP_FUNC" in r for r in reasons)
    assert family_of(checkout, "heaviside") == (("heaviside",), ())
    ops, reasons = family_of(checkout, "addcdiv")
    assert ops == ("addcdiv", "addcmul") and any("addc_mul_div_out_mps" in r for r in reasons)
    family = plan_family(checkout, ("addcmul", "addcdiv"), reasons=reasons)
    # The shared MPSGraph helper goes with its last user, which only the second member is.
    assert [m.legacy_others for m in family.members][0] == ()
    assert any(name == "addc_mul_div_out_mps" for _, name in family.members[1].legacy_others)
    root = checkout.root
    apply_family(family, root)
    assert check_family(root, root, family) == []
    host = (root / "aten/src/ATen/native/mps/operations/PointwiseOps.mm").read_text()
    assert "addc_mul_div_out_mps" not in host and host.count("static void exec_ternary_kernel_with_alpha(") == 1
    assert any("adds a file-local exec_ternary_kernel_with_alpha" in r for r in family.members[0].reuse)
    # Every test list naming the op: _refs.addcmul's MPS integer xfails and their orphaned comment go too.
    opinfos = (root / "torch/testing/_internal/common_methods_invocations.py").read_text()
    refs = opinfos[opinfos.index('"_refs.addcmul"'):opinfos.index("ElementwiseBinaryPythonRefInfo", opinfos.index('"_refs.addcmul"'))]
    assert "device_type='mps'" not in refs and "Tensor-likes are not close" not in refs
    assert "device_type=\"cpu\"" in refs  # the CPU skips stay
    git(root, "add", "-A")
    git(_identity(root), "commit", "-q", "-m", "[MPS] Migrate addcmul, addcdiv to native Metal")
    patch = git(root, "format-patch", "-o", str(tmp_path / "patches"), "HEAD~1").split()
    base = tmp_path / "base"
    git(tmp_path, "clone", "-q", str(root), str(base))
    git(base, "checkout", "-q", "HEAD~1")
    _am(base, [Path(p) for p in patch], tmp_path / "am")
    assert git(tmp_path / "am", "rev-parse", "HEAD^{tree}") == git(root, "rev-parse", "HEAD^{tree}")


def test_a_second_run_on_the_same_files_stacks_on_the_open_one_and_both_patches_apply(
        wheel_repo: Path, tmp_path: Path, no_github_token: None) -> None:
    root = _identity(wheel_repo)
    first = start_run(root, "aten::heaviside", RunOptions(executor="emulated"), run_id="first")
    assert first.status == "awaiting-review", first.reason
    events: list[dict] = []
    second = start_run(root, "aten::logical_and", RunOptions(executor="emulated"), run_id="second",
                       progress=events.append)
    assert second.status == "awaiting-review", second.reason
    notes = [e["message"] for e in events if e.get("event") == "note" and e.get("node") == "plan"]
    assert notes and notes[0].startswith("based on run first (aten::heaviside, awaiting review)")
    assert KERNEL in notes[0]
    # The first run's worktree, index and branch are untouched by the stacking.
    assert git(Path(first.worktree), "diff", "--cached") == ""
    assert commits_on(root, "metalport/heaviside", "HEAD") == []
    one = resume_run(root, "first", Approve())
    two = resume_run(root, "second", Approve())
    assert (one.status, two.status) == ("published", "published"), (one.reason, two.reason)
    assert "based on run first" in (Path(two.bundle_path) / "PR.md").read_text()
    patches = [p for b in (one, two) for p in sorted((Path(b.bundle_path) / "patches").glob("*.patch"))]
    assert len(patches) == 2
    base = tmp_path / "base"
    git(tmp_path, "clone", "-q", str(root), str(base))
    _am(base, patches, tmp_path / "am")  # heaviside's approved commit, then logical_and's on top
    kernel = (tmp_path / "am" / KERNEL).read_text()
    assert "struct heaviside_functor" in kernel and "struct logical_and_functor" in kernel
    with pytest.raises(subprocess.CalledProcessError):  # not stacked, the second alone would not apply
        _am(base, patches[1:], tmp_path / "alone")


def test_addcmul_with_a_wider_out_computes_at_the_common_dtype_and_casts_on_store(tmp_path: Path) -> None:
    """half inputs written through a float32 `out=`: CPU rounds the result to half first (the
    computation is at the common dtype); the host picks the common dtype's kernel and casts on
    store, so the float32 output holds half-rounded values, not float32 math."""
    import torch

    from metalport.checks.host.backend import compile_files
    from metalport.checks.host.elementwise import plan_ternary_alpha
    from metalport.checks.host.iteration import build_iteration
    from metalport.port.plan.planner import apply_port, plan_port

    checkout = overlay_real_tree(tmp_path / "real", writable=True)
    plan = plan_port(checkout, "addcmul")
    apply_port(plan, checkout.root)
    kernels = compile_files([checkout.root / plan.kernel_file], checkout.root, "emulated",
                            kernels=["addcmul_strided_cast_half_float", "addcmul_dense_half_half_float"])
    gen = torch.Generator().manual_seed(20)
    a, b, c = (torch.rand(257, generator=gen, dtype=torch.float32).to(torch.float16) * 3 for _ in range(3))
    value = 0.3
    expected = torch.empty(257, dtype=torch.float32)
    torch.addcmul(a, b, c, value=value, out=expected)
    it = build_iteration([a, b, c], torch.float32, lambda n, dt: torch.full((n,), float("nan"), dtype=dt))
    launch = plan_ternary_alpha("addcmul", kernels.names, it, a, b, c, common=torch.float16, alpha=value)
    assert launch.kernel == "addcmul_strided_cast_half_float"  # picked by the common dtype, not float32's
    kernels.run(launch)
    got = it.output
    wide = a.float() + value * b.float() * c.float()
    assert torch.equal(got, expected), (got - expected).abs().max()
    assert not torch.equal(expected, wide)  # the case tells the two computations apart
    kernels.close()
