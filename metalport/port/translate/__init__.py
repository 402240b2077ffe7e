"""The translate porter: a CPU kernel's scalar lambda as a Metal functor (Note [translate porter])."""

from metalport.port.translate.porter import ScalarParam, Translation, translate_kernel, translate_stub

__all__ = ["ScalarParam", "Translation", "translate_kernel", "translate_stub"]
