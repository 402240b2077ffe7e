"""A model's launch spec and kernel are untrusted: `model_spec_recipe` refuses, in one line naming
the field, anything off the op, off the MPS folders, including non-c10/metal headers, missing an
instantiation, or that the host writer cannot write (Note [model specs])."""

from __future__ import annotations

import pytest

from metalport.errors import SpecError
from metalport.port.spec.recipes import model_spec_recipe
from tests.agent.kernel_answers import ARGMIN_KERNEL, ARGMIN_SPEC, SHUFFLE_KERNEL, SHUFFLE_SPEC

ARGMIN = {"argmin": "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
          "argmin.out": "argmin.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)"}
SHUFFLE = {"channel_shuffle": "channel_shuffle(Tensor self, SymInt groups) -> Tensor"}


def test_a_correct_answer_becomes_a_recipe() -> None:
    recipe = model_spec_recipe("argmin", ARGMIN, ARGMIN_SPEC, ARGMIN_KERNEL)
    assert recipe.spec.host_names == ("argmin_float_long", "argmin_int_long")
    assert model_spec_recipe("channel_shuffle", SHUFFLE, SHUFFLE_SPEC, SHUFFLE_KERNEL).spec.kernel_name == \
        "channel_shuffle"


@pytest.mark.parametrize(("spec", "kernel", "message"), [
    (ARGMIN_SPEC.replace("op: argmin", "op: argmax"), ARGMIN_KERNEL,
     "spec argmax: op: this port is about argmin, not argmax"),
    (ARGMIN_SPEC.replace("kind: reduction-stub", "kind: reduction-stub\noverload: values"), ARGMIN_KERNEL,
     "spec argmin: overload: native_functions.yaml has no entry argmin.values"),
    (ARGMIN_SPEC.replace("mps/kernels/ArgMin.metal", "mps/kernels/../../../../../../.github/x.metal"), ARGMIN_KERNEL,
     "spec argmin: kernel.file: 'aten/src/ATen/native/mps/kernels/../../../../../../.github/x.metal' must be a "
     ".metal file directly under aten/src/ATen/native/mps/kernels/"),
    (ARGMIN_SPEC.replace("operations/ArgMin.mm", "operations/sub/ArgMin.mm"), ARGMIN_KERNEL,
     "spec argmin: host.file: 'aten/src/ATen/native/mps/operations/sub/ArgMin.mm' must be a .mm file directly "
     "under aten/src/ATen/native/mps/operations/"),
    (ARGMIN_SPEC, "#include </etc/passwd>\n" + ARGMIN_KERNEL,
     "spec argmin: kernel_source: line 1: #include </etc/passwd> is not allowed"),
    (ARGMIN_SPEC, ARGMIN_KERNEL.replace("kernel void\n  argmin", "kernel void\n  argmin_").replace(
        "kernel void argmin(", "kernel void arg_min("),
     "spec argmin: kernel.name: kernel_source defines no `kernel void argmin`"),
    (ARGMIN_SPEC, ARGMIN_KERNEL.replace("REGISTER_ARGMIN_OP(int);", ""),
     "spec argmin: dtypes: argmin.metal has no kernel instantiation named 'argmin_int_long'"),
    (ARGMIN_SPEC.replace("dtype: index", "dtype: same"), ARGMIN_KERNEL,
     "spec argmin: dtypes[0]: output 'out0' has dtype 'same' but 'long' is not the input's 'float'"),
    # a model may not leave elements out of the comparison (Note [unset outputs])
    (ARGMIN_SPEC.replace("dtype: index}", "dtype: index, compare: cpu-set}"), ARGMIN_KERNEL,
     "spec argmin: outputs[0].compare: a model's spec compares every output element"),
    (SHUFFLE_SPEC.replace("per-output-element, threads: output_numel", "per-input-element"), SHUFFLE_KERNEL,
     "spec channel_shuffle: geometry: hostgen writes per-output-element, per-slice and per-window launches only"),
])
def test_a_bad_answer_is_refused_in_one_line_naming_the_field(spec: str, kernel: str, message: str) -> None:
    op = "channel_shuffle" if "channel_shuffle" in message else "argmin"
    with pytest.raises(SpecError) as err:
        model_spec_recipe(op, SHUFFLE if op == "channel_shuffle" else ARGMIN, spec, kernel)
    assert err.value.message == message
    assert "\n" not in err.value.message
