"""Host check: type-check PyTorch's MPS Objective-C++ host files (`.mm`) off a Mac.

`check_file` compiles one `.mm` with `-fsyntax-only` against the checkout's headers, the MPS
declarations torchgen makes from its registry (`mpsdecls`), the torch wheel's headers and our
SDK declaration shim (`shim/`); `touched` finds the `.mm` files a port touches; `classify_base`
names what a base tree that does not type-check is missing.
"""

from metalport.hostcheck.check import HostCheck, check_file, default_cache_dir

__all__ = ["HostCheck", "check_file", "default_cache_dir"]
