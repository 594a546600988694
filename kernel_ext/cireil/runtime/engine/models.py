"""Which models a provider offers, and their context windows: `availableModels` and the provider's model list.

upstream-formats §2.2–2.6: `availableModels = "analyze"` (the default) means "ask the provider":
`GET {apiBase}/models` with the first API key, customHeaders appended one line per element; the
original also takes a model's context window from that list when its model table has no
`contextWindow` (for `openai` and `anthropic`; `openai-codex` has no list). One lookup per provider
per load (the catalog lives with the engine); a failure is remembered too, with a message saying what
the endpoint answered, so turns are not slowed by asking again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..base.jsonbound import loads as bounded_loads  # a depth bomb from a provider is a ValueError
from ..base.secrets import mask
from ..config.engine_config import MissingApiKey, ProviderConfig

LOOKUP_TIMEOUT_S = 15.0
MAX_LIST_BYTES = 16 * 2**20  # decoded; OpenRouter's list of every model is about 1 MB


@dataclass(frozen=True)
class ModelInfo:
    id: str
    context_window: int | None = None


@dataclass
class ModelList:
    provider: str
    source: str  # "config" (availableModels is a list) | "analyze" (asked the provider)
    models: list[ModelInfo] = field(default_factory=list)
    error: str | None = None  # why the provider's list is unavailable

    def window_of(self, model: str) -> int | None:
        return next((m.context_window for m in self.models if m.id == model), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "source": self.source,
            "models": [{"id": m.id, "contextWindow": m.context_window} for m in self.models],
            "error": self.error,
        }


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _window(entry: dict, kind: str) -> int | None:
    """As the original reads it: Anthropic's max_input_tokens; else context_length, then OpenRouter's
    top_provider.context_length, then max_input_tokens."""
    if kind == "anthropic":
        return _positive(entry.get("max_input_tokens"))
    top = entry.get("top_provider") if isinstance(entry.get("top_provider"), dict) else {}
    for value in (entry.get("context_length"), top.get("context_length"), entry.get("max_input_tokens")):
        if _positive(value):
            return value
    return None


def parse_model_list(data: Any, kind: str = "openai") -> list[ModelInfo]:
    """`{"data": [{"id", ...}]}` (OpenAI, OpenRouter, Anthropic); anything else is an error."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError("the answer has no list of models ('data')")
    out = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"]:
            out.append(ModelInfo(entry["id"], _window(entry, kind)))
    return out


def _headers(provider: ProviderConfig) -> list[tuple[str, str]]:
    key = provider.api_keys[0].resolve() if provider.api_keys else ""
    headers = [("Authorization", f"Bearer {key}")]
    if provider.kind == "anthropic":
        from .anthropic import BETA, VERSION

        headers += [("anthropic-version", VERSION), ("anthropic-beta", BETA)]
    overridden = {name.lower() for name in provider.custom_headers}
    headers = [(n, v) for n, v in headers if n.lower() not in overridden]
    for name, value in provider.custom_headers.items():
        headers += [(name, v) for v in value] if isinstance(value, list) else [(name, value)]
    return headers


async def fetch_models(provider: ProviderConfig) -> ModelList:
    """Ask the provider; never raises for what the endpoint does (the error is in the result, secrets masked:
    it quotes the URL and the server's words, which may echo the key)."""
    result = await _ask_models(provider)
    if result.error:
        result.error = mask(result.error)
    return result


async def _ask_models(provider: ProviderConfig) -> ModelList:
    import httpx

    from .netbackend import fast_transport

    result = ModelList(provider.name, "analyze")
    if provider.kind == "openai-codex":
        result.error = "openai-codex has no model list (the original normalizes names to the Codex list)"
        return result
    url = provider.api_base.rstrip("/") + "/models"
    try:
        headers = _headers(provider)
    except MissingApiKey as exc:
        result.error = str(exc)
        return result
    from .bodyread import ACCEPT_ENCODING, BadEncoding, read_excerpt

    host = urlsplit(provider.api_base).hostname or ""
    try:
        async with (
            asyncio.timeout(LOOKUP_TIMEOUT_S * 2),  # a server dripping bytes still ends
            httpx.AsyncClient(
                timeout=LOOKUP_TIMEOUT_S,
                follow_redirects=False,
                trust_env=host not in ("127.0.0.1", "localhost", "::1"),
                transport=fast_transport(),
            ) as client,
            client.stream("GET", url, headers=[*headers, ("Accept-Encoding", ACCEPT_ENCODING)]) as response,
        ):
            status = response.status_code
            # decoded in bounded pieces, never past MAX_LIST_BYTES (a gzip bomb stays small in memory)
            raw, cut = await read_excerpt(response, MAX_LIST_BYTES if status < 400 else 2048)
    except (httpx.TimeoutException, TimeoutError):
        result.error = f"no answer from {url} within {LOOKUP_TIMEOUT_S:.0f} s"
        return result
    except httpx.HTTPError as exc:
        result.error = f"could not reach {url}: {exc or type(exc).__name__}"
        return result
    except BadEncoding as exc:
        result.error = f"{url} answered with a body that cannot be decoded: {exc}"
        return result
    if status in (404, 405, 501):
        result.error = f"the provider has no model list: {url} answered HTTP {status}"
        return result
    if status >= 400:
        result.error = f"{url} answered HTTP {status}: {raw[:300].decode('utf-8', 'replace')}"
        return result
    if cut:
        result.error = f"{url} answered with a model list larger than {MAX_LIST_BYTES // 2**20} MB"
        return result
    try:
        result.models = parse_model_list(bounded_loads(raw), provider.kind)
    except ValueError as exc:
        result.error = f"{url} did not answer with a model list: {exc}"
    return result


class ModelCatalog:
    """The model lists of one load, one lookup per provider (a changed provider table asks again)."""

    def __init__(self) -> None:
        self._lists: dict[tuple, ModelList] = {}

    @staticmethod
    def _key(provider: ProviderConfig) -> tuple:
        return (provider.name, provider.kind, provider.api_base, tuple(map(repr, provider.api_keys)))

    def cached(self, provider: ProviderConfig) -> ModelList | None:
        if isinstance(provider.available_models, list):
            return self._configured(provider)
        return self._lists.get(self._key(provider))

    @staticmethod
    def _configured(provider: ProviderConfig) -> ModelList:
        models = [ModelInfo(m, provider.model_config(m).context_window) for m in provider.available_models]
        return ModelList(provider.name, "config", models)

    async def lookup(self, provider: ProviderConfig) -> ModelList:
        """availableModels as written, or the provider's own list (asked once per load)."""
        if isinstance(provider.available_models, list):
            return self._configured(provider)
        key = self._key(provider)
        if key not in self._lists:
            self._lists[key] = await fetch_models(provider)
        return self._lists[key]

    async def context_window(self, provider: ProviderConfig) -> ModelList | None:
        """The provider's list for the context-window fallback (never from a configured availableModels)."""
        if provider.kind not in ("openai", "anthropic"):
            return None
        key = self._key(provider)
        if key not in self._lists:
            self._lists[key] = await fetch_models(provider)
        return self._lists[key]
