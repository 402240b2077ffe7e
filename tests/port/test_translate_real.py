"""Translated ports over the real corpus (METALPORT_REAL_TREE) with the fixture CPU kernel files:
an optional scalar the CPU kernel turns into the stub's Scalar (`logit_out` passes
`Scalar(eps ? eps.value() : -1.0)`) reaches the translated functor's params struct, so the op's
OpInfo samples are judged, eps unset and set, and a functor that ignores eps fails."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from metalport.checkout import Checkout
from metalport.checkout.cpu_kernels import CPU_DIR
from metalport.checks.conformance import run_conformance
from metalport.port.write.apply import apply_port
from metalport.port.plan.planner import plan_port
from tests.real_tree import overlay_real_tree

FIXTURES = Path(__file__).parent / "fixtures" / "cpu"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = overlay_real_tree(tmp_path_factory.mktemp("corpus") / "ws", writable=True).root
    (root / CPU_DIR).mkdir(parents=True, exist_ok=True)
    for path in FIXTURES.glob("*.cpp"):
        shutil.copyfile(path, root / CPU_DIR / path.name)
    for argv in (["add", "-A"], ["commit", "-q", "-m", "fixture CPU kernels"]):
        subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@localhost", *argv], cwd=root,
                       check=True, capture_output=True, timeout=60)
    return root


def _ported(corpus: Path, work: Path, op: str, edit=None) -> Path:
    subprocess.run(["git", "clone", "-q", str(corpus), str(work)], check=True, capture_output=True, timeout=300)
    plan = plan_port(Checkout(work), f"aten::{op}")
    assert plan.functor_source and plan.params_type == "LogitParams", plan.translate_declined
    source = plan.functor_source if edit is None else edit(plan.functor_source)
    apply_port(plan, work, functor_source=source)
    return work


def test_logit_samples_reach_the_params_struct_with_eps_unset_and_set(corpus: Path, tmp_path: Path) -> None:
    work = _ported(corpus, tmp_path / "good", "logit")
    report = run_conformance(work, "aten::logit", backend="emulated", seed=3, dtypes=["float32"],
                             include_held_out=False)
    assert report.status == "pass", report.summary_for_model()
    (run,) = report.dtypes
    assert run.opinfo_unjudged == 0 and run.samples > 4, report.summary_for_model()


def test_a_logit_functor_ignoring_eps_fails(corpus: Path, tmp_path: Path) -> None:
    # the clamp to [eps, 1 - eps] dropped: samples with eps set now differ from CPU
    work = _ported(corpus, tmp_path / "bad", "logit",
                   lambda s: s.replace("x = ((x < lo) ? lo : ((x > hi) ? hi : x));", ""))
    report = run_conformance(work, "aten::logit", backend="emulated", seed=3, dtypes=["float32"],
                             include_held_out=False)
    assert report.status == "fail", report.summary_for_model()
    assert any("logit_dense_float_float_LogitParams" in f.message or "LogitParams" in f.message
               for d in report.dtypes for f in d.failures), report.summary_for_model()


def test_logit_backward_is_judged_through_the_binary_params_route(corpus: Path, tmp_path: Path) -> None:
    work = _ported(corpus, tmp_path / "bwd", "logit_backward")
    report = run_conformance(work, "aten::logit_backward", backend="emulated", seed=3, dtypes=["float32"],
                             include_held_out=False)
    assert report.status == "pass", report.summary_for_model()
    assert "alpha=(" in report.summary_for_model()
