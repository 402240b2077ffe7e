"""Fixture checkouts for conformance: our own kernel files in PyTorch's kernels directory layout.

Each checkout is built once per session; the emulator's shader cache makes later compiles of the
same source a reload.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from metalport.checks.conformance import ConformanceSession
from tests.checks.fixture_checkouts import FIXTURES, make_checkout


@pytest.fixture(scope="session")
def good_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Kernels for 15 ops, all correct."""
    return make_checkout(tmp_path_factory.mktemp("good"),
                         {"PointwiseKernel.metal": (FIXTURES / "pointwise.metal").read_text()})


@pytest.fixture(scope="session")
def mutant_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same 15 ops, each functor with one deliberate bug."""
    return make_checkout(tmp_path_factory.mktemp("mutant"),
                         {"PointwiseKernel.metal": (FIXTURES / "mutants.metal").read_text()})


@pytest.fixture(scope="session")
def broken_header_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Correct functors over a checkout whose indexing.h (the wheel's, edited here) has two bugs."""
    text = (Path(torch.__file__).parent / "include/c10/metal/indexing.h").read_text()
    tail = "    for (uint i = base; i < numel; ++i) {\n      output[i] = f(input[i]);"
    dense = "out[tid] = static_cast<res_t>(f(om_t(input[tid]), om_t(other[tid])));"
    assert text.count(tail) == 1 and text.count(dense) == 1, "the wheel's indexing.h changed; update the edits"
    text = text.replace(tail, "    for (uint i = base; i + 1 < numel; ++i) {\n      output[i] = f(input[i]);")
    text = text.replace(dense, "out[tid] = static_cast<res_t>(f(om_t(input[tid]), "
                               "om_t(other[tid > 0 ? tid - 1 : 0])));")
    return make_checkout(tmp_path_factory.mktemp("headers"),
                         {"SmallKernel.metal": (FIXTURES / "small.metal").read_text()},
                         {"indexing.h": text})


@pytest.fixture(scope="session")
def reduction_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernel that follows no exec_*_kernel convention."""
    return make_checkout(tmp_path_factory.mktemp("reduction"),
                         {"Reduce.metal": (FIXTURES / "reduction.metal").read_text()})


@pytest.fixture(scope="session")
def session() -> Iterator[ConformanceSession]:
    """Loaded kernel libraries shared by the tests (one worker per compiled file)."""
    with ConformanceSession() as shared:
        yield shared
