"""The one error hierarchy of metalport.

Every user-facing failure is a `MetalportError`: the CLI prints `str(err)` as one line and exits
with `err.exit_code` (2 for usage and input errors, 1 for a verdict or run that failed).
"""

from __future__ import annotations


class MetalportError(Exception):
    """Base error: a message, optionally the `file:line` it is about and what to do."""

    exit_code: int = 2

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

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


class UnknownRunError(PipelineError):
    """A run id that has no record or checkpoint: never silently started afresh."""


class RecipeError(MetalportError):
    """A deterministic recipe cannot apply: its anchor is missing or the op is not in the table."""


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
