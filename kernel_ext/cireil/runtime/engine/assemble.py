"""Everything one model call sends, in order (reference §7): system prompt, visible history, the
opened-files message when files are open, and the metadata message last.

The parts stay separate on the result so that `%cireil prompt` can show each one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any, Protocol

from ..files.layout import AgentLayout
from ..files.paths import SandboxPaths
from ..sessions import messages as msgs
from ..sessions.state import Session
from .history import DEFAULT_MAX_TURNS, ShapedHistory, TokenCache, estimate_system, shape_history
from .opened_files import OpenedFilesContext, opened_files_context
from .prompt import (
    ContextUsage,
    SystemPrompt,
    build_system_prompt,
    context_usage,
    metadata_text,
    record_warning,
    should_warn,
)
from .timefmt import load_timezone

if TYPE_CHECKING:
    from ..sessions.conditions import Conditions, RuleContext


class ModelSettings(Protocol):
    """What assembly needs of config.engine_config's ModelConfig (kept structural so neither imports the other)."""

    context_window: int | None
    context_budget: float
    context_hard_budget: float
    max_images_per_request: int | None
    supports_vision: bool
    supports_video: bool


@dataclass
class _Defaults:
    context_window: int | None = None
    context_budget: float = 0.6
    context_hard_budget: float = 0.85
    max_images_per_request: int | None = None
    supports_vision: bool = True
    supports_video: bool = False


@dataclass
class Assembled:
    system: str
    messages: list[dict]  # history, then opened files (if any), then metadata; read-only (see history.py)
    estimate: int  # tokens of everything but the metadata message
    notes: list[str]  # files closed because they are gone; the caller queues them as a user message
    cursor: int  # the session's cursor after pruning; the caller stores it
    history: ShapedHistory
    opened_files: OpenedFilesContext
    metadata: str
    usage: ContextUsage
    prompt: SystemPrompt
    warned: bool = False  # the metadata carries the prune warning
    warnings: list[str] = field(default_factory=list)

    @property
    def parts(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "history": self.history.messages,
            "opened_files": self.opened_files.text,
            "metadata": self.metadata,
        }


def _cache(token_cache: TokenCache | dict | None) -> TokenCache:
    if isinstance(token_cache, TokenCache):
        return token_cache
    if isinstance(token_cache, dict):  # a plain dict the caller keeps: the cache lives inside it
        found = token_cache.get("tokens")
        if not isinstance(found, TokenCache):
            found = token_cache["tokens"] = TokenCache()
        return found
    return TokenCache()


def assemble(
    *,
    layout: AgentLayout,
    session: Session,
    paths: SandboxPaths,
    model_cfg: ModelSettings | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    token_cache: TokenCache | dict | None = None,
    close_missing: bool = True,
    now: datetime | None = None,
    tz: tzinfo | str | None = "config",
    turn_ended: bool = False,
    conditions: Conditions | None = None,
    rule_context: RuleContext | None = None,
    path_effects: Mapping[str, str] | None = None,
    result_limit: int | None = None,
) -> Assembled:
    """One model call's messages. With `close_missing` (a real call) vanished files are closed, a prune
    warning is recorded in session.meta and superseded reads are written into session.history (as the original
    saves them); without it (a preview) the session is left exactly as it was.

    `tz="config"` reads the runtime root's config/system.toml; pass a tzinfo (or None for local) to override.
    `result_limit` (the agent's) cuts stored tool results bigger than it, as new ones are cut.
    """
    model: ModelSettings = model_cfg or _Defaults()
    cache = _cache(token_cache)
    zone = load_timezone(layout.runtime_root) if tz == "config" else tz
    prompt = build_system_prompt(
        layout,
        session,
        supports_vision=model.supports_vision,
        supports_video=model.supports_video,
        conditions=conditions,
        rule_context=rule_context,
    )
    opened = opened_files_context(session, paths, close_missing=close_missing)
    opened_msg = msgs.user_message(opened.text, persistent=False) if opened.text else None
    fixed = estimate_system(prompt.text) + (cache.message_tokens(opened_msg) if opened_msg else 0)
    shaped = shape_history(
        session.history,
        cursor=session.cursor,
        summaries=session.summaries,
        supports_vision=model.supports_vision,
        supports_video=model.supports_video,
        max_images_per_request=model.max_images_per_request,
        context_window=model.context_window,
        context_budget=model.context_budget,
        context_hard_budget=model.context_hard_budget,
        max_turns=max_turns,
        fixed_tokens=fixed,
        drop_transient=turn_ended,
        cache=cache,
        path_effects=path_effects,
        result_limit=result_limit,
    )
    if close_missing:
        # the reads superseded on this call are saved, as the original saves its rewritten history: changed in
        # place, so that the store (which knows its messages by identity) writes them with the turn's next commit,
        # and Session.restore puts them back if the turn is rolled back
        for index, output in shaped.rewrites.items():
            message = session.history[index]
            cache.forget(message)
            session.rewrite_output(message, output)
    estimate = fixed + shaped.tokens
    usage = context_usage(estimate, model.context_window, model.context_budget, model.context_hard_budget)
    warn = should_warn(session, usage, shaped.cursor)
    if warn and close_missing:
        record_warning(session, shaped.cursor)
    metadata = metadata_text(usage, zone, now, warn=warn)
    messages = [*shaped.messages]
    if opened_msg is not None:
        messages.append(opened_msg)
    messages.append(msgs.user_message(metadata, persistent=False))
    cache.sweep()
    return Assembled(
        system=prompt.text,
        messages=messages,
        estimate=estimate,
        notes=list(opened.notes),
        cursor=shaped.cursor,
        history=shaped,
        opened_files=opened,
        metadata=metadata,
        usage=usage,
        prompt=prompt,
        warned=warn,
        warnings=list(prompt.warnings),
    )
