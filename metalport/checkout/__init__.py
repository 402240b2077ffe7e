"""The repository model: layout, workspace creation and source scanners."""

from metalport.checkout.layout import Checkout, find_checkout
from metalport.checkout.sources import Sources, scan_sources
from metalport.checkout.workspace import NOTICE, init_workspace

__all__ = ["Checkout", "find_checkout", "init_workspace", "NOTICE", "Sources", "scan_sources"]
