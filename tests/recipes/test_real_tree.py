"""Acceptance on real PyTorch files: every recipe op the corpus holds, ported on the real tree.

`$METALPORT_REAL_TREE` (upstream files, see its PROVENANCE.md) is overlaid on a wheel workspace.
Each op's port must keep the contract, build and pass held-out conformance with no skipped
sample, and its commit must `git am` on the base alone and stacked with the other ports of its
kernel file. The diff's shape is asserted as a PyTorch reviewer reads it: placement, the file's
macro idiom, clang-format on the new lines, complex kept, one `CPU, CUDA, MPS:` row.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from metalport.checkout import Checkout, init_workspace
from metalport.checks.contract.rules import check_contract
from metalport.executors import emulated
from metalport.port import recipe_table
from metalport.port.write.cformat import clang_format_executable
from metalport.port.plan.model import NATIVE_FUNCTIONS, PortPlan
from metalport.port.plan.planner import apply_port, mps_complex_names, plan_port
from metalport.registry.model import parse_registry
from tests.recipes.porting import commit_all, git

REAL = os.environ.get("METALPORT_REAL_TREE")
pytestmark = pytest.mark.skipif(not REAL, reason="METALPORT_REAL_TREE is unset (real PyTorch files to port on)")
KERNELS = "aten/src/ATen/native/mps/kernels"
OPERATIONS = "aten/src/ATen/native/mps/operations"


@pytest.fixture(scope="module")
def real_base(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    """A wheel workspace with the real files copied over it, committed."""
    root = tmp_path_factory.mktemp("real") / "base"
    checkout = init_workspace(root)
    real = Path(REAL or "")
    for path in sorted(real.rglob("*")):
        if path.is_file() and path.name not in ("PROVENANCE.md", "LICENSE"):
            target = root / path.relative_to(real)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    commit_all(root, "real PyTorch files over the wheel workspace")
    return checkout


def _in_corpus(base: Checkout, op: str) -> bool:
    """True when the corpus holds the op's kernel or host file (else the port writes new files)."""
    recipe = recipe_table()[op]
    return (base.root / KERNELS / recipe.kernel_file).is_file() or (base.root / OPERATIONS / recipe.host_file).is_file()


def _names() -> list[str]:
    return sorted(recipe_table())


def _port(base: Checkout, op: str, root: Path) -> PortPlan:
    """Clone `base` at `root`, port `op` there and commit it; return the plan."""
    git(root.parent, "clone", "-q", str(base.root), str(root))
    plan = plan_port(Checkout(root), op)
    apply_port(plan, root)
    commit_all(root, f"[MPS] Migrate {op} to native Metal")
    return plan


def _am(base: Checkout, patches: list[Path], target: Path) -> None:
    """`git am` every patch in order on a fresh clone of the base (raises on a rejected hunk)."""
    git(target.parent, "clone", "-q", str(base.root), str(target))
    git(target, "am", "-q", *[str(p) for p in patches])


def _added_ranges(root: Path, rel: str) -> list[tuple[int, int]]:
    """1-based (first, last) line ranges `HEAD` added to `rel`."""
    diff = git(root, "diff", "-U0", "HEAD~1", "HEAD", "--", rel)
    ranges = []
    for m in re.finditer(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", diff, re.M):
        first, count = int(m.group(1)), int(m.group(2) or 1)
        if count:
            ranges.append((first, first + count - 1))
    return ranges


def _clang_format_dirty(root: Path, rel: str) -> str:
    """clang-format's complaints about the lines `HEAD` added to `rel` ("" when clean)."""
    exe = clang_format_executable()
    lines = [f"--lines={a}:{b}" for a, b in _added_ranges(root, rel)]
    if exe is None or not lines:
        return ""
    proc = subprocess.run([exe, "--dry-run", "--Werror", "--style=file", *lines, rel], cwd=root,
                          capture_output=True, text=True, timeout=60)
    return proc.stderr.strip()


def _functor_blocks(text: str) -> list[str]:
    """Each functor block of a kernel file: `struct x_functor {...};` and the registrations after it."""
    from metalport.port.write.metal import _STRUCT, _block_end

    return [text[m.start():_block_end(text, m, "kernel.metal")].rstrip() for m in _STRUCT.finditer(text)]


def _assert_shape(base: Checkout, root: Path, plan: PortPlan) -> None:
    changed = git(root, "diff", "--name-only", "HEAD~1", "HEAD").split()
    if plan.kernel_file in changed:
        before = (base.root / plan.kernel_file).read_text(encoding="utf-8") if (base.root / plan.kernel_file).is_file() else ""
        after = (root / plan.kernel_file).read_text(encoding="utf-8")
        for block in _functor_blocks(before):
            assert block in after, f"the port split this block of {plan.kernel_file}:\n{block[:200]}"
        new = next(b for b in _functor_blocks(after) if b.startswith(f"struct {plan.functor} "))
        assert all(r in new for r in plan.registrations), "registrations are not beside their functor"
        if re.search(r"^using namespace metal;", after, re.M):
            lines = after.splitlines()
            added = "\n".join(lines[n - 1] for a, b in _added_ranges(root, plan.kernel_file) for n in range(a, b + 1))
            assert "::metal::" not in added.replace("c10::metal::", ""), "::metal:: in a `using namespace metal` file"
    for rel in changed:
        if rel.endswith((".metal", ".mm")):
            assert _clang_format_dirty(root, rel) == "", f"clang-format: {rel}"
    host = (root / plan.host_file).read_text(encoding="utf-8") if plan.host_file else ""
    if ("#define REGISTER_UNARY_TI_DISPATCH(NAME)" in host and plan.stub == f"{plan.op}_stub"
            and plan.stubs == (plan.stub,) and plan.stub_registered_at is None):
        assert f"REGISTER_UNARY_TI_DISPATCH({plan.op});" in host and f"{plan.op}_mps_kernel" not in host
    if plan.op in mps_complex_names(base) or recipe_table()[plan.op].opinfo in mps_complex_names(base):
        assert {"float2", "half2"} <= set(plan.dtypes), "complex dropped"
    registry = parse_registry((root / NATIVE_FUNCTIONS).read_text(encoding="utf-8"), NATIVE_FUNCTIONS)
    for entry in registry.resolve(plan.op).entries:
        mps = [d for d in entry.dispatch if "MPS" in d.keys]
        cpu = entry.kernel_for("CPU")
        if cpu is not None and mps and entry.full_name in {r.entry for r in plan.rows}:
            assert len(mps) == 1 and {"CPU", "CUDA", "MPS"} <= set(mps[0].keys), f"{entry.full_name}: {mps[0].text}"


@pytest.mark.parametrize("op", _names())
def test_port_reaches_the_gate_and_its_commit_applies_on_the_base(real_base: Checkout, tmp_path: Path,
                                                                  op: str) -> None:
    if not _in_corpus(real_base, op):
        pytest.skip(f"the corpus has neither {op}'s kernel file nor its host file")
    root = tmp_path / "port"
    plan = _port(real_base, op, root)
    _assert_shape(real_base, root, plan)
    patches = git(root, "format-patch", "-o", str(tmp_path / "patches"), "HEAD~1").split()
    assert len(patches) == 1
    _am(real_base, [Path(p) for p in patches], tmp_path / "am")
    assert git(tmp_path / "am", "rev-parse", "HEAD^{tree}") == git(root, "rev-parse", "HEAD^{tree}")
    assert check_contract(real_base.root, root, plan) == []
    assert emulated.build(root, plan) == []
    report, failures = emulated.test(root, plan, held_out=True)
    assert (report.status, [str(f) for f in failures]) == ("pass", [])
    assert sum(v.skipped for v in report.dtypes) == 0


@pytest.mark.parametrize("kernel_file", ["UnaryKernel.metal", "BinaryKernel.metal"])
def test_ports_of_one_file_stack_and_apply_together(real_base: Checkout, tmp_path: Path, kernel_file: str) -> None:
    ops = [op for op in _names() if recipe_table()[op].kernel_file == kernel_file]
    root = tmp_path / "stack"
    git(tmp_path, "clone", "-q", str(real_base.root), str(root))
    for op in ops:
        plan = plan_port(Checkout(root), op)
        apply_port(plan, root)
        commit_all(root, f"[MPS] Migrate {op} to native Metal")
        _assert_shape(real_base, root, plan)
    patches = git(root, "format-patch", "-o", str(tmp_path / "patches"), f"HEAD~{len(ops)}").split()
    assert len(patches) == len(ops)
    _am(real_base, [Path(p) for p in patches], tmp_path / "am")
    assert git(tmp_path / "am", "rev-parse", "HEAD^{tree}") == git(root, "rev-parse", "HEAD^{tree}")
    for op in ops:
        assert f"struct {op}_functor" in (tmp_path / "am" / KERNELS / kernel_file).read_text(encoding="utf-8") \
            or op in ("logical_not", "sub")


def test_addcmul_and_addcdiv_share_pointwise_ops_and_their_patches_apply_together(real_base: Checkout,
                                                                                   tmp_path: Path) -> None:
    host = f"{OPERATIONS}/PointwiseOps.mm"
    root = tmp_path / "stack"
    git(tmp_path, "clone", "-q", str(real_base.root), str(root))
    plans = []
    for op in ("addcmul", "addcdiv"):
        before = tmp_path / f"before-{op}"
        git(tmp_path, "clone", "-q", str(root), str(before))
        plan = plan_port(Checkout(root), op)
        apply_port(plan, root)
        assert check_contract(before, root, plan) == []
        commit_all(root, f"[MPS] Migrate {op} to native Metal")
        _assert_shape(Checkout(before), root, plan)
        plans.append(plan)
        text = (root / host).read_text(encoding="utf-8")
        assert f'exec_ternary_kernel_with_alpha(iter, "{op}", scalar);' in text
        # The MPSGraph helper goes with its last user: addcdiv_out_mps still calls it after addcmul's port.
        assert ("void addc_mul_div_out_mps(" in text) == (op == "addcmul")
    assert {p.kernel_file for p in plans} == {f"{KERNELS}/PointwiseOps.metal"} and {p.host_file for p in plans} == {host}
    text = (root / host).read_text(encoding="utf-8")
    assert text.count("static void exec_ternary_kernel_with_alpha(") == 1 and "namespace mps {" not in text
    assert "#else\n#endif" not in text  # the per-op includes left with their ops
    assert "MPSGraph" not in text and ".mul(" not in text
    patches = git(root, "format-patch", "-o", str(tmp_path / "patches"), "HEAD~2").split()
    am = tmp_path / "am"
    _am(real_base, [Path(p) for p in patches], am)
    assert git(am, "rev-parse", "HEAD^{tree}") == git(root, "rev-parse", "HEAD^{tree}")
    for plan in plans:
        assert emulated.build(am, plan) == []
        report, failures = emulated.test(am, plan, held_out=False)
        assert (report.status, [str(f) for f in failures], report.skipped) == ("pass", [], 0)
