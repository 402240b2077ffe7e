"""The evidence of a run as text and data: the plan in words, verdicts in numbers, the commit body.

Pure functions of the state (or of `run.json` / `plan.json` data), shared by the gate, the commit
and PR, and the run folder's evidence.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from metalport.checks.report import counts_text


def describe_plan(plan: dict) -> list[str]:
    """A plan (`PortPlan.to_dict()`), one line per step: registry rows, functor, host, removals."""
    lines = [f"{plan.get('op')} ({plan.get('status')}, {plan.get('family')}): "
             f"{'migrate from MPSGraph' if plan.get('migrate') else 'add native Metal support'}"]
    if plan.get("kind_reason"):
        lines.append(f"  kind {plan.get('kind')}: {plan['kind_reason']}")
    for row in plan.get("rows", []):
        after = row["after"].strip() or "(line removed)"
        if not row["before"]:
            lines.append(f"  registry {row['entry']}: add {after} after line {row['line']}")
            continue
        lines.append(f"  registry {row['entry']} line {row['line']}: {row['before'].strip()} -> {after}")
    if plan.get("spec"):
        from metalport.port import load_spec

        spec = load_spec(plan["spec"])
        lines.append(f"  {plan.get('kind')}: kernel {spec.kernel_name} in {spec.kernel_file} for "
                     f"{len(spec.dtypes)} instantiation(s); host {spec.host_function} in {spec.host_file}")
        lines += [f"  {line}" for line in plan.get("reuse") or ()]
        lines += ["  launch spec:"] + [f"    {line}" for line in spec_yaml(plan["spec"]).splitlines()]
        for file, name in ([plan["legacy"]] if plan.get("legacy") else []) + list(plan.get("legacy_others") or []):
            lines.append(f"  remove legacy {name} in {file}")
        if plan.get("xfail_keys"):
            lines.append(f"  remove xfail entries {', '.join(plan['xfail_keys'])} from common_mps.py")
        return lines
    dtypes = ", ".join(plan.get("dtypes", []))
    if plan.get("reused_kernel"):
        lines.append(f"  kernel {plan['reused_kernel']} in {plan.get('kernel_file')} (the tree's, reused) for {dtypes}")
    else:
        lines.append(f"  functor {plan.get('functor')} in {plan.get('kernel_file')} for {dtypes}")
    lines += _translation_lines(plan)
    lines.append(f"  host {plan.get('host_file')}: {plan.get('register_dispatch')}")
    if plan.get("legacy"):
        lines.append(f"  remove legacy {plan['legacy'][1]} in {plan['legacy'][0]}"
                     + (f" and {plan['legacy_include']}" if plan.get("legacy_include") else ""))
    if plan.get("xfail_keys"):
        lines.append(f"  remove xfail entries {', '.join(plan['xfail_keys'])} from common_mps.py")
    for file, macro in plan.get("legacy_macros") or ():
        lines.append(f"  remove legacy macro {macro} in {file}: the port removes its last invocation")
    lines += [f"  {line}" for line in (*(plan.get("placement") or ()), *(plan.get("reuse") or ()),
                                       *(plan.get("missing") or ()))]
    return lines


def _translation_lines(plan: dict) -> list[str]:
    """The translate porter's part of a plan: the CPU lambda beside the functor it became, or why
    the porter declined (Note [translate porter])."""
    lines: list[str] = []
    where = plan.get("cpu_lambda")
    if plan.get("functor_step") == "translate" and where:
        lines.append(f"  translated from the CPU scalar lambda at {where[0]}:")
        lines += [f"    | {line}" for line in where[1].splitlines()]
        lines.append("  into the functor:")
        lines += [f"    | {line}" for line in (plan.get("functor_source") or "").splitlines()]
    elif plan.get("translate_declined"):
        at = f" (CPU lambda at {where[0]})" if where else ""
        lines.append(f"  translate declined{at}: {plan['translate_declined']}")
    return lines


def describe_run_plan(state: Mapping) -> list[str]:
    """The run's plan in lines: a family port's reasons, then each member's plan (describe_plan)."""
    family = state.get("family") or {}
    if len(family.get("members") or ()) < 2:  # one op's port (a family of one)
        return describe_plan(state.get("plan", {}))
    lines = [f"family port of {', '.join(family['ops'])} in one change"]
    lines += [f"  together because {r}" for r in family.get("reasons") or ()]
    for member in family["members"]:
        lines += describe_plan(member)
    return lines


def spec_yaml(spec: dict) -> str:
    """A launch spec as the YAML a reviewer reads (field order as written)."""
    import yaml

    return yaml.safe_dump(spec, sort_keys=False, default_flow_style=None, width=100)


def commit_evidence(state: Mapping) -> dict[str, str]:
    """The evidence lines of the commit body: what changed, then the verdicts in numbers."""
    plan = state.get("plan", {})
    dtypes = ", ".join(plan.get("dtypes") or ())
    host = (plan.get("register_dispatch") or "").rstrip(";") or ((plan.get("spec") or {}).get("host") or {}).get("function")
    lines = {"Kernel": f"{plan.get('functor') or plan.get('kernel_name')} in {plan.get('kernel_file')} for {dtypes}",
             "Host": f"{host} in {plan.get('host_file')}",
             "Registry": f"{len(plan.get('rows') or ())} dispatch line(s) changed in native_functions.yaml"}
    removed = [f"{plan['legacy'][1]} ({plan['legacy'][0]})"] if plan.get("legacy") else []
    removed += [f"xfail {key}" for key in plan.get("xfail_keys") or ()]
    if removed:
        lines["Removed"] = ", ".join(removed)
    for line in verdict_lines(state):
        name, _, text = line.partition(": ")
        lines[name.capitalize()] = text
    lines["Attempts"] = str(state.get("attempts", 0))
    lines["Model"] = str(state["options"].get("model", "recipe"))
    return lines


def verdict_lines(state: Mapping) -> list[str]:
    """One line per verdict with its numbers: `check: passed`, `test: partial (3 skipped); ... opinfo 88/88 ...`.

    A conformance report's status leads (a skipped call makes it "partial", never "passed")."""
    out = []
    for name, verdict in state.get("verdicts", {}).items():
        report = verdict.get("report") or {}
        dtypes = report.get("dtypes") or []
        text = "passed" if verdict.get("ok") else (
            f"failed ({verdict.get('failures')} failure(s)): {verdict.get('first')}")
        status = report.get("status")
        if verdict.get("ok") and status and status != "pass":
            skipped = sum(int(d.get("skipped", 0)) for d in dtypes)
            text = f"{status} ({skipped} skipped: {report.get('reason')})" if skipped else \
                f"{status} ({report.get('reason')})" if report.get("reason") else str(status)
            if status in ("partial", "no-host-model"):  # Note [not judged] in checks.report
                text = f"not judged: {text}; verify on macOS"
        if dtypes:
            worst = max((d.get("worst_error") or 0.0 for d in dtypes), default=0.0)
            text += (f"; {report.get('backend', verdict.get('executor'))} conformance on {len(dtypes)} dtype(s): "
                     f"{counts_text(dtypes)}, worst error {worst:g}")
            scoped = report.get("out_of_scope", report.get("warnings"))  # "warnings" in older records
            if scoped:
                text += (f"; {scoped} case(s) out of scope by an OpInfo skip/xfail on a non-CPU device "
                         f"(see evidence.json)")
            if report.get("reason") and status == "pass":  # what was left out of a passing run
                text += f"; notes: {report['reason']}"
        elif verdict.get("executor"):
            text += f" ({verdict['executor']}, {verdict.get('seconds', 0)} s)"
        out.append(f"{name}: {text}")
    return out


def full_evidence(state: Mapping, commit: str | None = None) -> dict:
    """Everything a reviewer needs, as JSON data: plan, verdicts, attempts, usage, commit."""
    return {"run_id": state.get("run_id"), "op": state.get("op"), "plan": state.get("plan", {}),
            "family": state.get("family"),
            "verdicts": state.get("verdicts", {}), "attempts": state.get("attempts", 0),
            "usage": state.get("usage", {}), "model": state.get("options", {}).get("model"),
            "commit": commit, "feedback": state.get("feedback"), "failures": state.get("failures", [])}
