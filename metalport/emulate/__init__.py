"""Metal-on-CPU emulation tier: compile `.metal` files with the real c10/metal headers as host C++
and run their kernels in a worker process (see `library.compile_shader`)."""

from metalport.emulate.args import BufferOffset, TensorList
from metalport.emulate.compiler import Compiler, find_compiler
from metalport.emulate.diagnostics import Diagnostic
from metalport.emulate.kernels import KernelArg, KernelInfo
from metalport.emulate.library import (ShaderLibrary, check_file, checkout_include_dirs, compile_file,
                                       compile_shader, wheel_include_dir)

__all__ = ["BufferOffset", "Compiler", "Diagnostic", "KernelArg", "KernelInfo", "ShaderLibrary", "TensorList", "check_file", "checkout_include_dirs",
           "compile_file", "compile_shader", "find_compiler", "wheel_include_dir"]
