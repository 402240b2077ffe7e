"""Deterministic recipes: the functor table and the mechanical text edits of a pointwise port."""

from metalport.port.plan.functors import Family, FunctorRecipe, dtypes_for, recipe_table
from metalport.port.write.host import HostStub, insert_stub, remove_legacy
from metalport.port.write.metal import insert_functor
from metalport.port.plan.model import NEEDS_LLM
from metalport.port.write.xfail import XfailEntry, XfailRemoval, find_xfails, remove_xfails

__all__ = [
    "NEEDS_LLM", "Family", "FunctorRecipe", "HostStub", "XfailEntry", "XfailRemoval", "dtypes_for",
    "find_xfails", "insert_functor", "insert_stub", "recipe_table", "remove_legacy", "remove_xfails",
]
