"""What a model call takes and gives back, whatever the provider's wire protocol (one module, so that the
shared request loop in httpcall.py and each kind's module can import them without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.controls import terminal_safe
from ..base.errors import CireilError
from ..base.secrets import mask

MAX_COUNT = 2**53  # a usage count beyond this is no count (and would overflow sqlite's INTEGER when summed)


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
    notes: list[str] = field(default_factory=list)  # what the reply got wrong but was ignored (a turn's notices)


class ProviderError(CireilError):
    """The model call failed; the message says what happened (HTTP status and the server's message).

    `retryable` False: asking again cannot help (a login that cannot be refreshed), so the turn does not
    spend its generation retries on it."""

    retryable = True

    def __init__(self, message: str, *, status: int | None = None, server_message: str | None = None) -> None:
        # every provider error is made here: the URL's credentials and any configured key the server echoed
        # are masked before the text reaches a view, a recording or a log (base/secrets.py)
        super().__init__(mask(message))
        self.status = status
        self.server_message = mask(server_message) if server_message is not None else None
        self.request_body: dict = {}

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a cell: the one line that says what failed, not cireil's frames."""
        # a provider chose some of this text: a terminal or front end shows its control characters, never acts on them
        return [terminal_safe(f"{type(self).__name__}: {self}")]


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


class ProviderLimitExceeded(ProviderError):
    """The reply passed one of the [limits] of config/cireil.toml; the message names the setting. Asking
    again would most likely meet the same reply (and spend the same time or tokens), so it is not retried."""

    retryable = False


class ReplyTooLarge(Exception):
    """A reader's count of the reply's text, reasoning and arguments passed its budget (httpcall reports it)."""

    def __init__(self, spent: int) -> None:
        super().__init__(f"{spent} characters")
        self.spent = spent


class MalformedReply(Exception):
    """What the server sent has a shape no reply has (httpcall reports it as a ProviderError)."""


def clean_usage(raw: Any, _nested: bool = False) -> tuple[dict, str]:
    """The usage counts that are whole numbers from 0 to MAX_COUNT (one level of nested tables, such as
    prompt_tokens_details, kept the same way), and a short account of what was left out ("" for nothing)."""
    if raw is None:
        return {}, ""
    if not isinstance(raw, dict):
        return {}, f"usage {type(raw).__name__}"
    out: dict = {}
    dropped: list[str] = []
    for key, value in list(raw.items())[:64]:
        if not isinstance(key, str):
            continue
        if isinstance(value, dict) and not _nested:
            inner, why = clean_usage(value, True)
            if inner:
                out[key] = inner
            if why:
                dropped.append(f"{key[:40]}: ({why})")
        elif value is None:
            continue  # a count the server does not have
        elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
            out[key] = value
        elif isinstance(value, float) and value.is_integer() and 0 <= value <= MAX_COUNT:
            out[key] = int(value)  # 12.0 from a server that writes every number as a float is still a count
        else:
            dropped.append(f"{key[:40]}={_short(value)}")
    return out, ", ".join(dropped[:8])


def _short(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "(a number out of range)"  # repr of a huge int may refuse to be written at all
    text = repr(value[:40] if isinstance(value, str) else value if isinstance(value, int | float) else type(value))
    return text if len(text) <= 40 else text[:37] + "..."
