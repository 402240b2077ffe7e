"""`make_fixture_checkout`: a small git repository in PyTorch's layout, written in our own words.

Ops: `heaviside` runs on MPSGraph (`MPS: heaviside_out_mps`), `atan2` shares its structured kernel
with MPS and has a Metal functor, `logaddexp` has an MPS-only native Metal kernel, `hypot` has no
MPS kernel, `square` is composite. tags.yaml and c10/metal come from the installed wheel.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from metalport.checkout import Checkout

NATIVE_FUNCTIONS = """\
# A few entries in the shape of PyTorch's registry.

- func: heaviside.out(Tensor self, Tensor values, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  device_check: NoCheck   # TensorIterator
  dispatch:
    CPU, CUDA: heaviside_out
    MPS: heaviside_out_mps
  tags: pointwise

- func: heaviside(Tensor self, Tensor values) -> Tensor
  device_check: NoCheck   # TensorIterator
  variants: function, method
  structured_delegate: heaviside.out
  tags: pointwise

- func: atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU, CUDA, MPS: atan2_out
  tags: [core, pointwise]

- func: atan2(Tensor self, Tensor other) -> Tensor
  variants: method, function
  structured_delegate: atan2.out
  tags: [core, pointwise]

- func: logaddexp.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU, CUDA: logaddexp_out
    MPS: logaddexp_out_mps
  tags: pointwise

- func: logaddexp(Tensor self, Tensor other) -> Tensor
  variants: method, function
  structured_delegate: logaddexp.out
  tags: pointwise

- func: hypot.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU, CUDA: hypot_out
  tags: pointwise

- func: hypot(Tensor self, Tensor other) -> Tensor
  structured_delegate: hypot.out
  variants: method, function
  tags: pointwise

- func: square(Tensor self) -> Tensor
  variants: function, method
"""

BINARY_OPS_H = """\
#pragma once
// Stubs of the fixture's binary ops.
#include <ATen/native/DispatchStub.h>

namespace at::native {
using structured_binary_fn = void (*)(TensorIteratorBase&);
DECLARE_DISPATCH(structured_binary_fn, atan2_stub)
DECLARE_DISPATCH(structured_binary_fn, heaviside_stub)
DECLARE_DISPATCH(structured_binary_fn, hypot_stub)
DECLARE_DISPATCH(structured_binary_fn, logaddexp_stub)
} // namespace at::native
"""

BINARY_OPS_MM = """\
// Fixture host code: heaviside builds an MPSGraph, logaddexp calls a Metal kernel.
#include <ATen/native/mps/OperationUtils.h>
#include <ATen/ops/heaviside_native.h>
#include <ATen/ops/logaddexp_native.h>

namespace at::native {

TORCH_IMPL_FUNC(heaviside_out_mps)(const Tensor& self, const Tensor& values, const Tensor& output) {
  using namespace mps;
  @autoreleasepool {
    MPSGraph* graph = make_mps_graph();
    MPSGraphTensor* zero = [graph constantWithScalar:0.0 dataType:getMPSDataType(self)];
    (void)zero;
    runMPSGraph(getCurrentMPSStream(), graph, nil, nil);
  }
}

TORCH_IMPL_FUNC(logaddexp_out_mps)(const Tensor& self, const Tensor& other, const Tensor& output) {
  mps::exec_binary_kernel(*this, "logaddexp");
}

} // namespace at::native
"""

BINARY_KERNEL_MM = """\
// Fixture stub registration: atan2 runs the shared structured kernel through its stub.
#include <ATen/native/BinaryOps.h>
#include <ATen/native/mps/OperationUtils.h>

namespace at::native {
static void atan2_mps_kernel(TensorIteratorBase& iter) {
  mps::exec_binary_kernel(iter, "atan2");
}

REGISTER_DISPATCH(atan2_stub, &atan2_mps_kernel)
} // namespace at::native
"""

BINARY_KERNEL_METAL = """\
// Fixture shaders: one functor per op, instantiated by a registration macro.
#include <c10/metal/indexing.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;

struct atan2_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    return static_cast<T>(::metal::precise::atan2(float(a), float(b)));
  }
};

struct logaddexp_functor {
  template <typename T>
  inline T operator()(const T a, const T b) {
    const float x = float(a), y = float(b);
    return static_cast<T>(::metal::max(x, y) + ::metal::log(1 + ::metal::exp(-::metal::abs(x - y))));
  }
};

REGISTER_BINARY_OP(atan2, float, float);
REGISTER_BINARY_OP(atan2, half, half);
REGISTER_BINARY_OP(logaddexp, float, float);
"""

COMMON_MPS = """\
# Fixture xfail lists; like the real file, they exist only when MPS is available.
import torch


def mps_ops_modifier(ops):
    if torch.backends.mps.is_available():
        UNIMPLEMENTED_XFAILLIST: dict[str, list | None] = {
            "heaviside": None,
            "hypot": [torch.float16, torch.bfloat16],
        }
        SKIPLIST = {
            "logaddexp": [torch.bfloat16],
        }
    return ops
"""

GIT = ("git", "-c", "user.name=Fixture", "-c", "user.email=fixture@localhost", "-c", "commit.gpgsign=false",
       "-c", "init.defaultBranch=main")


def _wheel() -> tuple[Path, Path]:
    import importlib.util

    torchgen = Path(importlib.util.find_spec("torchgen").origin).parent
    torch = Path(importlib.util.find_spec("torch").origin).parent
    return torchgen / "packaged/ATen/native", torch


def make_fixture_checkout(tmp_path: Path, name: str = "pytorch") -> Checkout:
    """Build the fixture repository under `tmp_path / name` with one commit and return it."""
    root = tmp_path / name
    native = root / "aten/src/ATen/native"
    packaged, torch_dir = _wheel()
    files = {
        native / "native_functions.yaml": NATIVE_FUNCTIONS,
        native / "BinaryOps.h": BINARY_OPS_H,
        native / "mps/operations/BinaryOps.mm": BINARY_OPS_MM,
        native / "mps/operations/BinaryKernel.mm": BINARY_KERNEL_MM,
        native / "mps/kernels/BinaryKernel.metal": BINARY_KERNEL_METAL,
        root / "torch/testing/_internal/common_mps.py": COMMON_MPS,
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    shutil.copyfile(packaged / "tags.yaml", native / "tags.yaml")
    shutil.copytree(torch_dir / "include/c10/metal", root / "c10/metal")
    for argv in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "fixture checkout")):
        subprocess.run([*GIT, *argv], cwd=root, check=True, capture_output=True, timeout=60)
    return Checkout(root)
