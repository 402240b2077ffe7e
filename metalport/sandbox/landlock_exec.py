"""Landlock, the sandbox's second wall: restrict this process to some paths, then exec a program.

Run inside the bubblewrap namespace as `python -S -I landlock_exec.py --ro=P… --rw=P… -- ARGV`
(see Note [the shader sandbox]); it imports only the standard library. Reads (and execution) are
allowed beneath each `--ro` path and `/etc`, `/proc`, `/dev`; reads and writes beneath each
`--rw` path and the sandbox's own `/tmp` and `/dev/shm`. Everything else the kernel's Landlock
ABI can name is refused, for the program and every process it starts. With no Landlock in the
kernel it fails (exit 126) rather than run the program unrestricted: the caller only uses it
where `abi_version()` said the kernel has it.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same numbers on every architecture
_VERSION_FLAG = 1  # LANDLOCK_CREATE_RULESET_VERSION
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_MAKE_AND_REMOVE = sum(1 << bit for bit in range(4, 13))  # remove dir/file, make char/dir/reg/…/sym
REFER, TRUNCATE = 1 << 13, 1 << 14
_FILE_ACCESS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE  # what a rule on a file (not a dir) may hold


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 without Landlock (or where the syscall is refused)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_VERSION_FLAG))
    return max(0, int(version))


def _handled(abi: int) -> int:
    """Every filesystem access this ABI can restrict."""
    access = EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | _MAKE_AND_REMOVE
    if abi >= 2:
        access |= REFER
    if abi >= 3:
        access |= TRUNCATE
    return access


def restrict(read_only: list[str], read_write: list[str]) -> None:
    """Restrict this process (and what it starts) to reads beneath `read_only` and reads and
    writes beneath `read_write`; raises OSError when the kernel refuses."""
    abi = abi_version()
    if abi <= 0:
        raise OSError("this kernel has no Landlock")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    handled = _handled(abi)
    attr = struct.pack("<Q", handled)
    ruleset = libc.syscall(ctypes.c_long(_CREATE_RULESET), ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    grants = [(p, EXECUTE | READ_FILE | READ_DIR) for p in read_only]
    grants += [(p, handled) for p in read_write]
    for path, access in grants:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # a path that is not there grants nothing
        try:
            allowed = access & handled
            if not os.path.isdir(path):
                allowed &= _FILE_ACCESS
            rule = struct.pack("<Qi", allowed, fd)
            if libc.syscall(ctypes.c_long(_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                            ctypes.c_char_p(rule), ctypes.c_uint32(0)) < 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
        finally:
            os.close(fd)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.syscall(ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(ruleset)


def main(args: list[str]) -> int:
    """Parse `--ro=`/`--rw=` up to `--`, restrict, exec the rest."""
    if "--" not in args:
        print("landlock_exec: usage: --ro=PATH… --rw=PATH… -- PROGRAM ARGS…", file=sys.stderr)
        return 2
    split = args.index("--")
    options, argv = args[:split], args[split + 1:]
    read_only = ["/etc", "/proc", "/dev", *[o[5:] for o in options if o.startswith("--ro=")]]
    read_write = ["/tmp", "/dev/shm", "/dev/null", *[o[5:] for o in options if o.startswith("--rw=")]]
    try:
        restrict(read_only, read_write)
    except OSError as err:
        print(f"landlock_exec: cannot restrict: {err}", file=sys.stderr)
        return 126
    try:
        if os.sep in argv[0]:
            os.execv(argv[0], argv)
        os.execvp(argv[0], argv)
    except OSError as err:
        print(f"landlock_exec: cannot run {argv[0]}: {err.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
