"""The nodes of the migration graph, one module each; every node returns only the keys it changes."""

from metalport.graph.nodes.approve import approve
from metalport.graph.nodes.baseline import baseline
from metalport.graph.nodes.build import build
from metalport.graph.nodes.check import check
from metalport.graph.nodes.diagnose import diagnose
from metalport.graph.nodes.edit import edit
from metalport.graph.nodes.hostcheck import hostcheck
from metalport.graph.nodes.plan import plan
from metalport.graph.nodes.publish import publish
from metalport.graph.nodes.rebase import rebase
from metalport.graph.nodes.resolve import resolve
from metalport.graph.nodes.sandbox import sandbox
from metalport.graph.nodes.test import test

__all__ = ["approve", "baseline", "build", "check", "diagnose", "edit", "hostcheck", "plan", "publish", "rebase", "resolve", "sandbox", "test"]
