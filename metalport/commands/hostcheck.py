"""`metalport hostcheck FILE.mm [--repo P]`: type-check an MPS host file off a Mac; errors print at
the file's lines and exit 1."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from metalport.commands._sandbox import add_sandbox_flag, apply_sandbox_flag


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `hostcheck` command."""
    parser = subparsers.add_parser(
        "hostcheck", help="type-check an MPS host file (.mm) against the ATen headers and SDK declarations",
        description="Compile a PyTorch MPS host file (Objective-C++) with -fsyntax-only and PyTorch's MPS build "
                    "flags against the checkout's headers, the MPS declarations torchgen makes from its "
                    "native_functions.yaml, the torch wheel's headers and metalport's SDK declaration shim. "
                    "Proves the file compiles against those; not against Apple's own SDK headers, nor that it "
                    "links or runs on a GPU.")
    parser.add_argument("file", type=Path, nargs="+", help="the .mm file(s)")
    parser.add_argument("--repo", type=Path, default=None,
                        help="the PyTorch checkout the files belong to (default: the tree holding aten/src above "
                             "the first file)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of diagnostics")
    add_sandbox_flag(parser)
    parser.set_defaults(func=run)


def _repo_for(file: Path, repo: Path | None) -> Path:
    """The checkout root: `repo`, else the nearest parent of `file` holding `aten/src/ATen`."""
    from metalport.errors import RepoError

    if repo is not None:
        root = repo.expanduser().resolve()
        if not (root / "aten/src/ATen").is_dir():
            raise RepoError("not a PyTorch checkout: missing aten/src/ATen", location=str(root),
                            hint="pass --repo at the checkout the .mm belongs to")
        return root
    for parent in file.resolve().parents:
        if (parent / "aten/src/ATen").is_dir():
            return parent
    raise RepoError("no PyTorch checkout above this file (no aten/src/ATen)", location=str(file),
                    hint="pass --repo at the checkout the .mm belongs to")


def run(args: argparse.Namespace) -> int:
    """Check each file; print diagnostics (or JSON); exit 1 when any file does not type-check."""
    from metalport.commands._console import SlowNotice
    from metalport.errors import UsageError
    from metalport.hostcheck import check_file
    from metalport.hostcheck.check import unrouted_kernels

    apply_sandbox_flag(args)
    results, roots = [], []
    for file in args.file:
        if file.suffix == ".metal":
            root = next((p for p in file.resolve().parents if (p / "aten/src/ATen").is_dir()), None)
            repo = f" --repo {args.repo or root}" if (args.repo or root) else ""
            raise UsageError("a Metal shader, not host code", location=str(file),
                             hint=f"check a shader with `metalport kernels {file}{repo}`; hostcheck takes .mm files")
        if file.is_dir():
            raise UsageError("is a directory, not a .mm file", location=str(file), hint="name the .mm files in it")
        if file.exists() and not file.is_file():
            raise UsageError("not a regular file (a device or a pipe)", location=str(file), hint="name a .mm file")
        if not file.is_file():
            raise UsageError("no such file", location=str(file), hint="name an existing .mm file")
        root = _repo_for(file, args.repo)
        roots.append(root)
        with SlowNotice(f"type-checking {file} (about 10 s the first time; cached after)", after_s=2.0):
            results.append(check_file(file, root))
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        for r, root in zip(results, roots):
            for d in r.diagnostics:
                if d.severity != "note":
                    print(d, file=sys.stderr)
            unrouted = unrouted_kernels(r, root)
            if unrouted:
                shown = ", ".join(unrouted[:4]) + (f" and {len(unrouted) - 4} more" if len(unrouted) > 4 else "")
                print(f"{r.file}: no row of {r.registry} routes to {len(unrouted)} kernel(s) the file implements "
                      f"with TORCH_IMPL_FUNC ({shown}): torchgen declares structured_<kernel> only for a kernel a "
                      "row names, so the file and the registry come from different PyTorch versions",
                      file=sys.stderr)
            state = "type-checks" if r.ok else f"does not type-check ({len(r.errors)} error(s))"
            cached = ", cached" if r.cached else ""
            print(f"{r.file}: {state} ({r.seconds:.1f} s{cached}; MPS declarations from {r.registry})")
    return 0 if all(r.ok for r in results) else 1
