"""metalport: port PyTorch operators to native Metal kernels for Apple Silicon (MPS)."""

from metalport.errors import MetalportError

__version__ = "0.1.0"
__all__ = ["MetalportError", "__version__"]
