"""Type-check one Objective-C++ host file (`.mm`) of a PyTorch checkout, off a Mac.

The file is compiled with `-fsyntax-only` and PyTorch's MPS build flags against, in order: the
MPS declarations torchgen makes from the checkout's registry (`mpsdecls`), the checkout's own
headers (`aten/src`, and the root of a full checkout), the torch wheel's `include`, and our SDK
declaration shim (`shim/`).  The compiler runs inside the shader sandbox.  A result is cached by
the file's bytes, the flags, the compiler, the shim and every header the compiler read (their
hashes are re-checked on a hit), so an unchanged file is not compiled twice.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from metalport.emulate import cache
from metalport.emulate.diagnostics import Diagnostic, parse_diagnostics
from metalport.errors import EmulateError
from metalport.failure import Failure
from metalport.hostcheck import mpsdecls
from metalport.hostcheck.toolchain import MPS_FLAGS, SHIM_DIR, front_end
from metalport.sandbox.confine import Sandbox, select_sandbox
from metalport.sandbox.runner import scrubbed_env

NATIVE = "aten/src/ATen/native"
FORMAT = "hostcheck 1"


@dataclass(frozen=True)
class HostCheck:
    """What the compiler said about one `.mm`: `ok`, its diagnostics (paths relative to the
    checkout), whether the answer came from the cache, and the seconds it took."""

    file: str
    ok: bool
    diagnostics: tuple[Diagnostic, ...] = ()
    cached: bool = False
    seconds: float = 0.0
    registry: str = ""  # which native_functions.yaml the MPS declarations came from
    notes: tuple[str, ...] = field(default=())

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        """The error diagnostics."""
        return tuple(d for d in self.diagnostics if d.severity == "error")

    def failures(self) -> list[Failure]:
        """The errors as the repair loop's `Failure`s (kind `host-compile-error`), each with the
        compiler's notes about it folded into the message."""
        out: list[Failure] = []
        for d in self.diagnostics:
            if d.severity == "error":
                out.append(Failure("host-compile-error", d.file, d.line, d.column, d.message))
            elif d.severity == "note" and out and len(out[-1].message) < 600:
                last = out[-1]
                out[-1] = Failure(last.kind, last.file, last.line, last.column,
                                  f"{last.message} [note: {d.file}:{d.line}: {d.message}]")
        return out

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (for evidence and run records)."""
        return {"file": self.file, "ok": self.ok, "cached": self.cached, "seconds": round(self.seconds, 3),
                "registry": self.registry, "diagnostics": [d.to_dict() for d in self.diagnostics]}


def default_cache_dir() -> Path:
    """The host-check cache: `hostcheck/` beside the shader cache."""
    return cache.default_cache_dir().parent / "hostcheck"


def _wheel_include() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        raise EmulateError("the torch wheel is not installed (its headers are the host check's ATen)",
                           hint="pip install torch==2.13.0")
    return Path(spec.origin).parent / "include"


def _registry(repo: Path) -> tuple[Path, Path, str]:
    """(native_functions.yaml, tags.yaml, how to name it): the checkout's, else the wheel's."""
    yaml_path, tags = repo / NATIVE / "native_functions.yaml", repo / NATIVE / "tags.yaml"
    if yaml_path.is_file():
        if not tags.is_file():
            tags = _packaged() / "tags.yaml"
        return yaml_path, tags, f"{NATIVE}/native_functions.yaml"
    packaged = _packaged()
    return packaged / "native_functions.yaml", packaged / "tags.yaml", "the torch wheel's native_functions.yaml"


def _packaged() -> Path:
    import torchgen

    return Path(torchgen.__file__).parent / "packaged/ATen/native"


def include_dirs(repo: Path, generated: Path) -> list[Path]:
    """The user include path, first match wins: generated MPS declarations, the checkout's
    headers, the wheel's headers."""
    wheel = _wheel_include()
    dirs = [generated, repo / "aten/src"]
    if (repo / "c10/core").is_dir():  # a full checkout: c10/, torch/ at its root
        dirs.append(repo)
    return [*dirs, wheel, wheel / "torch/csrc/api/include"]


def _shim_files() -> list[Path]:
    return sorted(p for p in SHIM_DIR.rglob("*") if p.is_file())


def _key(source: bytes, argv: list[str], identity: str, n_dirs: int) -> str:
    h = hashlib.sha256(f"{FORMAT}\0{identity}\0{n_dirs}\0".encode())
    for part in argv:
        h.update(part.encode() + b"\0")
    for path in [*_shim_files(), *sorted(Path(__file__).parent.glob("*.py"))]:
        h.update(str(path.relative_to(SHIM_DIR.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(source)
    return h.hexdigest()[:40]


def _flags(dirs: list[Path]) -> list[str]:
    """The compile flags after the compiler: MPS flags, include path, shim."""
    flags = [*MPS_FLAGS, "-include", str(SHIM_DIR / "darwin_prelude.h")]
    for d in dirs:
        flags += ["-I", str(d)]
    return [*flags, "-isystem", str(SHIM_DIR)]  # before zig's system dirs: our objc/dispatch/os win


def _depfile_headers(text: str) -> list[Path]:
    """The prerequisites listed in a make-style dependency file."""
    body = text.replace("\\\n", " ")
    _, _, deps = body.partition(": ")
    return [Path(p.replace("\\ ", " ")) for p in re.split(r"(?<!\\)\s+", deps.strip()) if p]


def check_file(path: Path, repo: Path, *, display: str | None = None, cache_dir: Path | None = None,
               sandbox: Sandbox | None = None) -> HostCheck:
    """Type-check the `.mm` at `path`, which belongs to checkout `repo` (its registry and headers).

    Raises EmulateError when no compiler is found, SandboxError when no sandbox can be set up,
    RegistryError when torchgen cannot read the registry, FilesystemError when the cache cannot
    be written."""
    start = time.monotonic()
    path, repo = path.resolve(), repo.resolve()
    if display is None:
        display = str(path.relative_to(repo)) if path.is_relative_to(repo) else str(path)
    cache_dir = cache_dir or default_cache_dir()
    source = path.read_bytes()
    text = source.decode("utf-8", errors="replace")
    yaml_path, tags_path, registry_name = _registry(repo)
    dirs_for_scan = [repo / "aten/src", _wheel_include()]
    native, dispatch, all_dispatch = mpsdecls.wanted_names(text, [path.parent.parent.parent.parent.parent,
                                                                   *dirs_for_scan])
    cache.prepare(cache_dir)
    try:
        generated = mpsdecls.generate(yaml_path, tags_path, cache_dir / "mps-decls", native=native,
                                      dispatch=dispatch, all_dispatch=all_dispatch)
    except OSError as err:  # full or read-only cache: one line naming it
        raise cache.cache_fault(err, cache_dir) from None
    dirs = include_dirs(repo, generated)
    fe = front_end()
    flags = _flags(dirs)
    key = _key(source, [*fe.argv, *fe.system, *[f for f in flags if not f.startswith("/")], generated.name], fe.identity, len(dirs))
    roots = [path.parent, *dirs, SHIM_DIR]
    hit = cache.lookup_manifest(cache_dir, key, roots)
    if hit is not None:
        diags = tuple(Diagnostic(**d) for d in hit.get("diagnostics", []))  # type: ignore[arg-type, union-attr]
        return HostCheck(display, bool(hit.get("ok")), diags, True, time.monotonic() - start, registry_name)
    sandbox = sandbox or select_sandbox()
    with tempfile.TemporaryDirectory(prefix="metalport-hostcheck-") as tmp:
        depfile = Path(tmp) / "deps.d"
        argv = [*fe.argv, *flags, *fe.system, "-fsyntax-only", "-MD", "-MF", str(depfile), "-MT", "unit", str(path)]
        proc = sandbox.run(argv, env=scrubbed_env(), cwd=Path(tmp), writable=(Path(tmp), *fe.scratch),
                           readable=(path.parent, *dirs, SHIM_DIR, yaml_path.parent))
        if not depfile.is_file():  # clang writes no dependency file for a unit with errors: list them alone
            sandbox.run([*fe.argv, *flags, *fe.system, "-M", "-MF", str(depfile), "-MT", "unit", str(path)],
                        env=scrubbed_env(), cwd=Path(tmp), writable=(Path(tmp), *fe.scratch),
                        readable=(path.parent, *dirs, SHIM_DIR, yaml_path.parent))
        headers = _depfile_headers(depfile.read_text()) if depfile.is_file() else []
    renames = {str(path): display}
    diags = tuple(_relative(d, repo, path, display) for d in parse_diagnostics(proc.stderr, renames))
    ok = proc.returncode == 0 and not any(d.severity == "error" for d in diags)
    if proc.returncode != 0 and not any(d.severity == "error" for d in diags):
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise EmulateError(f"the host compiler failed on {display} without a diagnostic: {tail[0][:300]}",
                           hint="run `metalport doctor` to check the compiler and the sandbox")
    manifest = {"ok": ok, "diagnostics": [d.to_dict() for d in diags]}
    if headers:
        cache.store_manifest(cache_dir, key, manifest, [h for h in headers if h.resolve() != path], roots)
    return HostCheck(display, ok, diags, False, time.monotonic() - start, registry_name)


def _relative(d: Diagnostic, repo: Path, path: Path, display: str) -> Diagnostic:
    """`d` with a path inside the checkout shown relative to it."""
    p = Path(d.file)
    if d.file == display or not p.is_absolute():
        return d
    try:
        rel = str(p.resolve().relative_to(repo))
    except (ValueError, OSError):
        return d
    return Diagnostic(rel, d.line, d.column, d.severity, d.message)


_UNDECLARED_STRUCTURED = re.compile(r"use of undeclared identifier 'structured_(\w+)'")


def unrouted_kernels(result: HostCheck, repo: Path) -> list[str]:
    """Kernels whose `structured_<kernel>` the file uses (TORCH_IMPL_FUNC) and clang found undeclared,
    and that no row of the checkout's registry names: torchgen declares those classes only for
    kernels a row routes to, so the file and its registry come from different PyTorch versions."""
    names = sorted({m.group(1) for d in result.errors if (m := _UNDECLARED_STRUCTURED.search(d.message))})
    if not names:
        return []
    registry = _registry(repo)[0].read_text(encoding="utf-8", errors="replace")
    return [n for n in names if not re.search(rf":\s*{re.escape(n)}\s*$", registry, re.MULTILINE)]
