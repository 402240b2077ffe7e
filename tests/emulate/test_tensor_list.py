"""TensorList: a list of tensors passed to one kernel parameter as an array of device addresses,
as multi-tensor (`_foreach_*`) kernels take them: every tensor is read and written in place."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from metalport.emulate import TensorList, compile_shader
from metalport.errors import KernelArgumentError

# Our own kernel: row y of the grid scales tensor y of the list by 2 into the output list.
SOURCE = """
#include <metal_stdlib>
using namespace metal;
template <typename T> struct Address { device T* data; };
kernel void twice(constant Address<float>* inputs [[buffer(0)]],
                  constant Address<float>* outputs [[buffer(1)]],
                  constant long* numels [[buffer(2)]],
                  uint2 pos [[thread_position_in_grid]]) {
  if (long(pos.x) < numels[pos.y]) {
    outputs[pos.y].data[pos.x] = 2 * inputs[pos.y].data[pos.x];
  }
}
"""


@pytest.fixture(scope="module")
def lib(shader_cache: Path) -> object:
    return compile_shader(SOURCE, cache_dir=shader_cache)


def test_each_tensor_of_a_list_is_read_and_written_in_place(lib: object) -> None:
    xs = [torch.arange(n, dtype=torch.float32) for n in (5, 1, 64, 17)]
    outs = [torch.full_like(x, -1.0) for x in xs]
    xs_before = [x.clone() for x in xs]
    lib.twice(TensorList(xs), TensorList(outs, writable=True), torch.tensor([x.numel() for x in xs]),
              threads=(64, len(xs)), group_size=(64, 1))
    for x, before, out in zip(xs, xs_before, outs):
        assert torch.equal(out, 2 * before)
        assert torch.equal(x, before)  # a read-only list is not copied back


def test_a_read_only_list_is_not_copied_back(lib: object) -> None:
    xs = [torch.ones(3)]
    lib.twice(TensorList(xs), TensorList(xs), torch.tensor([3]), threads=(3, 1), group_size=(3, 1))
    assert torch.equal(xs[0], torch.ones(3))


def test_an_empty_list_is_an_argument_error(lib: object) -> None:
    with pytest.raises(KernelArgumentError, match="empty TensorList"):
        lib.twice(TensorList([]), TensorList([]), torch.tensor([0]), threads=(1, 1))
