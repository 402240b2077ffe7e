"""What a port makes obsolete in the tree: xfail entries the registration fixes (and the gradient
xfail a forward-only port adds), the legacy code with the helpers and macros only it used, its
`_native.h` include and MPSGraph registrations, and the OpInfo names the tests key them by. Used
by every launch kind's part of `plan_port`.

Note [legacy helpers]: MPSGraph ops of one family often share a helper (`addc_mul_div_out_mps`
serves `addcmul_out_mps` and `addcdiv_out_mps`). A port removes the helper with its last user: the
first port of the family keeps it, the port that removes its last caller removes it too.
"""

from __future__ import annotations

import re

from metalport.checkout.layout import Checkout
from metalport.checkout.sources import ImplKind
from metalport.port.plan.functors import METAL_TYPES
from metalport.port.write.host import remove_legacy
from metalport.port.tree.reuse import orphaned_macros
from metalport.port.tree.resolve import Resolution


Decorator = tuple[str, str, int, int]  # (file, OpInfo name, first line, last line) in the base
Narrowed = tuple[str, str, int, int, tuple[str, ...]]  # ... and the torch dtypes the decorator keeps


def obsolete_xfails(res: Resolution, metal: tuple[str, ...], *, names: list[str] | None = None,
                    narrow_to: tuple[str, ...] | None = None
                    ) -> tuple[tuple[tuple[str, str, int], ...], tuple[tuple[str, str, int, tuple[str, ...]], ...]]:
    """(entries the port makes obsolete, entries it only narrows: (list, key, line, dtypes kept)).

    An entry naming dtypes keeps those the port does not register (Metal types `metal`). One
    meaning every dtype (`"logspace": None`) ends with the port's registrations, unless the port
    leaves some OpInfo dtypes out (`narrow_to`, a spec port's `left_out_dtypes`): then it is
    narrowed to them. `names` adds the entries keyed by the port's OpInfo names (a spec's OpInfo may
    be named unlike the op: `_ctc_loss`'s is nn.functional.ctc_loss).
    """
    named = tuple(x for n in names or () for x in res.sources.xfails_for(n) if x not in res.xfails)
    removed, narrowed, every = [], [], []
    for x in (*res.xfails, *named):
        kept = tuple(d for d in x.dtypes if METAL_TYPES.get(d) not in metal) if x.dtypes is not None else ()
        if x.dtypes is None and narrow_to:
            every.append((x.list_name, x.op, x.where.line, narrow_to))
        elif not kept:
            removed.append((x.list_name, x.op, x.where.line))
        elif x.dtypes is not None and len(kept) < len(x.dtypes):
            narrowed.append((x.list_name, x.op, x.where.line, kept))
    return tuple(removed), tuple(narrowed + every)


def opinfo_dtypes(names: list[str]) -> tuple[str, ...] | None:
    """The CPU dtypes (torch names) of the first OpInfo called one of `names`; None when none is."""
    from metalport.torch_facts import opinfo_facts

    facts = opinfo_facts()
    return next((facts[n].cpu_dtypes for n in names if n in facts), None)


def left_out_dtypes(metal: tuple[str, ...], names: list[str]) -> tuple[str, ...]:
    """The torch dtypes of the op's OpInfo (CPU) that MPS could hold but the port does not register."""
    return tuple(d for d in opinfo_dtypes(names) or () if d in METAL_TYPES and METAL_TYPES[d] not in metal)


GRAD_LIST = "XFAILLIST_GRAD"


def grad_xfails(res: Resolution, opinfo: str | None, reason: str | None, metal: tuple[str, ...]
                ) -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
    """The XFAILLIST_GRAD entry of a forward-only port (a spec's `grad_xfail` reason): its OpInfo's
    gradient checks would reach the missing backward on MPS. None when the tree has the entry."""
    if reason is None or opinfo is None:
        return ()
    if any(x.list_name == GRAD_LIST and x.op == opinfo for x in res.sources.xfails):
        return ()
    from metalport.port.spec.model import METAL_DTYPES

    return ((GRAD_LIST, opinfo, tuple(dict.fromkeys(METAL_DTYPES[t] for t in metal)), reason),)


def obsolete_decorators(checkout: Checkout, op: str, names: list[str], metal: tuple[str, ...], *,
                        narrow_to: tuple[str, ...] | None = None) -> tuple[tuple[Decorator, ...], tuple[Narrowed, ...]]:
    """(the MPS skip/expectedFailure decorators of the op's OpInfos the port makes obsolete: (file,
    OpInfo, first line, last line); those it narrows: (..., torch dtypes kept)).

    A decorator naming only dtypes the port registers (Metal types `metal`) is obsolete. With
    `narrow_to` None (a pointwise port) one naming no dtypes is obsolete too and nothing is
    narrowed; a spec port passes the OpInfo dtypes it leaves out: a decorator naming no dtypes is
    narrowed to them (obsolete when there are none), one naming some registered dtypes keeps the
    others. A backward op's OpInfo is its forward's, whose decorators are about the forward: none."""
    from metalport.port.write.decorators import OPINFO_FILES, find_decorators

    if op.endswith("_backward"):
        return (), ()
    removed, narrowed = [], []
    for rel in OPINFO_FILES:
        path = checkout.root / rel
        if not path.is_file():
            continue
        for d in find_decorators(path.read_text(encoding="utf-8"), names, path=rel):
            if d.test == "test_dtypes" and d.dtypes is None and _mps_listed_unregistered(d.opinfo, metal):
                continue  # Note [test_dtypes stays]
            kept = (narrow_to or ()) if d.dtypes is None else \
                tuple(t for t in d.dtypes if METAL_TYPES.get(t) not in metal)
            if not kept:
                removed.append((rel, d.opinfo, d.first_line, d.last_line))
            elif narrow_to is not None and (d.dtypes is None or len(kept) < len(d.dtypes)):
                narrowed.append((rel, d.opinfo, d.first_line, d.last_line, tuple(sorted(kept))))
    return tuple(removed), tuple(narrowed)


# Note [test_dtypes stays]: an expected `test_dtypes` failure on MPS says the OpInfo lists dtypes for
# MPS that do not run (softplus lists bool and the integer types). After a port that registers
# none of them they still do not run, so the test still fails and its expectedFailure stays.
def _mps_listed_unregistered(opinfo: str, metal: tuple[str, ...]) -> tuple[str, ...]:
    """The dtypes OpInfo `opinfo` lists for MPS (a Metal type exists) that `metal` lacks."""
    from metalport.torch_facts import opinfo_facts

    info = opinfo_facts().get(opinfo)
    if info is None:
        return ()
    listed = (t for t in info.mps_dtypes if t != "float64")
    return tuple(sorted(t for t in listed if t in METAL_TYPES and METAL_TYPES[t] not in metal))


def opinfo_names(op: str, res: Resolution) -> list[str]:
    """The OpInfo names the op's tests may go by: its xfail keys, `op`, `nn.functional.op`, and
    `special.x`/`linalg.x`/`fft.x` for a `special_x`/`linalg_x`/`fft_x` op."""
    names = [x.op for x in res.xfails] + [op, f"nn.functional.{op}"]
    for prefix in ("special_", "linalg_", "fft_"):
        if op.startswith(prefix):
            names.append(prefix[:-1] + "." + op[len(prefix):])
    return names


def removed_legacy(checkout: Checkout, res: Resolution
                   ) -> tuple[tuple[tuple[str, str], ...], str | None, tuple[tuple[str, str], ...]]:
    """(every (file, function) of legacy MPS code the port removes: the `.mm` functions of the op's
    MPS-only rows, then the helpers only they used; the `#include <ATen/ops/<op>_native.h>` line
    removed with them, None while a legacy file still names a kernel of the op's rows after the
    removal; (file, macro) of each legacy `#define` whose last invocation goes)."""
    own = tuple((f.where.file, f.name) for f in res.legacy)
    texts = _without_legacy(checkout, res, own)
    legacy = own + _orphaned_helpers(checkout, res, own, texts)
    include = f"#include <ATen/ops/{res.op}_native.h>"
    kernels = {d.kernel for e in res.entries for d in e.dispatch}
    holding = [after.replace(include, "") for _, before, after in texts if include in before]
    if not holding or any(re.search(rf"\b{re.escape(k)}\b", rest) for rest in holding for k in kernels):
        include = None
    macros = tuple((rel, m) for rel, before, after in _without_legacy(checkout, res, legacy)
                   for m in orphaned_macros(before, after))
    return legacy, include, macros


def _without_legacy(checkout: Checkout, res: Resolution,
                    legacy: tuple[tuple[str, str], ...]) -> list[tuple[str, str, str]]:
    """(file, text, text without the legacy functions) of each file holding legacy code."""
    out = []
    for rel in dict.fromkeys(f for f, _ in legacy):
        before = (checkout.root / rel).read_text(encoding="utf-8")
        after = before
        for name in (n for f, n in legacy if f == rel):
            after = remove_legacy(after, res.op, name, path=rel, drop_include=False)
        out.append((rel, before, after))
    return out


def _orphaned_helpers(checkout: Checkout, res: Resolution, legacy: tuple[tuple[str, str], ...],
                      texts: list[tuple[str, str, str]]) -> tuple[tuple[str, str], ...]:
    """(file, name) of each helper function the removed legacy code (`texts`: `_without_legacy`) was
    the last user of (Note [legacy helpers]): defined in the same `.mm` file, called by the removed
    code, and named nowhere else in any `.mm` file once that code is gone."""
    gone = {name for _, name in legacy}
    found: list[tuple[str, str]] = []
    for rel, before, after in texts:
        others = "\n".join(p.read_text(encoding="utf-8", errors="replace")
                           for p in sorted(checkout.mps_operations.glob("*.mm")) if p != checkout.root / rel)
        for fn in res.sources.functions:
            if fn.where.file != rel or fn.impl_func or fn.name in gone:
                continue
            word = re.compile(rf"\b{re.escape(fn.name)}\b")
            if len(word.findall(before)) == len(word.findall(after)):
                continue  # the removed code did not call it
            rest = remove_legacy(after, res.op, fn.name, path=rel, drop_include=False)
            if not word.search(rest) and not word.search(others):
                found.append((rel, fn.name))
    return tuple(found)


def legacy_registrations(checkout: Checkout, res: Resolution) -> tuple[tuple[str, int, str], ...]:
    """(file, line, text) of each MPSGraph registration of the route's stubs: the port replaces it
    (a macro-made one, `REGISTER_MPS_UNARY_STUB(acosh, acosh);`, goes as its invocation line)."""
    out = []
    for reg in res.registrations:
        if reg.kind is not ImplKind.GRAPH:
            continue
        lines = (checkout.root / reg.where.file).read_text(encoding="utf-8").splitlines()
        out.append((reg.where.file, reg.where.line, lines[reg.where.line - 1]))
    return tuple(out)
