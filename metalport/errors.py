"""The one error hierarchy of metalport.

Every user-facing failure is a `MetalportError`: the CLI prints `str(err)` as one line and exits
with `err.exit_code` (2 for usage and input errors and a bad environment, 1 for a verdict or run
that failed).

Note [faults name path, cause, fix]: a write that fails on a full disk, a read-only filesystem or
a missing permission is one `FilesystemError` made by `filesystem_error` (the one errno table):
`<path>: cannot write <what>: <cause>; <fix>; then <command>`.
"""

from __future__ import annotations

import errno
import os


class MetalportError(Exception):
    """Base error: a message, optionally the `file:line` it is about and what to do."""

    exit_code: int = 2

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def add_hint(self, text: str) -> MetalportError:
        """Append `text` to the hint (e.g. the command that continues afterwards); returns self."""
        self.hint = f"{self.hint}; {text}" if self.hint else text
        return self

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        return f"{text}; {self.hint}" if self.hint else text


class UsageError(MetalportError):
    """Bad command-line input."""


class RepoError(MetalportError):
    """The path is not a PyTorch checkout, or the repository is in an unusable state."""


class RegistryError(MetalportError):
    """native_functions.yaml is malformed, or an edit to it would be invalid."""


class UnknownOpError(RegistryError):
    """An op name that the registry does not hold."""


class EmulateError(MetalportError):
    """The Metal-on-CPU tier cannot compile or run something."""


class CompileError(EmulateError):
    """A shader failed to compile; `diagnostics` holds the structured messages."""

    exit_code = 1

    def __init__(self, message: str, *, diagnostics: tuple = (), location: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, location=location, hint=hint)
        self.diagnostics = tuple(diagnostics)


class SandboxError(MetalportError):
    """A worktree, path-guard or command-runner failure."""


class PipelineError(MetalportError):
    """A migration run cannot go on (unknown run id, already native, needs an LLM, ...)."""


class RunLocked(PipelineError):
    """A process on this machine (or an attempt still unwinding in this one) holds the run's lock."""


class UnknownRunError(PipelineError):
    """A run id that has no record or checkpoint: never silently started afresh."""


class RecipeError(MetalportError):
    """A deterministic recipe cannot apply: its anchor is missing or the op is not in the table."""


class SpecError(RecipeError):
    """A launch spec (metalport/port/spec/model.py) is malformed, disagrees with the op's schema, or its
    launch would be wrong (threadgroup over the limit, grid larger than the data, a kernel writing
    outside its output); the message names the spec field."""


class AgentError(MetalportError):
    """The LLM endpoint or the model's behaviour ended a run (non-retryable error, loop bound)."""

    exit_code = 1


class BudgetExhausted(AgentError):
    """A run's budget (calls, tokens, cost, wall time) ran out; `usage` holds the evidence."""

    def __init__(self, message: str, *, usage: dict | None = None, location: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, location=location, hint=hint)
        self.usage = dict(usage or {})


class PublishError(MetalportError):
    """Committing, bundling, pushing or opening a PR failed, or would go somewhere forbidden."""


class SweepError(MetalportError):
    """A backlog sweep or a review cannot go on (bad options, a run not awaiting review, ...)."""


class SweepBusy(SweepError):
    """Another sweep holds the repository's sweep lock; exit 3 so schedulers can tell it apart."""

    exit_code = 3


class UnknownKernelError(EmulateError):
    """A kernel name that the compiled shader library does not export."""


class KernelArgumentError(EmulateError):
    """Arguments that do not fit a kernel: count, dtype, size, or a grid larger than the data."""


class KernelCrash(EmulateError):
    """A kernel killed its worker process (SIGFPE, SIGSEGV, …) or ran past its time limit."""

    exit_code = 1


class FilesystemError(MetalportError):
    """A place metalport writes is full, read-only or not writable: the environment needs fixing (exit 2)."""


# errno -> (cause, fix): the one table of filesystem faults. Note [faults name path, cause, fix]
_FAULTS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("disk full", "free space on that filesystem"),
    errno.EDQUOT: ("disk quota exceeded", "free space or raise the quota"),
    errno.EROFS: ("read-only filesystem", "remount it read-write"),
    errno.EACCES: ("permission denied", "make it writable by the user running metalport"),
    errno.EPERM: ("operation not permitted", "make it writable by the user running metalport"),
}
# The same causes as git and SQLite word them on stderr (they report no errno).
_FAULT_TEXTS: tuple[tuple[str, int], ...] = (
    ("no space left on device", errno.ENOSPC), ("disk quota exceeded", errno.EDQUOT),
    ("database or disk is full", errno.ENOSPC), ("read-only file system", errno.EROFS),
    ("readonly database", errno.EROFS), ("permission denied", errno.EACCES))


def fault_errno(text: str) -> int | None:
    """The errno a tool's error text names (`No space left on device`, ...), or None."""
    lowered = text.lower()
    return next((number for words, number in _FAULT_TEXTS if words in lowered), None)


def filesystem_error(err: BaseException, *, what: str | None = None, path: object = None,
                     elsewhere: str | None = None, then: str | None = None) -> FilesystemError:
    """The one-line FilesystemError for `err` (an OSError, sqlite3.Error or git failure) on `what`.

    Names the path (`path`, else the OSError's filename), the cause by errno (disk full, read-only
    filesystem, permission denied; else the system's own words) and the fix; `then` is the command
    that continues afterwards (e.g. `metalport resume ID`); `elsewhere` offers another place to
    write (e.g. `set METALPORT_CACHE_DIR to a writable folder`).
    """
    where = path if path is not None else getattr(err, "filename", None)
    if isinstance(err, OSError) and err.errno:
        number: int | None = err.errno
    else:  # SQLite says "readonly database" for a read-only disk and a missing permission alike: look
        number = (probe_errno(str(where)) if where else None) or fault_errno(str(err))
    cause, fix = _FAULTS.get(number or 0, ("", "check that path"))
    if not cause:
        words = err.strerror if isinstance(err, OSError) and err.strerror else str(err).strip()
        cause = (words.splitlines()[-1] if words else type(err).__name__).strip().lower()
    message = f"cannot write {what}: {cause}" if what else cause
    if elsewhere:
        fix = f"{fix}, or {elsewhere}"
    hint = f"{fix}; then {then}" if then else fix
    return FilesystemError(message, location=str(where) if where else None, hint=hint)


def probe_errno(path: str) -> int | None:
    """The errno a write to `path` (or the folder that would hold it) meets: EROFS, EACCES, ENOSPC."""
    target = path if os.path.exists(path) else os.path.dirname(path) or "."
    try:
        stat = os.statvfs(target)
    except OSError:
        return None
    if stat.f_flag & os.ST_RDONLY:
        return errno.EROFS
    if not os.access(target, os.W_OK):
        return errno.EACCES
    return errno.ENOSPC if stat.f_bavail == 0 else None


def is_filesystem_fault(err: BaseException) -> bool:
    """True for an OSError on a path or with a fault's errno, or a git/SQLite error naming a fault.

    A closed pipe (EPIPE, no path) is not one: the CLI ends quietly on it."""
    if isinstance(err, OSError):
        return err.filename is not None or err.errno in _FAULTS
    return fault_errno(str(err)) is not None


class SourceEncodingError(MetalportError):
    """A source file is not UTF-8 (see `not_utf8`): fixing the file is the way on, not a retry."""


def not_utf8(err: UnicodeDecodeError, path: str | os.PathLike[str] | None = None) -> SourceEncodingError:
    """One line for bytes that are not UTF-8: the file (when known), line, column and the byte.

    Note [source bytes]: metalport reads sources as bytes and decodes them as strict UTF-8 (as
    PyTorch's own sources are); a byte that is not UTF-8 stops the command with this error. Text
    that passes through to the compiler keeps its bytes (`surrogateescape`), and what a compiler or
    worker prints is shown as UTF-8 with U+FFFD for a bad byte and control characters escaped."""
    data = err.object if isinstance(err.object, (bytes, bytearray)) else b""
    line = data.count(b"\n", 0, err.start) + 1
    column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
    byte = f"0x{data[err.start]:02X}" if err.start < len(data) else "a truncated sequence"
    where = f"{os.fspath(path)}:{line}:{column}" if path is not None else f"a source file, line {line}, column {column}"
    return SourceEncodingError(f"{where}: byte {byte} is not UTF-8 ({err.reason})",
                               hint="save the file as UTF-8; retrying or resuming cannot help until it is")


def read_source(path: str | os.PathLike[str]) -> str:
    """The file's bytes decoded as UTF-8 (Note [source bytes]); SourceEncodingError names the
    line and byte otherwise."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise not_utf8(err, path) from None
