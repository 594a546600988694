"""What a model call takes and gives back, whatever the provider's wire protocol (one module, so that the
shared request loop in httpcall.py and each kind's module can import them without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass

from ..base.errors import CireilError


@dataclass
class ModelRequest:
    system: str  # the system prompt
    messages: list[dict]  # sessions/messages.py dicts, already shaped (user / assistant / toolResponse / system)
    tools: list[dict]  # [{"name", "description", "parameters": JSON Schema}]
    session_id: str  # sent as prompt_cache_key
    model: str
    tool_choice: str = "required"


@dataclass
class ModelReply:
    message: dict  # an assistant message: thinking parts + toolCall parts
    usage: dict  # prompt_tokens / completion_tokens / total_tokens as far as the server gave them ({} if none)
    finish_reason: str
    request_body: dict  # exactly what was POSTed last


class ProviderError(CireilError):
    """The model call failed; the message says what happened (HTTP status and the server's message).

    `retryable` False: asking again cannot help (a login that cannot be refreshed), so the turn does not
    spend its generation retries on it."""

    retryable = True

    def __init__(self, message: str, *, status: int | None = None, server_message: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.server_message = server_message
        self.request_body: dict = {}


class NoToolCalls(ProviderError):
    """The model answered without calling a tool. `.text` is its stray text, `.thinking` its reasoning."""

    def __init__(self, message: str, *, text: str, thinking: str, finish_reason: str, usage: dict) -> None:
        super().__init__(message)
        self.text = text
        self.thinking = thinking
        self.finish_reason = finish_reason
        self.usage = usage


class ContentFiltered(ProviderError):
    """The provider's content filter stopped the reply; retrying the same request would not help."""

    retryable = False
