"""The conformance cases of an elementwise port's dtype row (`ElementwiseCases`, drawn by the one
driver `case.build_cases`): OpInfo samples, random draws and held-out cases, each labelled.

OpInfo samples are what test_mps.py's test_output_match runs. Random and held-out cases draw on
the op's reference numerics (`numerics`): in-domain random values, tiny magnitudes, every sample of
OpInfo's small / large / extremal value generators, values no PyTorch test checks, the edges of
`edges`, the special pairings of `specials` (Note [special pairings]), and layouts (strides,
broadcasting, empty and 0-dim tensors, threadgroup boundaries). Each case says whether a
divergence is one PyTorch accepts (Note [accepted divergences]) and whether it is judged at
small magnitudes (Note [small magnitudes]).

Note [small magnitudes]
test_mps compares float32 with atol 1e-5, so `log(1 + x)` for log1p passes every OpInfo sample:
at |x| = 1e-3 its error (~6e-8) is far below atol. Cases whose inputs are all tiny are judged
relative instead: atol drops to the dtype's smallest normal and the rtol stays test_mps's, so a
cancellation (log1p as log(1+x), expm1 as exp(x)-1) fails while a correctly rounded kernel passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from metalport.checks.cases.case import Case
from metalport.checks.cases.edges import edge_sets
from metalport.checks.host.backend import UnmodelledCall
from metalport.checks.cases.numerics import (Numerics, beyond_values, draw, draw_small, grid, numerics_for,
                                             tiny_values, value_sets)
from metalport.checks.cases.samples import (Call, ExecConvention, IteratorView, autograd_calls, bind, find_opinfos,
                                            opinfo_calls, schema_template, selector_values)
from metalport.checks.cases.specials import special_sets

RANDOM_CASES = 4


class ElementwiseCases:
    """The `CaseSource` of an elementwise port's dtype row: the OpInfo samples bound to the host's
    operand slots, and a template (`_Maker`) per selector value of the recorded calls.

    `selectors`: arguments whose value picks the host's kernel (Note [argument-selected kernels] in
    `hostcode`, div's rounding_mode): recorded calls passing them are bound, and random and held-out
    values are drawn for each value the OpInfo samples give them (layouts only for the first).
    `unset`: optional scalars the CPU kernel passes the stub as one Scalar, with the value it gives
    an unset one (Note [unset optionals at the stub] in `hostcode`)."""

    def __init__(self, family: ExecConvention, base: str, packet: Any, dtype: torch.dtype, gen: torch.Generator,
                 selectors: frozenset[str] = frozenset(), view: IteratorView | None = None,
                 unset: dict[str, float] | None = None) -> None:
        self.family, self.base, self.packet, self.dtype, self.gen = family, base, packet, dtype, gen
        self.selectors, self.view, self.unset = selectors, view, unset
        self.infos = find_opinfos(base)
        self.numerics = numerics_for(base, self.infos[0] if self.infos else None, family.arity)
        self._calls: dict[str, Call] = {}  # one template call per selector value ("" without selectors), first come

    def recorded(self) -> tuple[list[Case], list[str]]:
        # A backward over halves with no OpInfo of its own (glu_backward; its schema alone gives no call of
        # two shapes) is served the calls autograd makes on its forward's samples (`autograd_calls`).
        backward = autograd_calls(self.base, self.packet, self.dtype) \
            if not self.infos and self.family is ExecConvention.HALVES_BACKWARD else []
        skipped: list[str] = []
        cases: list[Case] = []
        recorded = [c for i in self.infos for c in opinfo_calls(i, self.packet, self.dtype)] + backward
        for k, (func, args, kwargs) in enumerate(recorded):
            try:
                call = bind(func, args, kwargs, self.family, self.selectors, self.view, self.unset)
            except UnmodelledCall as err:
                skipped.append(str(err))
                continue
            cases.append(Case(f"opinfo sample {k}", call, "opinfo"))
            key = _selected(call, self.selectors)
            if key not in self._calls and all(isinstance(t, torch.Tensor) and t.dim() > 0 for t in call.operands()):
                self._calls[key] = call
        for c in cases:
            self._calls.setdefault(_selected(c.call, self.selectors), c.call)
        return cases, skipped

    def templates(self) -> list[_Maker]:
        if not self._calls:
            overload = getattr(self.packet, "default", None) or getattr(self.packet, self.packet.overloads()[0])
            call = schema_template(self.view.op if self.view is not None else overload, self.family, self.dtype,
                                   self.gen, self.view, self.unset)
            if call is not None:
                self._calls[""] = call
        makers = [_Maker(call, self.numerics, self.gen, self.dtype, f" [{key}]" if key else "", layouts=n == 0)
                  for n, (key, call) in enumerate(self._calls.items())]
        return [m for m in makers if m.slots]  # no slots: every recorded call passes only Python numbers


def _selected(call: Call, selectors: frozenset[str]) -> str:
    """`rounding_mode='floor'`: the call's values of the selector arguments, "" without any."""
    return ", ".join(f"{k}={v!r}" for k, v in sorted(selector_values(call, selectors).items()))


class _Maker:
    """Builds random and held-out cases by replacing the template call's tensor operands."""

    def __init__(self, template: Call, numerics: Numerics, gen: torch.Generator, dtype: torch.dtype,
                 suffix: str = "", layouts: bool = True) -> None:
        self.template, self.numerics, self.gen, self.dtype = template, numerics, gen, dtype
        self.layouts = layouts  # held-out layout cases: for the first template only
        self.suffix = suffix  # the selector values of a template beside the first (` [rounding_mode='floor']`)
        self.slots = [i for i, s in enumerate(template.slots) if isinstance(template._get(s), torch.Tensor)]
        ops = template.operands()
        self.dtypes = [ops[i].dtype for i in self.slots]
        self.shapes = [tuple(ops[i].shape) for i in self.slots]
        self.strides = [ops[i].stride() for i in self.slots]

    def _case(self, label: str, values: Sequence[torch.Tensor], kind: str, force: str | None = None,
              accepted: str | None = None) -> Case:
        current = [self.template._get(s) for s in self.template.slots]
        for i, v in zip(self.slots, values):
            current[i] = v
        return Case(label + self.suffix, self.template.with_operands(current), kind, force, accepted)

    def _each(self, shape: Callable[[int], tuple[int, ...]] | tuple[int, ...],
              maker: Callable[..., torch.Tensor] = draw) -> list[torch.Tensor]:
        return [maker(shape(k) if callable(shape) else shape, dt, self.gen, self.numerics, k)
                for k, dt in enumerate(self.dtypes)]

    def random(self) -> list[Case]:
        """In-domain draws at the template's layout and at random sizes, tiny magnitudes, a 0-dim partner."""
        normal = self.numerics.accepted("normal", self.dtype)
        out = []
        for k in range(RANDOM_CASES):
            if k % 2 == 0:
                values = [_like(v, shape, stride) for v, shape, stride in
                          zip(self._each(lambda j: self.shapes[j]), self.shapes, self.strides)]
            else:
                n = int(torch.randint(1, 3000, (1,), generator=self.gen))
                values = self._each((n,))
            out.append(self._case(f"random {k}", values, "random", "ilp" if k % 4 == 1 else None, accepted=normal))
        if all(d.is_floating_point or d.is_complex for d in (self.dtype, *self.dtypes)):
            out.append(self._case("random small magnitudes", self._each((257,), draw_small), "random",
                                  accepted=self.numerics.accepted("small", self.dtype)))
        partner = _scalar_partner(self.dtype)
        if len(self.slots) >= 2 and partner is not None and self.dtypes[-1] == self.dtype:
            values = [draw((6, 5), dt, self.gen, self.numerics, k) for k, dt in enumerate(self.dtypes[:-1])]
            values.append(draw((), partner, self.gen, self.numerics, len(self.slots) - 1))
            case = self._case(f"random 0-dim {str(partner).removeprefix('torch.')} operand", values, "random",
                              accepted=normal)
            if _same_output_dtype(case.call, self.template):
                out.append(case)
        return out

    def held_out(self) -> list[Case]:
        """OpInfo's value sets (in and outside the domain), tiny and beyond values, edges and the
        special pairings (Note [special pairings] in `specials`), then layouts."""
        out = [c for kind in ("small", "large", "extremal") for c in self._value_set(kind)]
        if self.dtype.is_floating_point and all(d.is_floating_point for d in self.dtypes):
            tiny = [tiny_values(d) for d in self.dtypes]
            if len(tiny) == 3:
                tiny = [v[::3] for v in tiny]
            values = [self.numerics.restrict(t, k) for k, t in enumerate(grid(tiny, self.dtypes))]
            out.append(self._case("held-out tiny magnitudes", values, "held-out",
                                  accepted=self.numerics.accepted("small", self.dtype)))
        beyond = [beyond_values(d) for d in self.dtypes]
        if len(beyond) == 3:
            beyond = [v[:5] for v in beyond]
        # the largest finite values (and, for complex, infinite imaginary parts) are OpInfo's large and
        # extremal kinds: judged where PyTorch judges those
        beyond_scope = self.numerics.accepted("extremal" if self.dtype.is_complex else "large", self.dtype)
        out.append(self._case("held-out beyond the value sets", grid(beyond, self.dtypes), "held-out",
                              accepted=beyond_scope))
        out.append(self._case("held-out beyond the value sets, ILP kernel", grid(beyond, self.dtypes), "held-out",
                              "ilp", accepted=beyond_scope))
        edges = self._sets(edge_sets(self.template, self.dtypes, self.numerics, self.gen))
        return out + edges + self._sets(special_sets(self.dtypes)) + (self._layouts() if self.layouts else [])

    def _sets(self, sets: Sequence[tuple[str, list[torch.Tensor], str]]) -> list[Case]:
        """A held-out case per labelled value set (Note [edge cases] in `edges`, Note [special pairings]),
        judged where OpInfo judges the value set it names on a device."""
        return [self._case(f"held-out {label}", [self.numerics.restrict(t, k) for k, t in enumerate(values)],
                           "held-out", accepted=self.numerics.accepted(scope, self.dtype))
                for label, values, scope in sets]

    def _value_set(self, kind: str) -> list[Case]:
        """Every sample OpInfo's `kind` generator yields (the extremal one's NaN-propagation sample too)."""
        per_dtype = [value_sets(kind, d, self.numerics, self.gen) for d in self.dtypes]
        accepted = self.numerics.accepted(kind, self.dtype)
        out: list[Case] = []
        for n in range(min(len(s) for s in per_dtype)):
            sets = [s[n] for s in per_dtype]
            size = len(sets[0][0])
            raw = [torch.tensor((s[min(k, 1)] if k < 2 else list(reversed(s[0])))[:size], dtype=dt)
                   for k, (s, dt) in enumerate(zip(sets, self.dtypes))]
            restricted = [self.numerics.restrict(t, k) for k, t in enumerate(raw)]
            which = f" (sample {n})" if n else ""
            out.append(self._case(f"held-out {kind} values{which}", restricted, "held-out", accepted=accepted))
            if kind == "extremal" and not n:
                out.append(self._case(f"held-out {kind} values, ILP kernel", restricted, "held-out", "ilp",
                                      accepted=accepted))
            if any(not _same(a, b) for a, b in zip(raw, restricted)):
                out.append(self._case(f"held-out {kind} values outside the domain{which}", raw, "held-out",
                                      accepted=accepted))
        return out

    def _layouts(self) -> list[Case]:
        accepted = self.numerics.accepted("normal", self.dtype)
        n = len(self.slots)
        each = self._each

        def case(label: str, values: list[torch.Tensor], force: str | None = None) -> Case:
            return self._case(f"held-out {label}", values, "held-out", force, accepted=accepted)

        out = [case("empty", each((0,))), case("empty 2-d", each((2, 0, 3))), case("0-dim", each(()))]
        if n > 1:
            out += [case("0-dim and 1-d", each(lambda k: () if k else (5,))),
                    case("0-dim first", each(lambda k: (5,) if k else ()))]
        out += [case("transposed", [t.t() if k == 0 else t.t().contiguous() for k, t in enumerate(each((7, 5)))]),
                case("step-2 slice", [t[:, ::2] for t in each((6, 10))]),
                case("storage offset", [t[1:, 2:] for t in each((4, 9))]),
                case("expanded view", [t.expand(3, 5, 4) for t in each((3, 1, 4))])]
        if n > 1:
            shapes = [(5, 1), (1, 6), (5, 6)]
            out += [case("broadcast", each(lambda k: shapes[k % 3])),
                    case("broadcast rows", each(lambda k: (6,) if k else (4, 6))),
                    case("broadcast lhs", each(lambda k: (6,) if k == 0 else (4, 6)))]
        out += [case("threadgroup boundary 1025", each((1025,))),
                case("threadgroup boundary 2049, ILP kernel", each((2049,)), "ilp"),
                case("strided 40x33", [t[:, :33] for t in each((40, 34))])]
        return out


def _like(values: torch.Tensor, shape: tuple[int, ...], stride: tuple[int, ...]) -> torch.Tensor:
    """`values` laid out with the template operand's strides (views keep their layout)."""
    if not values.numel():
        return values
    try:
        return torch.empty_strided(shape, stride, dtype=values.dtype).copy_(values)
    except RuntimeError:
        return values


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values, NaN equal to NaN (complex32 compared through complex64)."""
    if a.is_complex():
        a, b = torch.view_as_real(a.to(torch.complex64)), torch.view_as_real(b.to(torch.complex64))
    return bool(torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                      and torch.equal(a.nan_to_num(), b.nan_to_num())))


def _same_output_dtype(call: Call, template: Call) -> bool:
    try:
        out, ref = call.run(), template.run()
    except (RuntimeError, ValueError, TypeError):
        return False
    return isinstance(out, torch.Tensor) and isinstance(ref, torch.Tensor) and out.dtype == ref.dtype


def _scalar_partner(dtype: torch.dtype) -> torch.dtype | None:
    """A 0-dim operand dtype that keeps `dtype` as the result but makes the host cast (or promote)."""
    if dtype == torch.bool or dtype.is_complex:
        return None
    if dtype.is_floating_point:
        return torch.int64 if dtype == torch.float32 else torch.float32
    return torch.int32 if dtype == torch.int64 else torch.int64


__all__ = ["RANDOM_CASES", "ElementwiseCases"]
