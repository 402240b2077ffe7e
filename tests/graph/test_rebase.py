"""Sibling ports that land as separate changes apply in either order (issue 20, Note [rebase at
approval]): whichever run the reviewer approves first lands on the base, the other is rebased at its
approval onto the approved change, re-planned and verified again, and its bundle applies on top.
Stack refs go once their run is decided. On a wheel workspace (heaviside and logical_and both edit
BinaryKernel.metal/.mm there)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from metalport.graph import Abort, Approve, RunOptions, resume_run, start_run
from metalport.graph.nodes._stack import STACK_REFS, prune_stack_refs
from tests.graph.conftest import git

KERNEL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"


def _identity(root: Path) -> Path:
    git(root, "config", "user.name", "Reviewer")
    git(root, "config", "user.email", "reviewer@localhost")
    return root


def _stack_refs(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", STACK_REFS).split()


def _patches(record) -> list[Path]:
    return sorted((Path(record.bundle_path) / "patches").glob("*.patch"))


def _am(root: Path, patches: list[Path], target: Path) -> Path:
    git(target.parent, "clone", "-q", str(root), str(target))
    _identity(target)
    git(target, "am", "-q", *[str(p) for p in patches])
    return target


def test_the_stacked_run_approved_first_goes_first_and_the_other_rebases_onto_it(
        wheel_repo: Path, tmp_path: Path, no_github_token: None) -> None:
    root = _identity(wheel_repo)
    base = git(root, "rev-parse", "HEAD").strip()
    first = start_run(root, "aten::heaviside", RunOptions(executor="emulated"), run_id="first")
    second = start_run(root, "aten::logical_and", RunOptions(executor="emulated"), run_id="second")
    assert (first.status, second.status) == ("awaiting-review", "awaiting-review"), (first.reason, second.reason)
    assert _stack_refs(root) == [f"{STACK_REFS}second"]

    # The reviewer approves the stacked run first: heaviside is not approved, so logical_and goes
    # first on the base, re-planned and verified again there, and waits for a second approval.
    events: list[dict] = []
    again = resume_run(root, "second", Approve(), progress=events.append)
    notes = [e["message"] for e in events if e.get("event") == "note" and e.get("node") == "rebase"]
    assert again.status == "awaiting-review", again.reason
    assert notes and notes[0].startswith(f"rebased onto {base[:12]} at approval (run first (aten::heaviside), which "
                                         f"this run was based on, is still waiting for review")
    assert again.verdicts["test"]["ok"] and _stack_refs(root) == []
    two = resume_run(root, "second", Approve())
    assert two.status == "published", two.reason
    assert "rebased at approval onto" in (Path(two.bundle_path) / "PR.md").read_text()
    alone = _am(root, _patches(two), tmp_path / "second-alone")  # applies on the plain base
    assert "struct logical_and_functor" in (alone / KERNEL).read_text()

    # heaviside's approval finds logical_and approved on the same files: it is rebased onto it.
    events.clear()
    again = resume_run(root, "first", Approve(), progress=events.append)
    assert again.status == "awaiting-review", again.reason
    notes = [e["message"] for e in events if e.get("event") == "note" and e.get("node") == "rebase"]
    assert notes and "run second (aten::logical_and) was approved with a change to" in notes[0]
    one = resume_run(root, "first", Approve())
    assert one.status == "published", one.reason
    both = _am(root, _patches(two) + _patches(one), tmp_path / "both")
    kernel = (both / KERNEL).read_text()
    assert "struct heaviside_functor" in kernel and "struct logical_and_functor" in kernel
    assert git(both, "rev-parse", "HEAD^{tree}") == git(root, "rev-parse", "metalport/heaviside^{tree}")
    assert _stack_refs(root) == []


def test_an_aborted_run_drops_its_stack_ref_and_prune_clears_refs_of_decided_runs(
        wheel_repo: Path, no_github_token: None) -> None:
    root = _identity(wheel_repo)
    first = start_run(root, "aten::heaviside", RunOptions(executor="emulated"), run_id="first")
    second = start_run(root, "aten::logical_and", RunOptions(executor="emulated"), run_id="second")
    assert (first.status, second.status) == ("awaiting-review", "awaiting-review")
    assert _stack_refs(root) == [f"{STACK_REFS}second"]
    assert prune_stack_refs(root) == []  # its run is still open
    assert resume_run(root, "second", Abort()).status == "aborted"
    assert _stack_refs(root) == []
    # A ref left by a run that ended without dropping it (or whose record was pruned) is cleared.
    head = git(root, "rev-parse", "HEAD").strip()
    git(root, "update-ref", f"{STACK_REFS}gone-run", head)
    git(root, "update-ref", f"{STACK_REFS}second", head)
    assert sorted(prune_stack_refs(root)) == ["gone-run", "second"] and _stack_refs(root) == []
    assert resume_run(root, "first", Abort()).status == "aborted"


def test_a_change_counts_as_landed_when_the_base_has_it_by_ancestry_or_by_text(tmp_path: Path) -> None:
    from metalport.graph.nodes._stack import change_landed

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    _identity(root)
    (root / "a.txt").write_text("one\ntwo\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "metalport/x")
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    git(root, "commit", "-q", "-am", "port x")
    port = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "main")
    main = git(root, "rev-parse", "HEAD").strip()
    assert not change_landed(root, port, main)
    git(root, "cherry-pick", port)  # landed as another commit (a squash merge, a `git am`)
    assert change_landed(root, port, git(root, "rev-parse", "HEAD").strip())
    git(root, "merge", "-q", "--no-edit", "-s", "ours", "metalport/x")
    assert change_landed(root, port, git(root, "rev-parse", "HEAD").strip())
