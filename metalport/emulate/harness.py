"""Generate the C++ kernel table appended to the preprocessed shader: one small per-thread body
per kernel (the kernel inlines into it) and C entry points that ctypes loads.

Only the kernels listed are instantiated: the grid loop itself is one non-template function in
`mshim_runtime.cpp`, and threadgroup kernels go to EMU-TG's `mshim::run_threadgroups`.
"""

from __future__ import annotations

from collections.abc import Sequence

from metalport.emulate.kernels import KernelSpec
from metalport.emulate.preprocess import blank_threadgroup, finalize

HARNESS_FILE = "<metalport harness>"
_EXPORT = 'extern "C" __attribute__((visibility("default")))'
# ThreadIds members that are three coordinates (the rest are scalars).
_TRIPLES = frozenset({"thread_position_in_grid", "thread_position_in_threadgroup",
                      "threadgroup_position_in_grid", "threads_per_threadgroup", "threadgroups_per_grid",
                      "threads_per_grid", "dispatch_threads_per_threadgroup"})


def _c_string(text: str) -> str:
    """A C string literal for `text`."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _kernel_code(i: int, spec: KernelSpec) -> list[str]:
    """The signature typedef, parameter info and body function(s) of kernel `i`."""
    decls = ", ".join(blank_threadgroup(finalize(d)) for d in spec.param_decls)
    lines = [f"typedef void mshim_sig_{i}({decls});"]
    infos = ", ".join(f"{{mshim_h::elem_name<mshim_h::param_t<mshim_sig_{i}, {p}>>(), "
                      f"mshim_h::elem_size<mshim_h::param_t<mshim_sig_{i}, {p}>>()}}"
                      for p in range(len(spec.param_decls)))
    lines.append(f"static const mshim_h::ParamInfo mshim_params_{i}[] = {{{infos or '{nullptr, 0}'}}};")
    tg = spec.info.uses_threadgroup
    call_args = []
    for p, arg in enumerate(spec.info.args):
        ptype = f"mshim_h::param_t<mshim_sig_{i}, {p}>"
        if arg.attribute == "buffer":
            call_args.append(f"mshim_h::arg<{ptype}>(b[{arg.index}])")
        elif not tg and arg.attribute == "thread_position_in_grid":
            call_args.append(f"mshim_h::pos<{ptype}>(p)")
        elif not tg and arg.attribute == "threads_per_grid":
            call_args.append(f"mshim_h::pos<{ptype}>(g)")
        else:
            call_args.append(f"mshim_h::pos<{ptype}>(ids.{arg.attribute})")
    call = f"{spec.callee}({', '.join(call_args)});"
    if tg:
        lines.append(f"static void mshim_body_{i}(void* ctx, const mshim::ThreadIds& ids) "
                     f"{{ void** b = static_cast<void**>(ctx); (void)b; {call} }}")
    else:
        lines.append(f"static void mshim_body_{i}(void* ctx, const unsigned* p, const unsigned* g) "
                     f"{{ void** b = static_cast<void**>(ctx); (void)b; (void)p; (void)g; {call} }}")
    return lines


def generate_harness(specs: Sequence[KernelSpec]) -> str:
    """C++ source for the kernel table and the `mshim_*` C entry points of `specs`."""
    out = [f'# 1 "{HARNESS_FILE}"']
    for i, spec in enumerate(specs):
        out += _kernel_code(i, spec)
    n = len(specs)
    names = ", ".join(_c_string(s.info.host_name) for s in specs) or "nullptr"
    params = ", ".join(f"mshim_params_{i}" for i in range(n)) or "nullptr"
    counts = ", ".join(str(len(s.param_decls)) for s in specs) or "0"
    out += [
        f"static const char* const mshim_names[] = {{{names}}};",
        f"static const mshim_h::ParamInfo* const mshim_param_table[] = {{{params}}};",
        f"static const int mshim_param_counts[] = {{{counts}}};",
        f"{_EXPORT} int mshim_num_kernels() {{ return {n}; }}",
        f"{_EXPORT} const char* mshim_kernel_name(int k) {{ return mshim_names[k]; }}",
        f"{_EXPORT} int mshim_kernel_nparams(int k) {{ return mshim_param_counts[k]; }}",
        f"{_EXPORT} const char* mshim_param_type(int k, int p) {{ return mshim_param_table[k][p].type; }}",
        f"{_EXPORT} unsigned mshim_param_size(int k, int p) {{ return mshim_param_table[k][p].size; }}",
        f"{_EXPORT} int mshim_run(int k, void** bufs, const unsigned* threads, const unsigned* group, "
        "unsigned workers) {",
        "  (void)group;",
        "  if (k < 0 || k >= mshim_num_kernels()) return -1;",
        "  const unsigned long fp = mshim_rt_fp_enter();",
        "  switch (k) {",
    ]
    for i, spec in enumerate(specs):
        if spec.info.uses_threadgroup:
            out.append(f"    case {i}: mshim::run_threadgroups(threads, group, mshim_body_{i}, bufs, workers); "
                       "break;")
        else:
            out.append(f"    case {i}: mshim_rt_grid(threads, mshim_body_{i}, bufs, workers); break;")
    out += ["    default: break;", "  }", "  mshim_rt_fp_leave(fp);", "  return 0;", "}", ""]
    return "\n".join(out)
