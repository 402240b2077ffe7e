"""A port's launch description: how the host side launches the port's kernel.

Note [one port model]: every `PortPlan` says how its kernel is launched in one typed field,
`launch_kind` (a `LaunchKind`), which only the planner decides (`port.plan.planner`); code downstream of
the plan matches on it (never on which planner made the plan, nor on which fields are set). A
pointwise port is a launch of the elementwise kind (`ElementwiseLaunch`): the TensorIterator stub
it registers, one functor per dtype row (the `REGISTER_*_OP` lines) and the `exec_*_kernel`
launcher of its host family. A spec port's launch is its `LaunchSpec` (kinds reduction-stub,
custom-kernel, multi-tensor: the plan carries the spec). A kernel port no recipe covers has no
launch yet (`LaunchKind.PENDING`): a model writes its kernel and spec, and the port is planned
again with them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any


class LaunchKind(Enum):
    """How a port's kernel is launched (Note [one port model])."""

    ELEMENTWISE = "elementwise"  # functors through the `exec_*_kernel` launchers of a TensorIterator stub
    REDUCTION = "reduction-stub"  # a launch spec's kernels, as its kind says
    CUSTOM = "custom-kernel"
    MULTI_TENSOR = "multi-tensor"
    PENDING = "pending"  # a kernel port no recipe covers: a model writes its kernel and launch spec

    @property
    def by_spec(self) -> bool:
        """True for the kinds whose launch is a `LaunchSpec` the plan carries."""
        return self in (LaunchKind.REDUCTION, LaunchKind.CUSTOM, LaunchKind.MULTI_TENSOR)


def listify(value: Any) -> Any:
    """Tuples (nested too) as lists, for JSON."""
    return [listify(v) for v in value] if isinstance(value, tuple) else value


ELEMENTWISE = LaunchKind.ELEMENTWISE.value
# Host family -> the MetalShaderLibrary launcher its stub calls (port.host).
LAUNCHERS = {"unary": "exec_unary_kernel", "binary": "exec_binary_kernel", "alpha": "exec_binary_kernel",
             "ternary": "exec_ternary_kernel", "ternary_alpha": "exec_ternary_kernel_with_alpha"}


@dataclass(frozen=True)
class ElementwiseLaunch:
    """A pointwise port as a launch: the host registers `stub` (and `extra_stubs`, served by the
    same function) and launches `kernel` through its family's launcher; the kernel file holds
    `functor`, registered once per dtype row (`registrations`, Metal types `dtypes`)."""

    stub: str | None  # "heaviside_stub"
    stub_header: str | None  # "ATen/native/BinaryOps.h"
    stub_params: str | None  # "TensorIteratorBase& iter"
    host_family: str | None  # "unary" | "binary" | "alpha" | "ternary" | "ternary_alpha"
    kernel: str | None  # the shader kernel the stub launches ("heaviside", or a routed "add_alpha")
    functor: str | None  # "heaviside_functor"; None when the port reuses the tree's kernel
    dtypes: tuple[str, ...] = ()
    registrations: tuple[str, ...] = ()
    extra_stubs: tuple[str, ...] = ()
    shared_launcher: bool = False  # Note [extend shared code at home]: `lib.exec_ternary_kernel`
    # Note [params route] (port/plan/params.py): the scalars the struct `params_type` carries
    params: tuple[tuple[str, str, bool, str], ...] = ()
    params_type: str | None = None

    kind = ELEMENTWISE

    @property
    def launcher(self) -> str | None:
        """The launcher the host stub calls (`exec_binary_kernel`); None without a host family."""
        if self.shared_launcher and self.host_family == "ternary_alpha":
            return "exec_ternary_kernel"
        if self.params_type is not None and self.host_family in ("unary", "binary"):
            return f"exec_{self.host_family}_kernel_with_params"
        return LAUNCHERS.get(self.host_family or "")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (`PortPlan.launch`), `kind` and `launcher` included for a reader."""
        return {"kind": self.kind, **{f.name: listify(getattr(self, f.name)) for f in fields(self)},
                "launcher": self.launcher}

    @classmethod
    def of_plan(cls, plan: Any) -> ElementwiseLaunch:
        """The elementwise launch of a pointwise `PortPlan`, from its stub, kernel and dtype rows."""
        return cls(plan.stub, plan.stub_header, plan.stub_params, plan.host_family, plan.kernel_name, plan.functor,
                   plan.dtypes, plan.registrations, tuple(s for s in plan.stubs if s != plan.stub),
                   plan.shared_launcher is not None, plan.params, plan.params_type)


__all__ = ["ELEMENTWISE", "LAUNCHERS", "ElementwiseLaunch", "LaunchKind", "listify"]
