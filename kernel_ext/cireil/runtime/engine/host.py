"""What the engine, a turn and the schedulers need of the agent they run for.

The Agent implements TurnHost; nothing under engine/ or jobs/ imports it, so a turn runs against
any host: a test hands the engine a small stand-in, as httpx tests hand a client a mock transport.
TurnHost extends `ToolRequests`, the narrower part a tool reaches through its Conversation, which lives
with the Conversation in toolkit/conversation.py, below the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..toolkit.conversation import Conversation, ToolRequests

if TYPE_CHECKING:
    from ..files.layout import AgentLayout
    from ..files.paths import SandboxPaths
    from ..sessions.conditions import Conditions, RuleContext
    from ..sessions.state import Session
    from ..sessions.store import SessionStore
    from ..toolkit.tool import Tool, ToolContext

EventSink = Callable[[dict], None]


class TurnHost(ToolRequests, Protocol):
    """What a turn needs: the agent's files, tools and their context, sessions and their store, a refresh."""

    store: SessionStore | None
    result_limit: int  # bytes of JSON one tool result may have in a turn (toolkit/resultcap.py)

    @property
    def layout(self) -> AgentLayout: ...

    @property
    def directory(self) -> Path: ...

    @property
    def slug(self) -> str: ...

    @property
    def conditions(self) -> Conditions: ...

    def refresh(self) -> list[str]:
        """Re-read changed configuration at the start of a turn; notices for it, ConfigError when broken."""

    def refresh_quietly(self) -> bool: ...

    def current_tools(self) -> dict[str, Tool]:
        """Every enabled tool, without re-reading anything."""

    def offered_tools(self, session: Session) -> dict[str, Tool]:
        """What a turn of `session` offers the model (its grant applied)."""

    def tool_context(self, session: Session, conversation: Conversation | None) -> ToolContext: ...

    def sandbox_paths(self, session: Session | None = None) -> SandboxPaths: ...

    def rule_context(self, session: Session | None = None) -> RuleContext: ...

    def session_for(self, session_id: str) -> Session:
        """The live session of that id, loaded or created."""

    def forget_session(self, session_id: str) -> None:
        """Drop the live copy (another process changed it): the next use reads it again."""

    def observe_turn(self, session_id: str, on_event: EventSink) -> EventSink:
        """The sink a turn reports to (the turn recorder taps it); `on_event` when nothing records."""
