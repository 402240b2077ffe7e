"""Port kinds on the torch 2.13 wheel's real registry and ATen headers, and on inline registries.

Expectations written from reading the wheel's native_functions.yaml (dispatch rows, tags) and its
`DECLARE_DISPATCH` headers (ReduceOps.h, TensorCompare.h, BatchLinearAlgebra.h, ...).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from metalport.backlog import BacklogItem, Family, Status, scan_backlog
from metalport.checkout import Checkout
from metalport.checkout.routing import StubCall, StubRoute
from metalport.checkout.sources import StubDecl, Where
from metalport.port.tree.kinds import Classification, Kind, Porter, classify, entry_comments, porter_for
from metalport.port.spec.recipes import recipe_ops
from metalport.registry.model import parse_registry


@pytest.fixture(scope="module")
def items(wheel_workspace: Checkout) -> dict[str, BacklogItem]:
    return {item.op: item for item in scan_backlog(wheel_workspace)}


# op: (kind, stub, rows, reason)
REAL = {
    # ReduceOps.h: `using reduce_fn = void(*)(TensorIterator &)`; argmax/prod carry the reduction tag
    "argmax": (Kind.REDUCTION_STUB, "argmax_stub", False,
               "argmax_out reaches argmax_stub through a reduction TensorIterator"),
    "prod": (Kind.REDUCTION_STUB, "prod_stub", False, "prod reaches prod_stub through a reduction TensorIterator"),
    "linalg__powsum": (Kind.REDUCTION_STUB, "powsum_stub", False,
                       "linalg__powsum reaches powsum_stub through a reduction TensorIterator"),
    # aminmax_stub takes tensors and (int64_t dim, bool keepdim); aminmax is tagged reduction
    "aminmax": (Kind.REDUCTION_STUB, "aminmax_stub", False, "aminmax_out calls aminmax_stub to reduce over dim (keepdim)"),
    "max": (Kind.REDUCTION_STUB, "max_stub", False, "max_out calls max_stub to reduce over dim (keepdim)"),
    # std's kernel calls std_var_stub, which no name in the wheel's headers gives away
    "std": (Kind.REDUCTION_STUB, None, False, "a reduction CPU and CUDA share (std); the tree does not show its stub"),
    # mode_fn is reduce_minmax_fn to the letter, but mode carries no reduction tag
    "mode": (Kind.CUSTOM_KERNEL, "mode_stub", False,
             "mode calls mode_stub(Tensor&, Tensor&, const Tensor&, int64_t, bool), no TensorIterator: "
             "MPS registers it with a kernel of its own"),
    "take": (Kind.CUSTOM_KERNEL, "take_stub", False,
             "take_out calls take_stub(TensorIterator & iter, const TensorBase& input), its iterator is not "
             "element-wise (the stub takes more operands): MPS registers it with a kernel of its own"),
    "heaviside": (Kind.POINTWISE_STUB, "heaviside_stub", False,
                  "heaviside_out reaches heaviside_stub through a pointwise TensorIteratorBase"),
    "adaptive_avg_pool3d_backward": (
        Kind.CUSTOM_KERNEL, None, True,
        "CPU (adaptive_avg_pool3d_backward_out_cpu) and CUDA (adaptive_avg_pool3d_backward_out_cuda) use different "
        "kernels: MPS gets `MPS: adaptive_avg_pool3d_backward_mps` rows"),
    "logspace": (Kind.CUSTOM_KERNEL, None, True,
                 "CPU (logspace_out) and CUDA (logspace_cuda_out) use different kernels: MPS gets `MPS: logspace_mps` rows"),
    "_foreach_add": (Kind.MULTI_TENSOR, None, False, "a multi-tensor op: one launch over the tensor list"),
    "_fused_adam": (Kind.MULTI_TENSOR, None, False, "a multi-tensor op: one launch over the tensor list"),
}

NOT_CANDIDATES = {
    "cudnn_convolution": "cuDNN op (a vendor library): no Metal kernel to write",
    "miopen_rnn": "MIOpen op (a vendor library): no Metal kernel to write",
    "_cslt_compress": "cuSPARSELt (a CUDA library): MPS has no counterpart",
    "_to_sparse_csr": "sparse-only: it works on sparse layouts, which a strided Metal kernel does not serve",
    "quantize_per_tensor": "quantized-only: it makes or reads quantized tensors (quantize)",
    "_nested_from_padded": "nested-tensor only: it works on nested tensors' buffers",
    "_test_optional_intlist": "a test-only op",
    "_foobar": "a test-only op",  # its registry comment says it is used in a test
    "geqrf": ("a solver: CPU runs LAPACK and CUDA cuSOLVER/MAGMA through geqrf_stub (BatchLinearAlgebra.h): "
              "no Metal kernel to write"),
    "_fused_dropout": "CUDA-only: no CPU kernel, so a port has no reference to be checked against",
    "square": "composite: it runs through other ops (on MPS too), so there is no kernel to port",
}


@pytest.mark.parametrize("op", sorted(REAL))
def test_real_ops_get_the_kind_their_rows_and_stub_show(items: dict[str, BacklogItem], op: str) -> None:
    kind = items[op].kind
    assert kind is not None
    assert (kind.kind, kind.stub, kind.rows, kind.reason) == REAL[op]
    assert items[op].ease is not None and items[op].porter is not None
    if items[op].status is not Status.SHARED:
        assert items[op].porter.porter in (Porter.RECIPE, Porter.LLM)


@pytest.mark.parametrize("op", sorted(NOT_CANDIDATES))
def test_real_non_candidates_say_why_and_are_not_ranked(items: dict[str, BacklogItem], op: str) -> None:
    item = items[op]
    assert item.kind is not None and item.kind.kind is Kind.NOT_A_CANDIDATE
    assert item.kind.reason == NOT_CANDIDATES[op]
    assert item.ease is None and not item.candidate
    assert item.porter is not None and (item.porter.porter, item.porter.reason) == (Porter.NONE, NOT_CANDIDATES[op])


def test_an_own_mps_kernel_is_never_a_vendor_library_op(items: dict[str, BacklogItem]) -> None:
    # CPU runs MKL and CUDA cuFFT, but MPS has its own _fft_c2c_mps: a kernel MPS can own.
    assert items["_fft_c2c"].kind is not None and items["_fft_c2c"].kind.kind is Kind.CUSTOM_KERNEL
    # MPS's own int4 matmul: int4pack is packed weights, not quantized tensors
    assert items["_weight_int4pack_mm"].kind is not None and items["_weight_int4pack_mm"].kind.candidate


def test_missing_ops_and_reductions_by_kind_on_the_wheel(items: dict[str, BacklogItem]) -> None:
    """The numbers the README's backlog section gives."""
    missing = [i for i in items.values() if i.status is Status.MISSING]
    assert len(missing) == 258
    assert Counter(i.kind.kind.value for i in missing if i.kind) == {
        "not-a-candidate": 118, "custom-kernel": 81, "multi-tensor": 49, "pointwise-stub": 8, "reduction-stub": 2}
    reductions = [i for i in items.values() if i.family is Family.REDUCTION and i.status is not Status.COMPOSITE]
    assert len(reductions) == 27
    assert Counter(i.kind.kind.value for i in reductions if i.kind) == {"reduction-stub": 21, "custom-kernel": 6}


YAML = """\
- func: fold_max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  dispatch:
    CPU, CUDA: fold_max_out
  tags: reduction

# Our test op: used in the tests only.
- func: _probe(Tensor self) -> Tensor
  dispatch:
    CPU: probe

- func: fold_mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
  dispatch:
    CPU, CUDA: fold_mode
"""
SAME_SIGNATURE = "Tensor&, Tensor&, const Tensor&, int64_t, bool"


def _route(kernel: str, stub: str) -> StubRoute:
    return StubRoute(kernel, (StubCall(stub, "all", None, (), "aten/src/ATen/native/Fold.cpp", 3),), False,
                     "aten/src/ATen/native/Fold.cpp", 1)


def test_a_tensor_taking_stub_is_a_reduction_only_for_a_tagged_op(tmp_path: Path) -> None:
    registry = parse_registry(YAML, tmp_path / "native_functions.yaml")
    where = Where("aten/src/ATen/native/Fold.h", 4)
    tagged = classify(registry.ops["fold_max"], _route("fold_max_out", "fold_max_stub"),
                      StubDecl("fold_max_stub", "fold_fn", where, SAME_SIGNATURE))
    untagged = classify(registry.ops["fold_mode"], _route("fold_mode", "fold_mode_stub"),
                        StubDecl("fold_mode_stub", "fold_fn", where, SAME_SIGNATURE))
    assert (tagged.kind, tagged.stub) == (Kind.REDUCTION_STUB, "fold_max_stub")
    assert (untagged.kind, untagged.stub) == (Kind.CUSTOM_KERNEL, "fold_mode_stub")
    probe = classify(registry.ops["_probe"], comments=entry_comments(registry))
    assert (probe.kind, probe.reason) == (Kind.NOT_A_CANDIDATE, "a test-only op")
    assert classify(registry.ops["_probe"]).kind is Kind.CUSTOM_KERNEL  # without the comment: a CPU-only op


def test_porter_follows_the_recipe_table() -> None:
    covered = recipe_ops()
    assert "heaviside" in covered
    kind = Classification("prod", Kind.REDUCTION_STUB, "prod reaches prod_stub", "prod_stub")
    assert porter_for(kind, covered=False).porter is Porter.LLM
    assert porter_for(kind, covered=True).porter is Porter.RECIPE
    with pytest.raises(ValueError, match="one line"):
        Classification("x", Kind.CUSTOM_KERNEL, "two\nlines")
