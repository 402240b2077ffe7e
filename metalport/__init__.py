"""metalport: port PyTorch operators to native Metal kernels for Apple Silicon (MPS)."""

from metalport.deferred_imports import defer_package_init
from metalport.errors import MetalportError

defer_package_init()  # Note [deferred langsmith types]

__version__ = "0.1.0"
__all__ = ["MetalportError", "__version__"]
