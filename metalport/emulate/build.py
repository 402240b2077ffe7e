"""Build a shader into a cached shared library: preprocess, kernel table, harness, compile, link.

Cache (see `cache.py`): a manifest keyed by the source, flags, compiler and shim lists every
header the preprocessor read with its hash, so a reload re-hashes those headers (no compiler run)
and loads the stored library; any changed byte means a rebuild.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from metalport.atomic import discard
from metalport.emulate import cache
from metalport.emulate.compiler import Compiler
from metalport.emulate.diagnostics import Diagnostic, compile_error, parse_diagnostics
from metalport.emulate.flags import compile_flags, preprocess_flags
from metalport.emulate.harness import generate_harness
from metalport.emulate.kernels import KernelSpec, build_specs, drop_instantiations
from metalport.emulate.policy import check_shader_policy
from metalport.emulate.preprocess import SHIM_DIR, HostName, Preprocessed, blank_threadgroup, finalize, preprocess
from metalport.emulate.runner import Worker
from metalport.errors import EmulateError, fault_errno
from metalport.sandbox.confine import Sandbox
from metalport.sandbox.leftovers import scratch_prefix
from metalport.sandbox.runner import scrubbed_env


@dataclass(frozen=True)
class Built:
    """A compiled library on disk and its manifest (kernel infos, parameter types, warnings)."""

    so_path: Path
    manifest: dict[str, object]


def _rewrite_threadgroup_locals(text: str) -> str:
    """EMU-TG's rewrite of kernel-local `threadgroup T buf[N];` (identity until it exists)."""
    try:
        from metalport.emulate.threadgroup import rewrite_threadgroup_locals
    except ImportError:
        return text
    return rewrite_threadgroup_locals(text)


def _tu_uses_threadgroup(text: str) -> bool:
    """EMU-TG's whole-TU test: threadgroup data or a barrier/simd_* call outside the shim, which
    any kernel of the file may reach through a helper (so every kernel gets the executor)."""
    try:
        from metalport.emulate.threadgroup import uses_threadgroup
    except ImportError:
        return False
    return uses_threadgroup((), text)


def _takes_ii(compiler: Compiler) -> bool:
    """Whether the compiler driver accepts a `.ii` (preprocessed C++) file."""
    return not compiler.is_zig


def _syntax_argv(compiler: Compiler) -> tuple[str, ...]:
    """The command that type-checks a preprocessed unit: the compiler itself, except zig, whose
    `c++` driver insists on producing an object file; its embedded `clang` does not (and the
    unit includes nothing, so zig's own include paths are not needed)."""
    if not _takes_ii(compiler) and compiler.argv[-1] == "c++":
        return (*compiler.argv[:-1], "clang", "-x", "c++")
    return compiler.argv


def _runtime_object(compiler: Compiler, cache_dir: Path, version: str, sandbox: Sandbox) -> Path:
    """The compiled `mshim_runtime.cpp` (metalport's own code) for this compiler, built once into
    the cache."""
    source = SHIM_DIR / "mshim_runtime.cpp"
    flags = compile_flags(compiler)
    key = hashlib.sha256("\0".join([version, *flags, source.read_text()]).encode()).hexdigest()[:24]
    target = cache_dir / f"runtime-{key}.o"
    if target.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f".runtime-{key}-{os.getpid()}.o"
    proc = sandbox.run([*compiler.argv, *flags, "-c", "-o", str(tmp), str(source)], env=scrubbed_env(),
                       writable=(cache_dir, *compiler.scratch_dirs()), readable=(source,))
    if proc.returncode != 0:
        discard(tmp)
        if fault_errno(proc.stderr):  # the compiler could not write its output into the cache
            raise cache.cache_fault(OSError(fault_errno(proc.stderr), proc.stderr.strip()), cache_dir)
        raise EmulateError(f"the metalport runtime does not compile with {' '.join(compiler.argv)}: "
                           f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'no message'}")
    os.replace(tmp, target)
    return target


def _unit_text(pre_text: str, host_names: tuple[HostName, ...], only: tuple[str, ...] | None,
               tu_threadgroup: bool) -> str:
    """The compilable translation unit: unwanted host-named instantiations dropped, address-space
    markers blanked, threadgroup locals rewritten."""
    marked = pre_text
    if only is not None:
        marked = drop_instantiations(marked, host_names, lambda name: _wanted(name, only))
    plain = finalize(marked)
    # Without a `threadgroup` word or collective outside the shim there is nothing to rewrite
    # (and the rewrite costs seconds on a large translation unit).
    return blank_threadgroup(_rewrite_threadgroup_locals(plain) if tu_threadgroup else plain)


def _wanted(name: str, only: tuple[str, ...]) -> bool:
    """Whether host name `name` matches one of the fnmatch patterns `only`."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in only)


def _cache_key(source: Path, display: str, *, compiler: Compiler, include_dirs: tuple[Path, ...],
               metal_version: int, only: tuple[str, ...] | None,
               extra_flags: tuple[str, ...]) -> tuple[str, str, tuple[Path, ...]]:
    """The compiler version, cache key and cache roots of `source` compiled with `extra_flags`.

    Raises CompileError when the source holds host-only C++ (the shader policy)."""
    source_bytes = source.read_bytes()
    check_shader_policy(source_bytes.decode("utf-8", errors="replace"), display)
    version = cache.compiler_version(compiler)
    flags = [*preprocess_flags(compiler, metal_version), *compile_flags(compiler), *extra_flags]
    if only is not None:
        flags.append("only=" + ",".join(sorted(set(only))))
    key = cache.source_key(source_bytes, flags=flags, compiler_version=version,
                           include_dirs=include_dirs, shim_dir=SHIM_DIR)
    return version, key, (source.parent, *include_dirs)


def _preprocessed(source: Path, display: str, *, compiler: Compiler, include_dirs: tuple[Path, ...],
                  metal_version: int, sandbox: Sandbox) -> tuple[Preprocessed, dict[str, str], bool]:
    """`source` preprocessed in `sandbox`, the path renames for its diagnostics, and whether the
    translation unit uses threadgroup memory; raises CompileError when the preprocessor fails."""
    renames = {str(source): display}
    pre, stderr = preprocess(source, compiler=compiler, include_dirs=include_dirs, metal_version=metal_version,
                             sandbox=sandbox)
    if pre is None:
        raise compile_error(parse_diagnostics(stderr, renames), stderr, what=display)
    return pre, renames, _tu_uses_threadgroup(finalize(pre.text))


def check(source: Path, display: str, *, compiler: Compiler, include_dirs: tuple[Path, ...],
          metal_version: int, cache_dir: Path, sandbox: Sandbox, only: tuple[str, ...] | None = None) -> int:
    """Type-check `source` with every (or each `only`) host-named kernel instantiated, without
    generating code; returns the number of kernels checked, raises CompileError. The preprocessor
    and the compiler run in `sandbox`.

    A success is remembered in the cache like a build (same key rules), so an unchanged file and
    headers are not checked twice."""
    _, key, roots = _cache_key(source, display, compiler=compiler, include_dirs=include_dirs,
                               metal_version=metal_version, only=only, extra_flags=("-fsyntax-only",))
    hit = cache.lookup_manifest(cache_dir, key, roots)
    if hit is not None:
        return int(hit.get("checked", 0))  # type: ignore[call-overload]
    cache.prepare(cache_dir)
    pre, renames, tu_threadgroup = _preprocessed(source, display, compiler=compiler, include_dirs=include_dirs,
                                                 metal_version=metal_version, sandbox=sandbox)
    text = _unit_text(pre.text, pre.host_names, only, tu_threadgroup)
    count = sum(1 for h in pre.host_names if only is None or _wanted(h.name, only))
    with tempfile.TemporaryDirectory(prefix=scratch_prefix("check")) as tmp:
        unit = Path(tmp) / ("shader.ii" if _takes_ii(compiler) else "shader.cpp")
        unit.write_bytes(text.encode("utf-8", "surrogateescape"))  # the source's own bytes
        proc = sandbox.run([*_syntax_argv(compiler), *compile_flags(compiler), "-fsyntax-only", str(unit)],
                           env=scrubbed_env(), writable=(Path(tmp), *compiler.scratch_dirs()))
    if proc.returncode != 0:
        raise compile_error(parse_diagnostics(proc.stderr, renames), proc.stderr, what=display)
    headers = [f for f in pre.files if f.resolve() != source.resolve()]
    cache.store_manifest(cache_dir, key, {"checked": count}, headers, roots)
    return count


def build(source: Path, display: str, *, compiler: Compiler, include_dirs: tuple[Path, ...],
          metal_version: int, cache_dir: Path, sandbox: Sandbox,
          only: tuple[str, ...] | None = None) -> Built:
    """Compile `source` (shown as `display` in diagnostics) into a shared library, or load it.

    The preprocessor, the compiler and the worker reading the kernel table run in `sandbox`
    (see Note [the shader sandbox]); a cache hit runs nothing.

    `only`: host-name patterns (fnmatch); other host-named instantiations are dropped before
    compiling, which is what makes a large kernel file cheap when one op is under test."""
    version, key, roots = _cache_key(source, display, compiler=compiler, include_dirs=include_dirs,
                                     metal_version=metal_version, only=only, extra_flags=())
    hit = cache.lookup(cache_dir, key, roots)
    if hit is not None:
        return Built(so_path=hit[0], manifest=hit[1])
    cache.prepare(cache_dir)  # a full or read-only cache fails here, before minutes of compiling
    pre, renames, tu_threadgroup = _preprocessed(source, display, compiler=compiler, include_dirs=include_dirs,
                                                 metal_version=metal_version, sandbox=sandbox)
    # Binding a kernel's parameters costs milliseconds of Python each: only the wanted host names
    # are bound (4,000 of them took longer than compiling the few a test needs).
    host_names = pre.host_names if only is None else \
        tuple(h for h in pre.host_names if _wanted(h.name, only))
    specs, problems = build_specs(pre.text, host_names, tu_threadgroup=tu_threadgroup)
    if only is not None:
        specs = [s for s in specs if _wanted(s.info.host_name, only)]
    text = _unit_text(pre.text, pre.host_names, only, tu_threadgroup)
    runtime = _runtime_object(compiler, cache_dir, version, sandbox)
    with tempfile.TemporaryDirectory(prefix=scratch_prefix("build")) as tmp:
        # g++ and clang++ take preprocessed C++ as `.ii`; zig's driver only knows `.cpp`, where the
        # line markers still work and no macro is left to expand.
        unit = Path(tmp) / ("shader.ii" if _takes_ii(compiler) else "shader.cpp")
        unit.write_bytes((text + "\n" + generate_harness(specs)).encode("utf-8", "surrogateescape"))
        so_tmp = Path(tmp) / "shader.so"
        proc = sandbox.run([*compiler.argv, *compile_flags(compiler), "-shared", "-o", str(so_tmp),
                            str(unit), str(runtime), "-lm", "-lpthread"], env=scrubbed_env(),
                           writable=(Path(tmp), *compiler.scratch_dirs()), readable=(runtime,))
        if proc.returncode != 0:
            raise compile_error(parse_diagnostics(proc.stderr, renames), proc.stderr, what=display)
        warnings = [d for d in parse_diagnostics(proc.stderr, renames) if d.severity == "warning"]
        worker = Worker(so_tmp, sandbox=sandbox)
        try:
            meta = worker.start()
        finally:
            worker.close()
        manifest = _manifest(specs, meta, problems, warnings)
        headers = [f for f in pre.files if f.resolve() != source.resolve()]
        so_path = cache.store(cache_dir, key, so_tmp, manifest, headers, roots)
    return Built(so_path=so_path, manifest=manifest)


def _manifest(specs: list[KernelSpec], meta: list[dict[str, object]], problems: list[str],
              warnings: list[Diagnostic]) -> dict[str, object]:
    """The cached description of a library: kernel infos plus each parameter's element type."""
    kernels = []
    for spec, info in zip(specs, meta):
        params = info["params"]
        kernels.append({"info": spec.info.to_dict(), "param_types": [p[0] for p in params],  # type: ignore[union-attr]
                        "param_sizes": [p[1] for p in params]})  # type: ignore[union-attr]
    return {"kernels": kernels, "problems": problems, "warnings": [w.to_dict() for w in warnings]}
