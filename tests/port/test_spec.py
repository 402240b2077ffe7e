"""Launch specs: the shipped recipes load and fit their ops' schemas; bad specs fail in one line
naming the field."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from metalport.errors import SpecError
from metalport.port.spec.model import check_holds, check_message, eval_threads, load_spec
from metalport.port.spec.schema import check_schema
from metalport.port.spec.recipes import spec_recipes

MODE = "mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)"
POWSUM = ("linalg__powsum(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None) -> Tensor")


@pytest.fixture
def mode() -> dict:
    return copy.deepcopy(spec_recipes()["mode"].spec.to_dict())


def test_shipped_recipes_load_round_trip_and_fit_the_wheel_schema() -> None:
    recipes = spec_recipes()
    assert {"mode", "linalg__powsum"} <= set(recipes)
    for name, schema in (("mode", MODE), ("linalg__powsum", POWSUM)):
        spec = recipes[name].spec
        assert load_spec(spec.to_dict()) == spec
        check_schema(spec, schema)
    assert recipes["mode"].spec.host_names[0] == "mode_float_float_long"


def test_yaml_text_loads() -> None:
    text = Path(spec_recipes()["mode"].path).read_text()
    assert load_spec(text).op == "mode"


def test_recipe_without_an_instantiation_for_a_dtype_row_is_refused(tmp_path: Path) -> None:
    src = spec_recipes()["mode"]
    (tmp_path / "mode.yaml").write_text(src.path.read_text())
    (tmp_path / "mode.metal").write_text(src.kernel_source.replace("REGISTER_MODE_OP(bool);", ""))
    with pytest.raises(SpecError, match=r"spec mode: dtypes: mode.metal has no kernel instantiation named "
                                        r"'mode_bool_bool_long'"):
        spec_recipes(tmp_path)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["geometry"].update(threadgroup=2048),
     "spec mode: geometry.threadgroup: 2048 threads is over the limit of 1024"),
    (lambda d: d["geometry"].update(grid="per-thing"),
     "spec mode: geometry.grid: 'per-thing' is not one of"),
    (lambda d: d.update(colour="red"), "spec mode: colour: unknown field"),
    (lambda d: d["dtypes"].append(["float", "float"]),
     "spec mode: dtypes[9]: 2 types for 1 input(s) and 2 output(s)"),
    (lambda d: d["dtypes"].append(["float", "float", "int"]),
     "spec mode: dtypes[9]: index output 'indices' must be long, not 'int'"),
    (lambda d: d["dtypes"].append(["float", "half", "long"]),
     "spec mode: dtypes[9]: output 'values' has dtype 'same' but 'half' is not the input's 'float'"),
    (lambda d: d["inputs"][0].update(layout="diagonal"), "spec mode: inputs[0].layout: 'diagonal' is not one of"),
    (lambda d: d["geometry"].update(threads="numel + secret"), "spec mode: geometry.threads: unknown name 'secret'"),
    (lambda d: d.pop("kernel"), "spec mode: kernel: missing"),
    (lambda d: d.update(checks=[{"require": "dim.bit_length() < 3", "message": "m"}]),
     "spec mode: checks[0].require: 'dim.bit_length() < 3' uses Call"),
    (lambda d: d.update(checks=[{"require": "self.stride(0) > 0", "message": "m"}]),
     "spec mode: checks[0].require: 'self.stride(0) > 0' uses Call"),
    (lambda d: d.update(checks=[{"require": "dim ==", "message": "m"}]),
     "spec mode: checks[0].require: 'dim ==' is not an expression"),
    (lambda d: d.update(checks=[{"require": "dim == 0", "message": "bad {dim:x}"}]),
     "spec mode: checks[0].message: {dim} is not a plain {expression}"),
    (lambda d: d.update(checks=[{"require": "dim == 0"}]), "spec mode: checks[0].message: missing"),
])
def test_malformed_spec_is_one_line_naming_the_field(mode: dict, edit, message: str) -> None:
    edit(mode)
    with pytest.raises(SpecError) as err:
        load_spec(mode)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["inputs"][0].update(arg="input"), "spec mode: inputs[0].arg: mode has no argument 'input'"),
    (lambda d: d["inputs"][0].update(arg="dim"), "spec mode: inputs[0].arg: 'dim' is int, not a Tensor"),
    (lambda d: (d["outputs"].pop(), [t.pop() for t in d["dtypes"]]),
     "spec mode: outputs: 1 output(s), but mode returns 2"),
    (lambda d: d["outputs"][1].update(name="index"),
     "spec mode: outputs[1].name: 'index', but mode calls its return 'indices'"),
    (lambda d: d["reduce"].update(dim="keepdim"), "spec mode: reduce.dim: 'keepdim' is bool of mode, not an int"),
    (lambda d: d["reduce"].update(keepdim="dim"), "spec mode: reduce.keepdim: 'dim' is int of mode, not a bool"),
    (lambda d: d["params"][0].update(**{"from": "self"}), "spec mode: params[0].from: 'self' is Tensor"),
    (lambda d: d["params"][0].update(**{"from": "nothing"}),
     "spec mode: params[0].from: 'nothing' is neither an argument of mode"),
    (lambda d: d["geometry"].update(grid="per-input-element"),
     "spec mode: geometry.grid: a per-input-element grid is larger than a reduced output"),
    (lambda d: d.update(overload="values"), "spec mode: overload: the spec is for mode.values, the schema is mode"),
    (lambda d: d.update(checks=[{"require": "self == 0", "message": "m"}]),
     "spec mode: checks[0]: 'self' is Tensor of mode; an expression reads int, bool and float arguments, len/max/min/sum of an int[]"),
    (lambda d: d.update(checks=[{"require": "dim == 0", "message": "bad {mood}"}]),
     "spec mode: checks[0]: 'mood' is no argument of mode"),
    (lambda d: d.update(checks=[{"require": "dim.size(0) == 0", "message": "m"}]),
     "spec mode: checks[0]: 'dim' is int of mode"),
])
def test_spec_not_matching_the_schema_fails_naming_the_field(mode: dict, edit, message: str) -> None:
    edit(mode)
    with pytest.raises(SpecError) as err:
        check_schema(load_spec(mode), MODE)
    assert str(err.value).startswith(message), str(err.value)


def test_threads_expression() -> None:
    assert eval_threads("max(num_slices, 3) * 2 - 1", {"num_slices": 5}) == 9


def test_argument_checks_evaluate_and_format_as_the_host_streams_them(mode: dict) -> None:
    mode["checks"] = [{"require": "not keepdim or (dim >= -1 and dim != 3)", "message": "no {dim} with keepdim={keepdim}"}]
    spec = load_spec(mode)
    check_schema(spec, MODE)
    assert load_spec(spec.to_dict()) == spec
    (check,) = spec.checks
    assert check_holds(check, {"dim": 3, "keepdim": False})
    assert check_holds(check, {"dim": 0, "keepdim": True})
    assert not check_holds(check, {"dim": 3, "keepdim": True})
    assert not check_holds(check, {"dim": -2, "keepdim": True})
    assert check_message(check, {"dim": 3, "keepdim": True}) == "no 3 with keepdim=1"


def test_checks_query_tensor_shapes_and_wrap_dims_as_the_host_does() -> None:
    import torch

    (check,) = spec_recipes()["mode"].spec.checks
    empty = torch.empty(5, 0)
    assert not check_holds(check, {"self": empty, "dim": -1})
    assert check_message(check, {"self": empty, "dim": -1}) == "mode(): Expected reduction dim 1 to have non-zero size."
    assert check_holds(check, {"self": empty, "dim": 0}) and check_holds(check, {"self": torch.tensor(1.0), "dim": 0})


CTC = ("_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, int blank=0, "
       "bool zero_infinity=False) -> (Tensor, Tensor)")


@pytest.fixture
def ctc() -> dict:
    return copy.deepcopy(spec_recipes()["_ctc_loss"].spec.to_dict())


def test_dims_shapes_and_param_expressions_evaluate_from_the_call(ctc: dict) -> None:
    import torch

    from metalport.checks.host.spec import bind_call, plan_launch

    spec = load_spec(ctc)
    check_schema(spec, CTC)
    assert load_spec(spec.to_dict()) == spec
    log_probs, targets = torch.randn(7, 3, 5), torch.randint(1, 5, (9,))
    launch = plan_launch(spec, bind_call(torch.ops.aten._ctc_loss.default, (log_probs, targets, [7, 5, 2], [4, 3, 2]), {}))
    assert [tuple(o.shape) for o in launch.outputs] == [(3,), (3, 7, 9)]  # states: 2 * max(target_lengths) + 1
    assert launch.threads == 3 * 128 and launch.group == 128  # one threadgroup per sequence
    params = dict(launch.params)
    assert params["input_lengths"] == [[7, 5, 2]] and params["target_lengths"] == [[4, 3, 2]]
    assert params["p"] == [7, 3, 5, 9, 0, 0]  # time, batch, labels, states, row (concatenated: 0), blank
    padded = plan_launch(spec, bind_call(torch.ops.aten._ctc_loss.default,
                                         (log_probs, torch.randint(1, 5, (3, 6)), [7, 5, 2], [4, 3, 2]), {}))
    assert dict(padded.params)["p"][4] == 6


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["outputs"][0].update(shape="dims:log_probs.size(1)"),
     r"spec _ctc_loss: outputs\[0\].shape: 'dims:log_probs.size\(1\)': dims takes a list"),
    (lambda d: d["outputs"][0].update(shape="dims:[open(log_probs)]"), r"spec _ctc_loss: outputs\[0\].shape: .* uses Call"),
    (lambda d: d["outputs"][1].update(compare="roughly"), r"spec _ctc_loss: outputs\[1\].compare: 'roughly' is not 'cpu-set'"),
    (lambda d: d["params"][2]["fields"][0].update({"from": "log_probs.size(0) ** 2"}),
     r"spec _ctc_loss: params\[2\].fields\[0\].from: .* uses Pow"),
    (lambda d: d["host"].update(shared="_ctc_loss.Tensor"), r"spec _ctc_loss: host.shared: expected a list"),
])
def test_malformed_dims_spec_is_one_line_naming_the_field(ctc: dict, edit, message: str) -> None:
    edit(ctc)
    with pytest.raises(SpecError, match=message) as err:
        load_spec(ctc)
    assert "\n" not in err.value.message


def test_dims_expression_naming_no_argument_does_not_fit_the_schema(ctc: dict) -> None:
    ctc["outputs"][0]["shape"] = "dims:[len(lengths)]"
    with pytest.raises(SpecError, match=r"spec _ctc_loss: outputs\[0\].shape: 'lengths' is no argument of _ctc_loss"):
        check_schema(load_spec(ctc), CTC)


@pytest.mark.parametrize("shape, message", [
    ("dims:[log_probs.__class__]", "'log_probs.__class__' uses Attribute"),
    ("dims:[log_probs.size]", "'log_probs.size' uses Attribute"),
    ("dims:[max(log_probs)]", "'log_probs' is Tensor of _ctc_loss; an expression reads int, bool and float"),
    ("dims:[len(blank)]", "'blank' is int of _ctc_loss"),
    ("dims:[input_lengths + 1]", "'input_lengths' is int[] of _ctc_loss"),
])
def test_an_untrusted_dims_expression_is_refused_before_it_runs(ctc: dict, shape: str, message: str) -> None:
    ctc["outputs"][0]["shape"] = shape
    with pytest.raises(SpecError, match=r"spec _ctc_loss: outputs\[0\].shape: ") as err:
        check_schema(load_spec(ctc), CTC)
    assert message in err.value.message


def test_an_expression_failing_for_one_call_is_a_spec_error_not_a_crash(ctc: dict) -> None:
    import torch

    from metalport.checks.host.spec import bind_call, plan_launch

    ctc["outputs"][0]["shape"] = "dims:[log_probs.size(1) // blank]"
    spec = load_spec(ctc)
    check_schema(spec, CTC)
    call = bind_call(torch.ops.aten._ctc_loss.default, (torch.randn(4, 2, 3), torch.ones(2, 1, dtype=torch.long),
                                                          [4, 4], [1, 1]), {})
    with pytest.raises(SpecError, match=r"spec _ctc_loss: 'log_probs.size\(1\) // blank' cannot be evaluated for "
                                        r"this call \(ZeroDivisionError"):
        plan_launch(spec, call)


def test_host_expressions_divide_as_cpp_does_even_past_two_to_the_53() -> None:
    from metalport.port.spec.expr import host_value

    assert host_value("a // b", {"a": -7, "b": 2}) == -3  # truncation toward zero, not floor
    assert host_value("a // b", {"a": 2**62 + 1, "b": 1}) == 2**62 + 1  # no float on the way


def test_grad_xfail_is_one_line_of_plain_text_keyed_by_the_opinfo(ctc: dict) -> None:
    assert load_spec(ctc).grad_xfail == "`_ctc_loss_backward` is not implemented for MPS"
    for bad in ('x"]: None}  # ', "two\nlines"):
        with pytest.raises(SpecError, match=r"spec _ctc_loss: grad_xfail: one line of plain text"):
            load_spec({**ctc, "grad_xfail": bad})
    with pytest.raises(SpecError, match=r"with an `opinfo` to key it"):
        load_spec({k: v for k, v in ctc.items() if k != "opinfo"})
