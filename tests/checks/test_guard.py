"""CPU references that crash their process are dropped and counted, never fatal."""

from __future__ import annotations

import torch

from metalport.checks.judge.guard import Crashed, Refused, needs_guard, run_guarded


def _extremes(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    info = torch.iinfo(dtype)
    vals = [info.min, -1, 0, 1, info.max]
    a = torch.tensor(vals, dtype=dtype).repeat_interleave(len(vals))
    return a, torch.tensor(vals, dtype=dtype).repeat(len(vals))


def test_a_crashing_reference_is_reported_and_the_rest_survive() -> None:
    a, b = _extremes(torch.int32)
    out = run_guarded([lambda: torch.lcm(a, b), lambda: torch.gcd(a[:3], b[:3]),
                       lambda: torch.add(a, torch.ones(2))])
    assert out[0] == Crashed("SIGFPE")
    assert torch.equal(out[1], torch.gcd(a[:3], b[:3]))
    assert isinstance(out[2], Refused) and out[2].kind == "RuntimeError"


def test_only_signed_integers_at_their_minimum_are_guarded() -> None:
    a, _ = _extremes(torch.int16)
    assert needs_guard([torch.zeros(2), a])
    assert not needs_guard([torch.zeros(2), torch.zeros(2, dtype=torch.bool), torch.zeros(1, dtype=torch.cfloat),
                            torch.arange(-5, 5), torch.tensor([0, 255], dtype=torch.uint8)])


def test_a_launch_spec_case_gets_its_reference_as_an_elementwise_case_does() -> None:
    """A spec's case (a Call with no operand slots, a tensor list among its arguments) is guarded
    when it can trap, its float32 subnormals are flushed first (as the GPU reads them), and a
    refusal carries torch's first line (the host's check must say the same)."""
    from metalport.checks.cases.case import Case
    from metalport.checks.host.runner import references
    from metalport.checks.cases.samples import Call

    a, b = _extremes(torch.int32)
    tiny = torch.tensor([1e-40, 1.0], dtype=torch.float32)
    crashing = Case("lcm", Call(torch.ops.aten.lcm.default, (a, b), {}, (), None), "random")
    listed = Case("list", Call(torch.ops.aten._foreach_exp.default, ([tiny, torch.ones(2)],), {}, (), None), "random")
    refused = Case("take", Call(torch.ops.aten.take.default, (torch.ones(3), torch.tensor([7])), {}, (), None),
                   "held-out")
    out = references([c.call for c in (crashing, listed, refused)])
    assert out[0] == Crashed("SIGFPE")
    assert tiny[0].item() == 0.0 and torch.equal(out[1][0], torch.tensor([1.0, 2.718281828459045]))
    assert isinstance(out[2], Refused) and out[2].message.startswith("out of range: tried to access index 7")


def test_a_reference_that_does_not_finish_is_stopped_and_the_rest_still_run() -> None:
    # torch CPU's shifted Chebyshev polynomials loop n times: n = 2^127 from the every-magnitude set
    import time

    out = run_guarded([lambda: torch.ones(2), lambda: time.sleep(60), lambda: torch.zeros(1, dtype=torch.uint16)],
                      per_call_s=1.0)
    assert torch.equal(out[0], torch.ones(2))
    assert out[1] == Crashed("did not finish within 1 s")
    assert out[2].dtype == torch.uint16 and out[2].tolist() == [0]  # torch cannot unpickle its own uint16
