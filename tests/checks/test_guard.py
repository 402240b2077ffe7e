"""CPU references that crash their process are dropped and counted, never fatal."""

from __future__ import annotations

import torch

from metalport.checks.guard import Crashed, Refused, needs_guard, run_guarded


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
