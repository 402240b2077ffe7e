"""The typed `metalport.yaml` config for the agent: provider, prices, budgets, secret env names.

Flags override the file; with no file the provider honours `OPENAI_API_KEY` / `OPENAI_BASE_URL`.
Unknown keys are errors with `file:line`. Top-level sections owned by other parts of metalport
(`build`, `test`, `executor`, `remote`, `database`, `fleet`) are kept raw in `AgentConfig.other`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from metalport.budget_limits import BudgetLimits, Price
from metalport.errors import UsageError

CONFIG_NAME = "metalport.yaml"
STRUCTURED_OUTPUTS = ("json_schema", "json_object", "prompt")
_OTHER_SECTIONS = ("build", "test", "executor", "remote", "database", "fleet", "pr")


@dataclass(frozen=True)
class ProviderConfig:
    """How to reach an OpenAI-compatible chat-completions endpoint."""

    model: str = ""  # the model name sent to the endpoint
    base_url: str | None = None  # None: OPENAI_BASE_URL, else the openai default; must end in /v1
    api_key_env: str = "OPENAI_API_KEY"  # the variable holding the key; the key is never stored
    temperature: float = 0.0
    timeout_s: float = 120.0  # per request
    max_retries: int = 4  # our retries on 429, 5xx, timeouts and dropped connections
    backoff_s: float = 1.0  # first backoff; doubles per retry
    max_turns: int = 24  # model replies per tool loop
    max_reply_chars: int = 40_000  # a longer reply is refused back to the model
    max_reply_bytes: int = 2_000_000  # an HTTP reply body past this is refused unread; the run stops
    max_repeats: int = 3  # the same failing tool call this often ends the loop
    # How the server returns structured answers: "json_schema" (response_format with the schema),
    # "json_object" (JSON mode, our own validation) or "prompt" (no response_format; the prompt asks
    # for JSON and we validate). `metalport doctor` probes which one an endpoint honours.
    structured_output: str = "json_schema"
    # Whether the server keeps tools usable in a request that also carries a schema (OpenAI does;
    # llama.cpp, llama-cpp-python and transformers serve do not): when false, tool turns carry the
    # tools and only the closing answer request carries the schema.
    schema_with_tools: bool = False
    max_tokens: int = 2048  # per request, so a slow server cannot generate until the timeout
    stream: bool = False  # stream replies: a slow server shows a progress line and no read timeout hits mid-answer

    def __post_init__(self) -> None:
        if self.structured_output not in STRUCTURED_OUTPUTS:
            raise UsageError(f"provider.structured_output {self.structured_output!r} is not one of "
                             f"{', '.join(STRUCTURED_OUTPUTS)}", hint="run `metalport doctor` to see what the endpoint honours")
        if self.max_tokens < 1:
            raise UsageError("provider.max_tokens must be at least 1", hint="e.g. 2048")

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key from `api_key_env`, or None when unset or empty."""
        return (os.environ if environ is None else environ).get(self.api_key_env) or None

    def resolved_base_url(self, environ: Mapping[str, str] | None = None) -> str | None:
        """`base_url`, else OPENAI_BASE_URL, else None (the openai default)."""
        return self.base_url or (os.environ if environ is None else environ).get("OPENAI_BASE_URL") or None


@dataclass(frozen=True)
class ExecutorConfig:
    """Build and test commands of the executors (the `executor:` section)."""

    build: tuple[str, ...] = ()  # macOS build argv for every build; empty: setup.py develop, then ninja
    test: tuple[str, ...] = ()  # macOS test argv; "{op}" becomes the op name; empty: test_mps.py -k ...
    build_timeout_s: float = 7200.0  # per build command
    test_timeout_s: float = 1800.0  # per test command


@dataclass(frozen=True)
class AgentConfig:
    """The whole agent config."""

    provider: ProviderConfig = field(default_factory=ProviderConfig)
    prices: Mapping[str, Price] = field(default_factory=dict)  # model name -> price
    budget: BudgetLimits = field(default_factory=BudgetLimits)
    secret_env: tuple[str, ...] = ()  # extra env variables whose values are redacted everywhere
    other: Mapping[str, Any] = field(default_factory=dict)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)  # also kept raw in `other`

    def price(self) -> Price | None:
        """The price of the configured model, if the table has it."""
        return self.prices.get(self.provider.model)

    def with_flags(self, **flags: Any) -> AgentConfig:
        """A copy with provider fields overridden by non-None flags (e.g. model, base_url)."""
        known = {f.name for f in fields(ProviderConfig)}
        bad = sorted(set(flags) - known)
        if bad:
            raise UsageError(f"unknown provider option(s) {bad}", hint=f"use one of {sorted(known)}")
        return replace(self, provider=replace(self.provider, **{k: v for k, v in flags.items() if v is not None}))


def given_config(path: Path | None) -> Path | None:
    """`path` as given by `--config`: None stays None, a path that is not a file is a UsageError."""
    if path is None or path.is_file():
        return path
    what = "is a directory" if path.is_dir() else "does not exist"
    raise UsageError(f"--config {what}", location=str(path),
                     hint=f"pass an existing {CONFIG_NAME}, or leave --config out to use the repository's")


def load_config(path: Path | None) -> AgentConfig:
    """Parse `path` (None or missing: defaults). Raises UsageError with `file:line` on bad keys."""
    if path is None or not path.exists():
        return AgentConfig()
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise UsageError(f"invalid YAML: {getattr(err, 'problem', err)}", location=f"{path}{line}",
                         hint="fix the syntax") from None
    if node is None:
        return AgentConfig()
    top = _mapping(node, path, "the top level")
    _reject_unknown(top, ("provider", "prices", "budget", "secret_env", *_OTHER_SECTIONS), path, "top level")
    provider = _dataclass_from(ProviderConfig, top.get("provider"), path, "provider")
    budget = _dataclass_from(BudgetLimits, top.get("budget"), path, "budget")
    prices = {}
    if "prices" in top:
        for model, (key_node, value) in _mapping(top["prices"][1], path, "prices").items():
            prices[model] = _dataclass_from(Price, (key_node, value), path, f"prices.{model}", required=True)
    secret_env: tuple[str, ...] = ()
    if "secret_env" in top:
        value = yaml.safe_load(yaml.serialize(top["secret_env"][1]))
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise UsageError("secret_env must be a list of variable names",
                             location=_loc(path, top["secret_env"][1]), hint="e.g. [GITHUB_TOKEN]")
        secret_env = tuple(value)
    other = {k: yaml.safe_load(yaml.serialize(v[1])) for k, v in top.items() if k in _OTHER_SECTIONS}
    executor = _executor_from(top["executor"], path) if "executor" in top else ExecutorConfig()
    return AgentConfig(provider=provider, prices=prices, budget=budget, secret_env=secret_env, other=other,
                       executor=executor)


def _executor_from(entry: tuple[yaml.Node, yaml.Node], path: Path) -> ExecutorConfig:
    """The `executor:` section: `build`/`test` argv lists of strings, `*_timeout_s` numbers."""
    items = _mapping(entry[1], path, "executor")
    _reject_unknown(items, tuple(f.name for f in fields(ExecutorConfig)), path, "executor")
    values: dict[str, Any] = {}
    for key, (_, node) in items.items():
        value = yaml.safe_load(yaml.serialize(node))
        if key in ("build", "test"):
            if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
                raise UsageError(f"executor.{key} must be a non-empty list of strings (an argv)",
                                 location=_loc(path, node), hint='e.g. ["ninja", "-C", "build", "torch_cpu"]')
            values[key] = tuple(value)
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise UsageError(f"executor.{key} must be a positive number of seconds",
                                 location=_loc(path, node), hint="e.g. 3600")
            values[key] = float(value)
    return ExecutorConfig(**values)


def _loc(path: Path, node: yaml.Node) -> str:
    return f"{path}:{node.start_mark.line + 1}"


def _mapping(node: yaml.Node, path: Path, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        raise UsageError(f"{what} must be a mapping", location=_loc(path, node), hint="use `key: value` lines")
    return {str(k.value): (k, v) for k, v in node.value}


def _reject_unknown(items: dict, known: tuple[str, ...], path: Path, what: str) -> None:
    import difflib

    for key, (key_node, _) in items.items():
        if key not in known:
            near = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"known keys: {', '.join(known)}"
            raise UsageError(f"unknown key {key!r} in {what}", location=_loc(path, key_node), hint=hint)


def _dataclass_from(cls: type, entry: tuple[yaml.Node, yaml.Node] | None, path: Path, what: str,
                    required: bool = False) -> Any:
    if entry is None:
        return cls()
    items = _mapping(entry[1], path, what)
    known = {f.name: f for f in fields(cls)}
    _reject_unknown(items, tuple(known), path, what)
    values = {}
    for key, (_, value_node) in items.items():
        value = yaml.safe_load(yaml.serialize(value_node))
        want = known[key].type
        ok = (isinstance(value, bool) if want in ("bool", bool)
              else isinstance(value, (int, float)) and not isinstance(value, bool) if want in ("float", float)
              else isinstance(value, int) and not isinstance(value, bool) if want in ("int", int)
              else value is None or isinstance(value, str) if "None" in str(want)
              else isinstance(value, str))
        if not ok:
            raise UsageError(f"{what}.{key} must be a {want}", location=_loc(path, value_node),
                             hint="fix the value")
        values[key] = float(value) if want in ("float", float) else value
    if required:
        missing = sorted(set(known) - set(values))
        if missing:
            raise UsageError(f"{what} is missing {missing}", location=_loc(path, entry[0]), hint="add them")
    try:
        return cls(**values)
    except UsageError as err:
        raise UsageError(err.message, location=_loc(path, entry[0]), hint=err.hint) from None
