"""What conversation tools reach beyond the session: the store, the turn's trigger, and the people watching.

Every call an Agent makes carries one (a magic call outside a turn too, with no trigger message), so
read-session or list-sessions work from a cell exactly as they do inside an agent turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engine.host import ToolRequests
    from ..sessions.store import SessionStore

# Events for whoever shows the conversation (the notebook's turn view); called on the runtime loop:
#   {"type": "respond", "sessionId", "messageId", "content", "attachments": [sandbox paths], "final"}
#   {"type": "react", "sessionId", "messageId", "emoji"}
#   {"type": "announce", "sessionId", "content", "jobId"}   (a scheduled job's result)
EventSink = Callable[[dict], None]


def no_events(event: dict) -> None:
    """The default: nobody is watching."""


@dataclass
class Conversation:
    store: SessionStore
    trigger_message_id: str | None = None  # the user message that started this turn; react's default target
    events: EventSink = no_events
    host: ToolRequests | None = field(default=None, repr=False)  # the agent, for respond elsewhere, invoke, schedule
