"""The endpoint check of `metalport doctor`: list models, spend no tokens, never print the key; with
`--probe`, a few tiny requests that find what the endpoint honours (`probe_capabilities`)."""

from __future__ import annotations

from dataclasses import dataclass

from metalport.config import AgentConfig


@dataclass(frozen=True)
class EndpointReport:
    """What `doctor` says about the LLM endpoint."""

    base_url: str
    key_env: str
    key_set: bool
    ok: bool
    models: tuple[str, ...] = ()
    model_listed: bool = False  # the configured model is among `models`
    error: str = ""
    model: str = ""  # the configured model, if any
    reached: bool = False  # a server answered (maybe with an error status)

    def lines(self) -> list[str]:
        """Human-readable lines (the key's value never appears)."""
        key = "set" if self.key_set else f"not set (export {self.key_env} before --model openai:...)"
        state = "reachable" if self.ok else "reachable, but it failed the check" if self.reached else "unreachable"
        out = [f"endpoint {self.base_url}: {state}",
               f"API key ${self.key_env}: {key}"]
        if self.ok:
            out.append(f"models: {', '.join(self.models[:10]) or '(none)'}")
            if self.model:
                out.append(f"model {self.model}: {'listed' if self.model_listed else 'NOT listed by the endpoint'}")
        if self.error:
            out.append(f"error: {self.error}")
        return out


def check_endpoint(config: AgentConfig, timeout_s: float = 10.0) -> EndpointReport:
    """GET /v1/models on the configured endpoint (one request, no retries, no tokens spent)."""
    import openai

    from metalport.agent.openai_provider import LOCAL_KEY, is_loopback

    cap = config.provider
    key = cap.api_key(None)
    local = is_loopback(cap.resolved_base_url(None))
    client = openai.OpenAI(base_url=cap.resolved_base_url(None), api_key=key or (LOCAL_KEY if local else "unset"),
                           max_retries=0,
                           timeout=min(timeout_s, cap.timeout_s))
    base = str(client.base_url)
    try:
        models = tuple(sorted(m.id for m in client.models.list()))
    except openai.APIStatusError as err:
        return EndpointReport(base, cap.api_key_env, bool(key), False, error=_status_error(base, err.status_code),
                              reached=True)
    except openai.APITimeoutError:
        return EndpointReport(base, cap.api_key_env, bool(key), False, error=(
            f"no answer within {min(timeout_s, cap.timeout_s):g} s: the server is busy or a firewall drops the "
            "connection; check it answers `curl {base}models`".replace("{base}", base)))
    except openai.APIConnectionError as err:
        return EndpointReport(base, cap.api_key_env, bool(key), False, error=_connection_error(base, err))
    return EndpointReport(base, cap.api_key_env, bool(key), True, models, cap.model in models, model=cap.model)


def _status_error(base: str, status: int) -> str:
    """What an HTTP error status on GET /models means, and what to do."""
    if status == 404:
        return (f"HTTP 404 on GET {base}models: a server answers, but serves no model list there; an "
                "OpenAI-compatible base URL usually ends in /v1 (e.g. http://127.0.0.1:8080/v1)")
    if status in (401, 403):
        return f"HTTP {status}: the server refused the API key; check the key its operator gave you"
    return f"HTTP {status} on GET {base}models: the server answered with an error; see its log"


def _connection_error(base: str, err: Exception) -> str:
    """The cause of a failed connection (refused, unknown host, TLS), and what to do."""
    from urllib.parse import urlsplit

    chain, cause = [], err.__cause__ or err.__context__
    while cause is not None and len(chain) < 8:
        chain.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    text = " ".join(chain).lower()
    where = urlsplit(base).netloc or base
    if "refused" in text:
        return (f"connection refused: nothing listens on {where}; start the model server there, or point "
                "--base-url (or provider.base_url in metalport.yaml) at the one that runs")
    if "name or service not known" in text or "nodename nor servname" in text or "name resolution" in text \
            or "getaddrinfo" in text:
        return f"unknown host {urlsplit(base).hostname}: check the host name in --base-url"
    if "certificate" in text or "ssl" in text:
        return f"TLS failed with {where} ({chain[0] if chain else 'handshake'}): use http:// for a local server"
    first = chain[0].splitlines()[0] if chain and chain[0] else type(err).__name__
    return f"cannot connect to {where} ({first}); check the server runs and --base-url"
