"""Metal-on-CPU emulation tier: so far only compiler discovery."""

from metalport.emulate.compiler import Compiler, find_compiler

__all__ = ["Compiler", "find_compiler"]
