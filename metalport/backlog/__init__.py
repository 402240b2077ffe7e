"""The MPS backlog: where every ATen op's MPS support stands."""

from metalport.backlog.model import BacklogItem, Family, Status
from metalport.backlog.scan import scan_backlog

__all__ = ["BacklogItem", "Family", "Status", "scan_backlog"]
