"""Backend selection and the MPS path's header inlining (the MPS run itself needs macOS)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from metalport.checks.host.backend import inline_includes, pick_backend, wheel_include_dir
from metalport.emulate import checkout_include_dirs
from metalport.cli import main
from metalport.errors import UsageError


def test_inline_includes_resolves_every_c10_header_once() -> None:
    source = "#include <c10/metal/indexing.h>\n#include <c10/metal/utils.h>\n#include <metal_stdlib>\nkernel;\n"
    text = inline_includes(source, [wheel_include_dir()])
    assert "#include <c10/metal/" not in text
    assert text.count("kernel void unary_dense_scalar(") == 1
    assert text.count("enum class ScalarType") == 1  # common.h, included by both headers, appears once
    assert "#include <metal_stdlib>" in text and text.rstrip().endswith("kernel;")


def test_checkout_headers_come_first(tmp_path: Path) -> None:
    (tmp_path / "c10/metal").mkdir(parents=True)
    (tmp_path / "c10/metal/utils.h").write_text("// the checkout's utils\n")
    dirs = checkout_include_dirs(tmp_path)
    assert dirs == (tmp_path, wheel_include_dir())
    text = inline_includes("#include <c10/metal/utils.h>\n#include <c10/metal/common.h>\n", dirs)
    assert "the checkout's utils" in text and "enum class ScalarType" in text
    with pytest.raises(UsageError, match="header c10/metal/nope.h not found"):
        inline_includes("#include <c10/metal/nope.h>\n", dirs)


def test_backend_choice() -> None:
    mps = torch.backends.mps.is_available()
    assert pick_backend("auto") == ("mps" if mps else "emulated")
    assert pick_backend("emulated") == "emulated"
    with pytest.raises(UsageError, match="unknown backend 'cuda'"):
        pick_backend("cuda")


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="MPS is available here")
def test_mps_backend_without_mps_is_one_line_exit_2(good_checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "aten::neg", "--repo", str(good_checkout), "--backend", "mps"]) == 2
    err = capsys.readouterr().err
    assert "backend mps requested but torch.backends.mps.is_available() is False" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.macos
@pytest.mark.skipif(not torch.backends.mps.is_available(), reason="needs macOS with MPS")
def test_same_harness_on_mps(good_checkout: Path) -> None:
    from metalport.checks.conformance import run_conformance

    report = run_conformance(good_checkout, "aten::atan2", backend="mps", seed=1, dtypes=["float32"])
    assert report.backend == "mps" and report.status == "pass", report.summary_for_model()
