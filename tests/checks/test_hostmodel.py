import pytest
import torch

from metalport.checks.host.families import classify
from metalport.checks.host.backend import Buffer, Const
from metalport.checks.host.elementwise import (MissingKernel, metal_type_name, result_dtype,
                                               plan_binary, plan_ternary, plan_ternary_alpha, plan_unary)
from metalport.checks.host.iteration import build_iteration
from metalport.checks.host.poison import poisoned
from metalport.checks.cases.samples import ExecConvention


def test_result_dtype_promotes_across_operands():
    a = torch.ones(3, 1, dtype=torch.int32)
    b = torch.ones(4, dtype=torch.float16)
    assert result_dtype(a, b) == torch.float16
    assert result_dtype(a) == torch.int32


def test_result_dtype_python_scalar_does_not_widen():
    a = torch.ones(2, dtype=torch.float16)
    assert result_dtype(a, 2.5) == torch.float16


def test_metal_names():
    assert metal_type_name(torch.bfloat16) == "bfloat"
    assert metal_type_name(torch.int64) == "long"


def test_the_flavours_the_host_model_asks_for_exist_in_the_wheels_macros():
    from pathlib import Path

    text = (Path(torch.__file__).parent / "include/c10/metal/indexing.h").read_text()
    for flavour in ("dense", "strided", "dense_cast", "strided_cast", "dense_castout", "strided_castout",
                    "dense_scalar", "dense_scalar_lhs"):
        assert f'#NAME "_{flavour}_"' in text, flavour


# Launch planning: which kernel the modelled MPS host asks for, with which arguments and grid.

def _iter(*inputs, out=torch.float32):
    return build_iteration(inputs, out, poisoned)


def _unary_names(op: str, pairs) -> set[str]:
    names = set()
    for o, i in pairs:
        names |= {f"{op}_dense_{o}_{i}", f"{op}_dense_scalar_{o}_{i}", f"{op}_strided_{o}_{i}",
                  f"{op}_dense_castout_{i}", f"{op}_strided_castout_{i}"}
    return names


def test_iteration_allocates_the_output_torch_allocates():
    cases = [(torch.ones(3, 4).t(),), (torch.ones(3, 4).t(), torch.ones(4, 3)),
             (torch.ones(2, 3, 4).permute(2, 0, 1),), (torch.ones(5, 1), torch.ones(5)),
             (torch.ones(4, 6)[:, ::2],), (torch.ones(3, 1, 5).expand(3, 4, 5),)]
    for inputs in cases:
        ref = torch.add(*inputs) if len(inputs) == 2 else torch.neg(inputs[0])
        assert _iter(*inputs).output.stride() == ref.stride()


def test_unary_flavours_and_arguments():
    names = _unary_names("neg", [("float", "float"), ("half", "half")])
    x = torch.ones(10)
    small = plan_unary("neg", names, _iter(x), x)
    assert (small.kernel, small.args, small.threads) == ("neg_dense_scalar_float_float", (Buffer(0), Buffer(1)), (10,))
    big = torch.ones((1 << 18) + 3)
    ilp = plan_unary("neg", names, _iter(big), big)
    assert ilp.kernel == "neg_dense_float_float" and ilp.threads == (((1 << 18) + 6) // 4,)
    assert ilp.args[2] == Const("uint", ((1 << 18) + 3,))
    t = torch.ones(3, 5, dtype=torch.float16)[:, ::2]
    strided = plan_unary("neg", names, _iter(t, out=torch.float16), t)
    assert strided.kernel == "neg_strided_half_half" and strided.threads == (3, 3)
    assert strided.args[2:] == (Const("long*", (3, 3)), Const("long*", (4, 10)), Const("long*", (2, 6)),
                                Const("uint", (2,)))


def test_unary_castout_fallback_and_missing_kernel():
    names = _unary_names("sign", [("float", "float")])
    x = torch.ones(4)
    castout = plan_unary("sign", names, _iter(x, out=torch.float16), x)
    assert castout.kernel == "sign_dense_castout_float" and castout.args[2] == Const("uint2", (2, 5))
    i = torch.ones(4, dtype=torch.int32)
    with pytest.raises(MissingKernel) as err:
        plan_unary("sign", names, _iter(i, out=torch.int32), i)
    assert err.value.kernel == "sign_dense_castout_int"


def _binary_names(op: str, t: str, alpha: str = "") -> set[str]:
    flavours = ("dense", "dense_ilp4", "strided", "dense_cast", "strided_cast", "dense_broadcast",
                "dense_broadcast_rhs", "dense_broadcast_cast", "dense_broadcast_rhs_cast", "dense_scalar",
                "dense_scalar_lhs", "dense_scalar_cast", "dense_scalar_lhs_cast")
    return {f"{op}_{f}_{t}_{t}{alpha}" for f in flavours}


def test_binary_scalar_broadcast_and_strided_choices():
    names = _binary_names("atan2", "float")
    a, s = torch.ones(5), torch.tensor(2.0)
    rhs = plan_binary("atan2", names, _iter(a, s), a, s, common=torch.float32)
    assert rhs.kernel == "atan2_dense_scalar_float_float" and rhs.args == (Buffer(0), Buffer(1), Buffer(2))
    lhs = plan_binary("atan2", names, _iter(s, a), s, a, common=torch.float32)
    assert lhs.kernel == "atan2_dense_scalar_lhs_float_float"
    rows, row = torch.ones(4, 6), torch.ones(6)
    bc = plan_binary("atan2", names, _iter(rows, row), rows, row, common=torch.float32)
    assert bc.kernel == "atan2_dense_broadcast_float_float" and bc.args[3] == Const("long", (6,))
    bcl = plan_binary("atan2", names, _iter(row, rows), row, rows, common=torch.float32)
    assert bcl.kernel == "atan2_dense_broadcast_rhs_float_float"
    col = torch.ones(4, 1)
    strided = plan_binary("atan2", names, _iter(rows, col), rows, col, common=torch.float32)
    assert strided.kernel == "atan2_strided_float_float"
    assert strided.args[3:] == (Const("long*", (6, 4)), Const("long*", (4, 24)), Const("long*", (4, 24)),
                                Const("long*", (0, 4)), Const("uint3", (2, 6, 6)))


def test_binary_casts_follow_the_host():
    names = _binary_names("add", "half", "_half") | _binary_names("add", "float", "_float")
    h = torch.ones(5, dtype=torch.float16)
    double = torch.tensor(2.5, dtype=torch.float64)
    launch = plan_binary("add", names, _iter(h, double, out=torch.float16), h, double, common=torch.float16,
                         alpha=2)
    assert launch.kernel == "add_dense_scalar_cast_half_half_half"
    assert launch.args[3:] == (Const("half", (2.0,)), Const("uint4", (2, 4, 5, 6)))
    f, i = torch.ones(5), torch.tensor(3)
    promoted = plan_binary("add", names, _iter(f, i), f, i, common=torch.float32, alpha=1)
    assert promoted.kernel == "add_dense_scalar_float_float_float" and promoted.tensors[2].dtype == torch.float32


def test_ternary_cast_and_strided():
    names = {"lerp_dense_float_float", "lerp_dense_cast_float", "lerp_strided_float_float", "lerp_strided_cast_float"}
    a, w = torch.ones(6), torch.ones(6, dtype=torch.float16)
    cast = plan_ternary("lerp", names, _iter(a, a, w), a, a, w)
    assert cast.kernel == "lerp_dense_cast_float"
    assert cast.args[4:] == (Const("uint3", (4, 4, 2)), Const("uint3", (6, 6, 5)))
    s = torch.tensor(0.5, dtype=torch.float64)
    strided = plan_ternary("lerp", names, _iter(a, a, s), a, a, s)
    assert strided.kernel == "lerp_strided_float_float" and strided.args[-1] == Const("uint", (1,))


def test_family_from_host_names():
    assert classify(_unary_names("neg", [("float", "float"), ("int", "int")]), "neg") == \
        (ExecConvention.UNARY, [torch.float32, torch.int32])
    assert classify(_binary_names("atan2", "half"), "atan2") == (ExecConvention.BINARY, [torch.float16])
    assert classify(_binary_names("sub", "long", "_long"), "sub") == (ExecConvention.BINARY_ALPHA, [torch.int64])
    assert classify({"lerp_dense_float_float", "lerp_strided_cast_float"}, "lerp") == (ExecConvention.TERNARY, [torch.float32])
    assert classify({"hardshrink_dense_float_float_float", "hardshrink_strided_float_float_float"}, "hardshrink") \
        == (ExecConvention.UNARY_ALPHA, [torch.float32])
    assert classify(_binary_names("add_relu", "float"), "add") is None
    assert classify({"reduce_sum_float"}, "reduce_sum") is None


def test_complex_alpha_is_packed_as_float2():
    names = _binary_names("sub", "float2", "_float2")
    z = torch.ones(4, dtype=torch.complex64)
    launch = plan_binary("sub", names, _iter(z, z, out=torch.complex64), z, z, common=torch.complex64, alpha=2)
    assert launch.kernel == "sub_dense_float2_float2_float2" and launch.args[3] == Const("float2", (2.0, 0.0))


def test_negative_alpha_wraps_into_unsigned_types():
    names = _binary_names("sub", "uchar", "_uchar")
    u = torch.ones(4, dtype=torch.uint8)
    launch = plan_binary("sub", names, _iter(u, u, out=torch.uint8), u, u, common=torch.uint8, alpha=-3)
    assert launch.args[3] == Const("uchar", (253,))


def test_unary_alpha_arguments_follow_the_kernel_signature():
    names = {"hardshrink_dense_half_half_half", "hardshrink_strided_half_half_half"}
    h = torch.ones(4, 6, dtype=torch.float16)
    dense = plan_unary("hardshrink", names, _iter(h, out=torch.float16), h, alpha=0.5, alpha_type=torch.float16)
    assert dense.args == (Buffer(0), Buffer(1), Const("half", (0.5,))) and dense.threads == (24,)
    assert plan_unary("hardshrink", names, _iter(h.t(), out=torch.float16), h.t(), alpha=0.5).kernel == \
        "hardshrink_dense_half_half_half"  # a transposed dense tensor iterates as one dense dimension
    t = h[:, :3]
    strided = plan_unary("hardshrink", names, _iter(t, out=torch.float16), t, alpha=0.5, alpha_type=torch.float16)
    assert strided.kernel == "hardshrink_strided_half_half_half" and strided.threads == (3, 4)
    assert strided.args[2:] == (Const("long*", (3, 4)), Const("long*", (2, 12)), Const("long*", (2, 6)),
                                Const("uint", (2,)), Const("half", (0.5,)))


def test_ternary_strided_cast_packs_all_four_types():
    names = {"where_strided_cast_float", "where_dense_cast_float"}
    cond, x = torch.ones(3, 1, dtype=torch.bool), torch.ones(3, 4)
    launch = plan_ternary("where", names, _iter(cond, x, x), cond, x, x)
    assert launch.kernel == "where_strided_cast_float"
    assert launch.args[4:] == (Const("long*", (4, 3)), Const("long*", (4, 16)), Const("long*", (0, 1)),
                               Const("long*", (4, 16)), Const("long*", (4, 16)), Const("uint", (2,)),
                               Const("uint4", (11, 6, 6, 6)))


def test_integer_alpha_goes_as_the_one_type_the_library_registers():
    # polygamma's host passes n as ScalarType::Int: the library registers `_int` kernels only.
    names = {"polygamma_dense_float_float_int", "polygamma_strided_float_float_int",
             "polygamma_dense_float_char_int"}
    x = torch.ones(5, dtype=torch.float32)
    launch = plan_unary("polygamma", names, _iter(x), x, alpha=2, alpha_type=torch.float32)
    assert launch.kernel == "polygamma_dense_float_float_int" and launch.args[2] == Const("int", (2,))
    c = torch.ones(5, dtype=torch.int8)
    assert plan_unary("polygamma", names, _iter(c), c, alpha=1, alpha_type=torch.float32).kernel == \
        "polygamma_dense_float_char_int"


def test_params_struct_alpha_carries_the_dtype_defaults_as_float():
    names = {"nan_to_num_dense_half_half_NanToNumParams_float", "nan_to_num_strided_half_half_NanToNumParams_float"}
    assert classify(names, "nan_to_num") == (ExecConvention.UNARY_ALPHA, [torch.float16])
    h = torch.ones(4, dtype=torch.float16)
    launch = plan_unary("nan_to_num", names, _iter(h, out=torch.float16), h, alpha=(None, 1e6, None))
    assert launch.kernel == "nan_to_num_dense_half_half_NanToNumParams_float"
    # nan defaults to 0, neginf to the dtype's lowest; a replacement is converted to half first (1e6 -> inf)
    assert launch.args[2] == Const("NanToNumParams_float", (0.0, float("inf"), -65504.0), fields="float")


_ADDCMUL = {"addcmul_dense_half_half_float", "addcmul_strided_cast_half_float",
            "addcmul_dense_half2_half2_float2", "addcmul_strided_cast_half2_float2"}


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_ternary_alpha_goes_to_the_kernel_at_opmath_precision():
    h = torch.ones(2, 3, dtype=torch.float16)
    dense = plan_ternary_alpha("addcmul", _ADDCMUL, _iter(h, h, h, out=torch.float16), h, h, h,
                               common=torch.float16, alpha=1e-8)
    assert dense.kernel == "addcmul_dense_half_half_float"  # 1e-8 is 0 in half, not in float
    assert dense.args == (Buffer(0), Buffer(1), Buffer(2), Buffer(3), Const("float", (1e-8,))) and dense.threads == (6,)
    z = torch.ones(4, dtype=torch.complex32)
    cplx = plan_ternary_alpha("addcmul", _ADDCMUL, _iter(z, z, z, out=torch.complex32), z, z, z, common=torch.complex32, alpha=2j)
    assert cplx.kernel == "addcmul_dense_half2_half2_float2" and cplx.args[4] == Const("float2", (0.0, 2.0))


def test_ternary_alpha_strided_cast_reads_each_input_at_its_type():
    h = torch.ones(3, 4, dtype=torch.float16)
    s = torch.tensor(0.5, dtype=torch.float64)  # a 0-dim double operand is bound as float
    launch = plan_ternary_alpha("addcmul", _ADDCMUL, _iter(h, h, s, out=torch.float16), h, h, s, common=torch.float16, alpha=3)
    assert launch.kernel == "addcmul_strided_cast_half_float"
    assert launch.args[4:] == (Const("float", (3.0,)), Const("long*", (12,)), Const("long*", (2,)),
                               Const("long*", (2,)), Const("long*", (2,)), Const("long*", (0,)),
                               Const("uint4", (1, 5, 5, 6)), Const("uint", (5,)))
    # A wider `out=` keeps the common dtype's kernel, which casts on store (the output's type code last).
    wide = plan_ternary_alpha("addcmul", _ADDCMUL, _iter(h, h, h, out=torch.float32), h, h, h, common=torch.float16,
                              alpha=3)
    assert wide.kernel == "addcmul_strided_cast_half_float" and wide.args[-1] == Const("uint", (6,))
    with pytest.raises(MissingKernel, match="addcmul_strided_cast_float_float"):
        f = torch.ones(3)
        plan_ternary_alpha("addcmul", _ADDCMUL, _iter(f, f, f[:1]), f, f, f[:1], common=torch.float32, alpha=1)


def test_ternary_alpha_family_from_host_names():
    assert classify(_ADDCMUL, "addcmul") == (ExecConvention.TERNARY_ALPHA, [torch.float16, torch.complex32])
