"""The sandbox's allow-list view (Note [the shader sandbox]): a hostile shader reads files outside
the job's roots, by a static constructor and by computed `#include`s, and gets nothing: not in its
output, not in the compiler's diagnostics. Each attack also runs with `--no-sandbox`, where it
must succeed, so a confined pass is not vacuous."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from metalport.emulate import compile_file
from metalport.errors import CompileError
from metalport.sandbox.confine import Sandbox, select_sandbox, visible_roots

REPO = Path(__file__).resolve().parents[2]
CANARY = "sk-canary-7f3e9a1b5c"

READER = """\
#include <metal_stdlib>
#define CAT(a,b) a##b
CAT(ext,ern) "C" {
  int CAT(op,en)(const char*, int, ...);
  long CAT(re,ad)(int, void*, unsigned long);
  int close(int);
}
static char seen[16384];
static const char* const targets[] = {@PATHS@};
struct Probe { Probe() {
  long total = 0;
  for (const char* path : targets) {
    int fd = CAT(op,en)(path, 0);
    if (fd < 0) continue;
    long got = 0;
    while (total < 16000 && (got = CAT(re,ad)(fd, seen + total, 16000 - total)) > 0) total += got;
    close(fd);
  }
} };
static Probe probe;

kernel void leak(device uchar* out [[buffer(0)]], uint index [[thread_position_in_grid]]) {
  out[index] = seen[index];
}
"""

COMPUTED = """\
#include <metal_stdlib>
#define STR(x) #x
#define XSTR(x) STR(x)
#define F XSTR(@PATH@)
#include F
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1; }
"""


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    """A checkout with a secret `.env` at its root, beside `aten/src` and `c10/`."""
    root = tmp_path / "pytorch"
    (root / "aten" / "src" / "ATen").mkdir(parents=True)
    (root / "c10" / "metal").mkdir(parents=True)
    (root / ".env").write_text(f"DEPLOY_KEY={CANARY}\n")
    return root


@pytest.fixture()
def other_checkout() -> Iterator[Path]:
    """Another checkout's secret, outside /tmp and the home directory."""
    path = Path(tempfile.mkdtemp(prefix=".other-checkout-", dir=REPO))
    (path / ".env").write_text(f"DEPLOY_KEY={CANARY}\n")
    yield path / ".env"
    shutil.rmtree(path)


@pytest.fixture()
def home_secret() -> Iterator[Path]:
    path = Path.home() / ".metalport-view-test-secret"
    path.write_text(f"HOME_TOKEN={CANARY}\n")
    yield path
    path.unlink()


def _read_through_a_kernel(tmp_path: Path, cache: Path, paths: list[Path | str], sandbox: Sandbox,
                           include_dirs: tuple[Path, ...] = ()) -> bytes:
    source = tmp_path / "reader.metal"
    source.write_text(READER.replace("@PATHS@", ", ".join(f'"{p}"' for p in paths)))
    with compile_file(source, cache_dir=cache, sandbox=sandbox, include_dirs=include_dirs) as lib:
        out = torch.zeros(16384, dtype=torch.uint8)
        lib.leak(out, threads=out.numel())
    return out.numpy().tobytes()


@pytest.mark.parametrize("confined", [True, False], ids=["sandbox", "no-sandbox"])
def test_a_kernel_reads_no_file_outside_its_roots(tmp_path: Path, cache: Path, checkout: Path,
                                                  other_checkout: Path, home_secret: Path,
                                                  confined: bool) -> None:
    targets = ["/etc/shadow", other_checkout, home_secret, checkout / ".env", "/etc/passwd"]
    seen = _read_through_a_kernel(tmp_path, cache, targets, select_sandbox(opt_out=not confined),
                                  include_dirs=(checkout, checkout / "aten" / "src"))
    if confined:
        assert CANARY.encode() not in seen
        assert b"root:" not in seen  # neither shadow nor the host's passwd
        assert seen.startswith(b"nobody:x:65534:"), "the probe read nothing, so this test proves nothing"
    else:
        assert CANARY.encode() in seen


@pytest.mark.parametrize("confined", [True, False], ids=["sandbox", "no-sandbox"])
@pytest.mark.parametrize("where", ["other-checkout", "checkout-root", "home"])
def test_a_computed_include_of_a_secret_file_leaks_nothing_into_diagnostics(
        tmp_path: Path, cache: Path, checkout: Path, other_checkout: Path, home_secret: Path,
        where: str, confined: bool) -> None:
    secret = {"other-checkout": other_checkout, "checkout-root": checkout / ".env", "home": home_secret}[where]
    source = tmp_path / "computed.metal"
    source.write_text(COMPUTED.replace("@PATH@", str(secret)))
    with pytest.raises(CompileError) as err:
        compile_file(source, cache_dir=cache, sandbox=select_sandbox(opt_out=not confined),
                     include_dirs=(checkout, checkout / "aten" / "src")).close()
    shown = str(err.value) + "\n".join(str(d) for d in err.value.diagnostics)
    if confined:
        assert CANARY not in shown and "DEPLOY_KEY" not in shown and "HOME_TOKEN" not in shown
        assert "No such file" in shown or "not found" in shown, shown
    else:
        assert "DEPLOY_KEY" in shown or "HOME_TOKEN" in shown, shown


def test_an_include_relative_to_a_checkout_root_sees_only_aten_and_c10(tmp_path: Path, cache: Path,
                                                                        checkout: Path) -> None:
    (checkout / "c10" / "metal" / "ok.h").write_text("#define FROM_C10 3\n")
    source = tmp_path / "rel.metal"
    source.write_text("#include <metal_stdlib>\n#include <c10/metal/ok.h>\n#include <.env>\n"
                      "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                      "{ o[i] = FROM_C10; }\n")
    with pytest.raises(CompileError) as err:
        compile_file(source, cache_dir=cache, include_dirs=(checkout, checkout / "aten" / "src")).close()
    assert ".env" in str(err.value) and CANARY not in str(err.value)
    assert "ok.h" not in str(err.value)  # the c10 header was found
    assert visible_roots([checkout]) == (checkout / "aten", checkout / "c10")
