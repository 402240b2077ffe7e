import torch

from metalport.checks.hostmodel import OutputSpec, metal_type_name, output_spec, strided_args


def test_output_spec_promotes_and_broadcasts():
    a = torch.ones(3, 1, dtype=torch.int32)
    b = torch.ones(4, dtype=torch.float16)
    assert output_spec(a, b) == OutputSpec(torch.float16, (3, 4))
    assert output_spec(a) == OutputSpec(torch.int32, (3, 1))
    assert output_spec(a, int_to_float=True) == OutputSpec(torch.float32, (3, 1))


def test_output_spec_python_scalar_does_not_widen():
    a = torch.ones(2, dtype=torch.float16)
    assert output_spec(a, 2.5).dtype == torch.float16


def test_strided_args_broadcast_has_zero_stride():
    t = torch.ones(3, 1, dtype=torch.float32)
    assert strided_args(t, (3, 4)) == ([4, 3], [0, 4])


def test_metal_names():
    assert metal_type_name(torch.bfloat16) == "bfloat"
    assert metal_type_name(torch.int64) == "long"
