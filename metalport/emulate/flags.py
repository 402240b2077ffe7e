"""Compiler flags that mirror the GPU: per-op half rounding, wrapping integers, FMA contraction."""

from __future__ import annotations

import functools
import platform
from pathlib import Path

from metalport.emulate.compiler import Compiler


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    """The CPU feature flags from /proc/cpuinfo (empty when unavailable)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def preprocess_flags(compiler: Compiler, metal_version: int) -> list[str]:
    """Flags for the `-E` pass: language level, the Metal macros and marker mode.

    libc++ (clang, zig) pulls `<cmath>` into `<atomic>` for old code's sake, and its global
    `::rint(float)`, `::sin(float)`… would tie with `metal::` under the shaders' `using namespace
    metal`; `_LIBCPP_REMOVE_TRANSITIVE_INCLUDES` leaves it out (libstdc++ ignores the macro)."""
    return ["-std=c++17", f"-D__METAL_VERSION__={metal_version}", "-D__METAL__=1", "-DMSHIM_PREPROCESS",
            "-D_LIBCPP_REMOVE_TRANSITIVE_INCLUDES"]


def compile_flags(compiler: Compiler) -> list[str]:
    """Flags for compiling the preprocessed shader into a shared library.

    Half arithmetic is rounded after every operation (clang needs
    `-ffloat16-excess-precision=none`; g++ does so in C++), signed integers wrap as on the GPU
    (`-fwrapv`), and `a*b+c` contracts to an FMA where the CPU has one, as torch's vectorised
    CPU kernels do.

    An unsuffixed floating literal is a `float`, as in Metal (which has no `double`): g++ has
    `-fsingle-precision-constant`; clang has the same rule as OpenCL's
    `-cl-single-precision-constant`, which its front end applies to C++ too.  So `x < 0 ? M_PI_F : 0.0`
    is a float expression, `sizeof(0.5) == 4`, and overloads see a float, not a double.  A
    compiler without such a flag would leave the literal a double; the shim's `double` overloads
    (returning float) then keep the common cases compiling.
    """
    flags = ["-std=c++17", "-O1", "-fPIC", "-fwrapv", "-fno-strict-aliasing", "-fno-math-errno",
             "-fvisibility=hidden"]
    if any("zig" in part for part in compiler.argv):
        # zig's driver turns on UBSan traps by default: a division by zero would become SIGILL.
        flags += ["-fno-sanitize=all"]
    if compiler.family == "clang":
        flags += ["-Xclang", "-ffloat16-excess-precision=none", "-Xclang", "-cl-single-precision-constant",
                  "-Wno-unknown-attributes", "-Wno-ignored-attributes", "-Wno-gnu-anonymous-struct", "-Wno-nested-anon-types",
                  "-Wno-c++20-extensions", "-Wno-unused-value", "-Wno-gnu-line-marker", "-Wno-return-type"]
    else:
        flags += ["-fsingle-precision-constant", "-Wno-attributes", "-Wno-ignored-attributes", "-Wno-unused-value",
                  "-Wno-return-type"]
    if platform.machine() in ("x86_64", "AMD64"):
        cpu = _cpu_flags()
        if "fma" in cpu:
            flags += ["-mfma", "-ffp-contract=fast"]
            if compiler.family == "gcc":
                # g++ forms FMAs only with expensive optimisations (on at -O2); clang does at -O1.
                flags += ["-fexpensive-optimizations"]
        if "f16c" in cpu:
            flags += ["-mf16c"]
    else:
        flags += ["-ffp-contract=fast"]
    return flags
