"""What the pipeline knows about torch without importing it: version, headers, MPS, OpInfo facts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from metalport.torch_facts import FORMAT, opinfo_facts, torch_include_dir, torch_version


def _probe(code: str, env_cache: Path) -> str:
    env_code = f"import os; os.environ['XDG_CACHE_HOME'] = {str(env_cache)!r}\n{code}"
    proc = subprocess.run([sys.executable, "-c", env_code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_version_headers_and_mps_need_no_torch_import(tmp_path: Path) -> None:
    out = _probe("import sys\nfrom metalport.torch_facts import mps_available, torch_include_dir, torch_version\n"
                 "print(mps_available(), (torch_include_dir() / 'c10/metal').is_dir(), torch_version(), "
                 "'torch' in sys.modules)", tmp_path)
    assert out == f"False True {torch_version()} False"
    assert (torch_include_dir() / "ATen/native").is_dir()


def test_opinfo_facts_are_read_once_per_torch_version(tmp_path: Path) -> None:
    facts = opinfo_facts(cache_dir=tmp_path)
    kept = tmp_path / f"{torch_version()}-{FORMAT}.json"
    assert kept.is_file()
    heaviside = facts["heaviside"]
    assert "float32" in heaviside.cpu_dtypes and "int64" in heaviside.cpu_dtypes
    assert heaviside.supports_autograd is False
    assert facts["sigmoid"].supports_autograd is True
    # Later calls read the kept file: what it says is what they return.
    data = json.loads(kept.read_text(encoding="utf-8"))
    data["heaviside"] = [["float32"], True, ["float32"]]
    kept.write_text(json.dumps(data), encoding="utf-8")
    assert opinfo_facts(cache_dir=tmp_path)["heaviside"].cpu_dtypes == ("float32",)
    kept.write_text("{ damaged", encoding="utf-8")
    assert "int64" in opinfo_facts(cache_dir=tmp_path)["heaviside"].cpu_dtypes  # rebuilt from op_db


def test_resolve_and_plan_run_without_importing_torch(tmp_path: Path, wheel_workspace) -> None:
    """resolve and plan read the cached OpInfo facts; only the stages that run kernels import torch."""
    cache = tmp_path / "cache"
    warm = "from metalport.torch_facts import module_calls, opinfo_facts\nopinfo_facts()\nmodule_calls()\n"
    _probe(warm, cache)
    out = _probe("import sys\n"
                 "from metalport.checkout import find_checkout\n"
                 "from metalport.port.plan.planner import plan_port\n"
                 f"plan = plan_port(find_checkout(__import__('pathlib').Path({str(wheel_workspace.root)!r})), "
                 "'aten::heaviside')\n"
                 "print(plan.dtypes[:2], 'torch' in sys.modules)", cache)
    assert out == "('float', 'half') False"


def test_module_tolerances_come_from_the_installed_torch(tmp_path: Path) -> None:
    from metalport.torch_facts import module_tolerance

    # a ModuleInfo's own MPS override is taken as it is
    own = module_tolerance("torch.nn.TransformerEncoderLayer", "test_forward", "float16", cache_dir=tmp_path)
    assert own == (1e-4, 2e-3, "torch.nn.TransformerEncoderLayer's own toleranceOverride")
    # without one, test_forward's reference_fn on the ModuleInfo's own samples decides: LogSigmoid's
    # half reference (sigmoid, then log, each rounded) is 2^-8 off a result rounded once
    atol, rtol, why = module_tolerance("torch.nn.LogSigmoid", "test_forward", "float16", cache_dir=tmp_path)
    assert (atol, rtol) == (0.004, 0.001) and "worst 0.00391" in why
    assert module_tolerance("torch.nn.GLU", "test_memory_format", "float16", cache_dir=tmp_path) is None
    kept = json.loads(next(tmp_path.glob("*-tol-*.json")).read_text(encoding="utf-8"))
    assert len(kept) == 3  # cached per torch version
