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


def test_host_name_flavours_exist_in_the_wheels_macros():
    from pathlib import Path

    import pytest

    from metalport.checks.hostmodel import FLAVOURS, host_name

    text = (Path(torch.__file__).parent / "include/c10/metal/indexing.h").read_text()
    for flavour in FLAVOURS:
        assert f'#NAME "_{flavour}_"' in text, flavour
    assert host_name("neg", "dense", torch.float16) == "neg_dense_half_half"
    assert host_name("abs", "strided_castout", torch.float32, torch.int32) == "abs_strided_castout_int"
    with pytest.raises(ValueError, match="unknown kernel flavour 'ilp'"):
        host_name("neg", "ilp", torch.float32)
