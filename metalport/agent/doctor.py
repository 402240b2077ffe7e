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

    def lines(self) -> list[str]:
        """Human-readable lines (the key's value never appears)."""
        key = "set" if self.key_set else f"not set (export {self.key_env} before --model openai:...)"
        out = [f"endpoint {self.base_url}: {'reachable' if self.ok else 'unreachable'}",
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
        return EndpointReport(base, cap.api_key_env, bool(key), False, error=f"HTTP {err.status_code}")
    except (openai.APIConnectionError, openai.APITimeoutError) as err:
        return EndpointReport(base, cap.api_key_env, bool(key), False, error=type(err).__name__)
    return EndpointReport(base, cap.api_key_env, bool(key), True, models, cap.model in models, model=cap.model)
